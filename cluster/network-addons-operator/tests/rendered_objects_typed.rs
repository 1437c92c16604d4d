#![allow(clippy::unwrap_used)]
//! Every object rendered for every example is a valid object of its Kubernetes type, with no
//! field the API server would drop: deserialised into the k8s-openapi type and serialised back,
//! it must be unchanged (an unknown or misspelt field disappears on the way and fails the
//! comparison). And the invariants the reconciler relies on: kinds listed in RENDERED_KINDS,
//! our labels on everything, selectors that match their pods and never carry the version,
//! images set and pulled with the spec's policy, no owner references.

use std::fs;
use std::path::Path;

use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use network_addons_operator::cluster::ClusterInfo;
use network_addons_operator::defaults::fill_defaults;
use network_addons_operator::labels;
use network_addons_operator::render::{render, Rendered, RENDERED_KINDS};
use network_addons_operator::settings::Settings;
use network_addons_operator::spec::{NetworkAddonsConfig, NetworkAddonsConfigSpec};

/// Each example's applied spec (defaults filled), by file stem.
fn applied_examples() -> Vec<(String, NetworkAddonsConfigSpec)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut out: Vec<(String, NetworkAddonsConfigSpec)> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .map(|p| {
            let cr: NetworkAddonsConfig =
                serde_saphyr::from_str(&fs::read_to_string(&p).unwrap()).unwrap();
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, fill_defaults(&cr.spec, None, [0x4a, 0xbe]))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(out.len() >= 13);
    out
}

/// Each example rendered where cert-manager and the Prometheus operator are, and the full one
/// on OpenShift too.
fn rendered_examples() -> Vec<(String, NetworkAddonsConfigSpec, Vec<Rendered>)> {
    let settings = Settings::defaults();
    let openshift = ClusterInfo {
        openshift: true,
        ..ClusterInfo::default()
    };
    let mut out = Vec::new();
    for (name, applied) in applied_examples() {
        let objects = render(&applied, &settings, &ClusterInfo::WITH_CERT_MANAGER).unwrap();
        if name == "full" {
            let on_openshift = render(&applied, &settings, &openshift).unwrap();
            out.push((
                "full on OpenShift".to_string(),
                applied.clone(),
                on_openshift,
            ));
        }
        out.push((name, applied, objects));
    }
    out
}

fn roundtrip<T: DeserializeOwned + Serialize>(object: &Value) -> Result<(), String> {
    let typed: T = serde_json::from_value(object.clone()).map_err(|e| e.to_string())?;
    let back = serde_json::to_value(&typed).map_err(|e| e.to_string())?;
    if &back == object {
        Ok(())
    } else {
        Err(format!(
            "changed by a round trip through its type:\nrendered: {object}\ntyped:    {back}"
        ))
    }
}

/// The fields of cert-manager's v1 Issuer and Certificate the operator renders (cert-manager.io
/// API reference); an unknown field fails deserialisation.
mod cert_manager {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct Issuer {
        api_version: String,
        kind: String,
        metadata: ObjectMeta,
        spec: IssuerSpec,
    }

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct IssuerSpec {
        self_signed: SelfSigned,
    }

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct SelfSigned {}

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct Certificate {
        api_version: String,
        kind: String,
        metadata: ObjectMeta,
        spec: CertificateSpec,
    }

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct CertificateSpec {
        dns_names: Vec<String>,
        issuer_ref: IssuerRef,
        secret_name: String,
    }

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct IssuerRef {
        kind: String,
        name: String,
    }
}

/// The fields of the Prometheus operator's v1 ServiceMonitor and PrometheusRule the operator
/// renders (prometheus-operator API reference).
mod monitoring {
    use std::collections::BTreeMap;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct ServiceMonitor {
        api_version: String,
        kind: String,
        metadata: ObjectMeta,
        spec: ServiceMonitorSpec,
    }

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct ServiceMonitorSpec {
        selector: LabelSelector,
        namespace_selector: NamespaceSelector,
        endpoints: Vec<Endpoint>,
    }

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct NamespaceSelector {
        match_names: Vec<String>,
    }

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Endpoint {
        port: String,
        scheme: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bearer_token_file: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tls_config: Option<TlsConfig>,
    }

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct TlsConfig {
        insecure_skip_verify: bool,
    }

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct PrometheusRule {
        api_version: String,
        kind: String,
        metadata: ObjectMeta,
        spec: PrometheusRuleSpec,
    }

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct PrometheusRuleSpec {
        groups: Vec<RuleGroup>,
    }

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct RuleGroup {
        name: String,
        rules: Vec<Rule>,
    }

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Rule {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        record: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        alert: Option<String>,
        expr: String,
        #[serde(default, rename = "for", skip_serializing_if = "Option::is_none")]
        for_: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        labels: Option<BTreeMap<String, String>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<BTreeMap<String, String>>,
    }
}

/// The fields of OpenShift's security.openshift.io/v1 SecurityContextConstraints the operator
/// renders (openshift/api).
mod openshift {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct SecurityContextConstraints {
        api_version: String,
        kind: String,
        metadata: ObjectMeta,
        allow_privileged_container: bool,
        allow_host_dir_volume_plugin: bool,
        #[serde(rename = "allowHostIPC")]
        allow_host_ipc: bool,
        allow_host_network: bool,
        #[serde(rename = "allowHostPID")]
        allow_host_pid: bool,
        allow_host_ports: bool,
        read_only_root_filesystem: bool,
        run_as_user: Strategy,
        se_linux_context: Strategy,
        users: Vec<String>,
        volumes: Vec<String>,
    }

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Strategy {
        #[serde(rename = "type")]
        type_: String,
    }
}

fn check_typed(object: &Value) -> Result<(), String> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    match (api_version, kind) {
        ("v1", "Namespace") => roundtrip::<Namespace>(object),
        ("v1", "ServiceAccount") => roundtrip::<ServiceAccount>(object),
        ("v1", "ConfigMap") => roundtrip::<ConfigMap>(object),
        ("v1", "Service") => roundtrip::<Service>(object),
        ("networking.k8s.io/v1", "NetworkPolicy") => roundtrip::<NetworkPolicy>(object),
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => roundtrip::<ClusterRole>(object),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => {
            roundtrip::<ClusterRoleBinding>(object)
        }
        ("rbac.authorization.k8s.io/v1", "Role") => roundtrip::<Role>(object),
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => roundtrip::<RoleBinding>(object),
        ("apps/v1", "DaemonSet") => roundtrip::<DaemonSet>(object),
        ("apps/v1", "Deployment") => roundtrip::<Deployment>(object),
        ("policy/v1", "PodDisruptionBudget") => roundtrip::<PodDisruptionBudget>(object),
        ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration") => {
            roundtrip::<MutatingWebhookConfiguration>(object)
        }
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => {
            roundtrip::<CustomResourceDefinition>(object)
        }
        ("cert-manager.io/v1", "Issuer") => roundtrip::<cert_manager::Issuer>(object),
        ("cert-manager.io/v1", "Certificate") => roundtrip::<cert_manager::Certificate>(object),
        ("security.openshift.io/v1", "SecurityContextConstraints") => {
            roundtrip::<openshift::SecurityContextConstraints>(object)
        }
        ("monitoring.coreos.com/v1", "ServiceMonitor") => {
            roundtrip::<monitoring::ServiceMonitor>(object)
        }
        ("monitoring.coreos.com/v1", "PrometheusRule") => {
            roundtrip::<monitoring::PrometheusRule>(object)
        }
        _ => Err(format!(
            "{api_version} {kind}: no typed check for this kind; add one"
        )),
    }
}

fn describe(object: &Value) -> String {
    format!(
        "{} {}",
        object["kind"].as_str().unwrap_or("?"),
        object["metadata"]["name"].as_str().unwrap_or("?")
    )
}

#[test]
fn every_object_is_its_type_without_unknown_fields() {
    let mut failures = Vec::new();
    for (example, _, objects) in rendered_examples() {
        for r in &objects {
            if let Err(e) = check_typed(&r.object) {
                failures.push(format!("{example}: {}: {e}", describe(&r.object)));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_kind_is_listed_with_its_scope() {
    let settings = Settings::defaults();
    let mut seen = Vec::new();
    for (example, _, objects) in rendered_examples() {
        for r in &objects {
            let o = &r.object;
            let what = format!("{example}: {}", describe(o));
            let listed = RENDERED_KINDS
                .iter()
                .find(|k| o["apiVersion"] == k.api_version && o["kind"] == k.kind)
                .unwrap_or_else(|| panic!("{what}: kind not in RENDERED_KINDS"));
            let namespace = o["metadata"]["namespace"].as_str();
            if listed.namespaced {
                assert_eq!(namespace, Some(settings.namespace.as_str()), "{what}");
            } else {
                assert_eq!(namespace, None, "{what}: cluster-scoped with a namespace");
            }
            assert!(
                o["metadata"].get("ownerReferences").is_none(),
                "{what}: owner references are the reconciler's"
            );
            if !seen.contains(&listed.kind) {
                seen.push(listed.kind);
            }
        }
    }
    for k in RENDERED_KINDS {
        assert!(
            seen.contains(&k.kind),
            "{} is listed but no example renders it",
            k.kind
        );
    }
}

#[test]
fn every_object_carries_our_labels() {
    for (example, _, objects) in rendered_examples() {
        for r in &objects {
            let o = &r.object;
            let what = format!("{example}: {}", describe(o));
            let l = &o["metadata"]["labels"];
            assert_eq!(l[labels::MANAGED_BY], labels::MANAGED_BY_VALUE, "{what}");
            let component = r.component.map_or("network-addons", |c| c.key());
            assert_eq!(l[labels::COMPONENT], component, "{what}");
            assert_eq!(l[labels::PART_OF], labels::PART_OF_VALUE, "{what}");
            assert!(l[labels::VERSION].is_string(), "{what}");
            assert!(l[labels::UPSTREAM_VERSION].is_string(), "{what}");
        }
    }
}

fn workloads(objects: &[Rendered]) -> impl Iterator<Item = &Value> {
    objects
        .iter()
        .map(|r| &r.object)
        .filter(|o| o["kind"] == "DaemonSet" || o["kind"] == "Deployment")
}

#[test]
fn selectors_match_their_pods_and_never_the_version() {
    for (example, _, objects) in rendered_examples() {
        for o in workloads(&objects) {
            let what = format!("{example}: {}", describe(o));
            let selector = &o["spec"]["selector"];
            assert!(
                selector.get("matchExpressions").is_none(),
                "{what}: matchLabels only"
            );
            let match_labels = selector["matchLabels"].as_object().unwrap();
            assert!(!match_labels.is_empty(), "{what}");
            let pod_labels = &o["spec"]["template"]["metadata"]["labels"];
            for (key, value) in match_labels {
                assert_eq!(&pod_labels[key], value, "{what}: selector label {key}");
                assert!(
                    key != labels::VERSION && key != labels::UPSTREAM_VERSION,
                    "{what}: version in the selector"
                );
            }
            for key in [
                labels::MANAGED_BY,
                labels::COMPONENT,
                labels::PART_OF,
                labels::VERSION,
                labels::UPSTREAM_VERSION,
            ] {
                assert_eq!(
                    pod_labels[key], o["metadata"]["labels"][key],
                    "{what}: pod label {key}"
                );
            }
        }
    }
}

#[test]
fn every_container_has_an_image_and_the_spec_pull_policy() {
    for (example, applied, objects) in rendered_examples() {
        let policy = applied.image_pull_policy.clone().unwrap();
        for o in workloads(&objects) {
            let pod = &o["spec"]["template"]["spec"];
            let containers = ["initContainers", "containers"]
                .iter()
                .flat_map(|list| pod[*list].as_array().cloned().unwrap_or_default());
            for c in containers {
                let what = format!("{example}: {} container {}", describe(o), c["name"]);
                assert!(
                    c["image"].as_str().is_some_and(|i| !i.is_empty()),
                    "{what}: no image"
                );
                // The nmstate handler restarts from the node's image, whatever the policy.
                let expected = if c["name"] == "nmstate-handler" {
                    "IfNotPresent"
                } else {
                    policy.as_str()
                };
                assert_eq!(c["imagePullPolicy"], expected, "{what}");
            }
        }
    }
}

#[test]
fn a_misspelt_field_fails_the_round_trip() {
    let (_, _, objects) = rendered_examples()
        .into_iter()
        .find(|(name, _, _)| name == "linux-bridge")
        .unwrap();
    let mut ds = objects
        .iter()
        .find(|r| r.object["kind"] == "DaemonSet")
        .unwrap()
        .object
        .clone();
    assert!(check_typed(&ds).is_ok());
    ds["spec"]["template"]["spec"]["hostNetwrok"] = Value::Bool(true);
    assert!(check_typed(&ds).is_err());
    let mut unknown = ds.clone();
    unknown["kind"] = Value::String("DaemonSetz".to_string());
    assert!(check_typed(&unknown).is_err());
}

/// The API server refuses a probe whose port is a string of digits ("must contain at least one
/// letter"); a named port must be one its container declares.
#[test]
fn every_probe_port_is_a_number_or_a_port_its_container_names() {
    let mut failures = Vec::new();
    for (example, _, objects) in rendered_examples() {
        for r in &objects {
            let pod = &r.object["spec"]["template"]["spec"];
            for c in pod["containers"].as_array().into_iter().flatten() {
                let declared: Vec<&str> = c["ports"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p["name"].as_str())
                    .collect();
                for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
                    let port = &c[probe]["httpGet"]["port"];
                    if let Some(name) = port.as_str() {
                        if !declared.contains(&name) {
                            failures.push(format!(
                                "{example}: {} {}: {probe} port {name:?} is not a named port of it",
                                describe(&r.object),
                                c["name"]
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
