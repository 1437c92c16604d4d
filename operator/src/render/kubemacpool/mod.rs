//! kubeMacPool: upstream KubeMacPool hands out MAC addresses from the spec's range to the
//! secondary interfaces of VMs (every namespace unless labelled
//! `mutatevirtualmachines.kubemacpool.io=ignore`) and of pods (only namespaces labelled
//! `mutatepods.kubemacpool.io=allocate`), through a mutating webhook.
//!
//! Two Deployments run the same image: `kubemacpool-cert-manager` issues and rotates the
//! webhook's self-signed CA and certificate (intervals from `selfSignConfiguration`) into the
//! Secret `kubemacpool-service` and the webhook's `caBundle`; `kubemacpool-mac-controller-manager`
//! serves the webhook behind the Service `kubemacpool-service`. The names, selectors, webhook
//! rules and RBAC are upstream's. The webhook configuration comes last, after the Deployment
//! serving it, and leaves `caBundle` unset: the cert manager owns it.
//!
//! Differences from upstream's render:
//! - the range goes into the manager's environment directly (upstream: a ConfigMap read at
//!   start), so changing the range rolls the manager out instead of waiting for a restart;
//! - a ServiceAccount of its own (upstream binds the role to the namespace's `default` account,
//!   which every other pod there would share);
//! - no monitoring objects (ServiceMonitor, PrometheusRule, the metrics proxy sidecar): their
//!   CRDs and the Prometheus stack may be absent, and a missing CRD would fail the whole apply;
//! - `tlsSecurityProfile` goes to the webhook server as `--tls-min-version` and
//!   `--tls-cipher-suites` (Go's names), as upstream's current manifests pass it.

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ServiceReference,
    WebhookClientConfig,
};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStrategy};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EnvVar, HTTPGetAction, HTTPHeader, PodSpec, Probe,
    SecretVolumeSource, Service, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::common::{self, Ctx};
use super::network_policy;
use super::tls;
use super::Rendered;
use crate::defaults::default_self_sign;
use crate::error::{Error, Result};
use crate::spec::Component;

pub const SERVICE_ACCOUNT: &str = "kubemacpool";
pub const CLUSTER_ROLE: &str = "kubemacpool-manager-role";
pub const CLUSTER_ROLE_BINDING: &str = "kubemacpool-manager-rolebinding";
pub const SERVICE: &str = "kubemacpool-service";
pub const CERT_MANAGER: &str = "kubemacpool-cert-manager";
pub const MAC_CONTROLLER: &str = "kubemacpool-mac-controller-manager";
pub const WEBHOOK: &str = "kubemacpool-mutator";
/// Written by the cert manager, mounted by the MAC controller.
pub const TLS_SECRET: &str = "kubemacpool-service";
const WEBHOOK_PORT: i32 = 8000;
const CONTROLLER_SELECTOR: &[(&str, &str)] = &[
    ("control-plane", "mac-controller-manager"),
    ("controller-tools.k8s.io", "1.0"),
];
const CERT_MANAGER_SELECTOR: &[(&str, &str)] = &[
    ("control-plane", "cert-manager"),
    ("controller-tools.k8s.io", "1.0"),
];
const COMPONENT: Component = Component::KubeMacPool;

pub fn render(ctx: &Ctx) -> Result<Vec<Rendered>> {
    let c = Some(COMPONENT);
    Ok(vec![
        common::to_rendered(c, &common::service_account(ctx, SERVICE_ACCOUNT, COMPONENT))?,
        common::to_rendered(
            c,
            &common::cluster_role(ctx, CLUSTER_ROLE, COMPONENT, rules()),
        )?,
        common::to_rendered(
            c,
            &common::cluster_role_binding(
                ctx,
                CLUSTER_ROLE_BINDING,
                COMPONENT,
                CLUSTER_ROLE,
                SERVICE_ACCOUNT,
            ),
        )?,
        common::to_rendered(c, &service(ctx))?,
        common::to_rendered(c, &cert_manager(ctx))?,
        common::to_rendered(c, &mac_controller(ctx)?)?,
        common::to_rendered(c, &webhook(ctx))?,
        common::to_rendered(
            c,
            &network_policy::allow_ingress(
                ctx,
                COMPONENT,
                "kubemacpool-allow-ingress-to-webhook",
                CONTROLLER_SELECTOR,
                "TCP",
                IntOrString::Int(WEBHOOK_PORT),
            ),
        )?,
    ])
}

fn rules() -> Vec<k8s_openapi::api::rbac::v1::PolicyRule> {
    use common::rule;
    let all_but_deletecollection = [
        "get", "list", "watch", "create", "update", "patch", "delete",
    ];
    vec![
        rule(
            &["admissionregistration.k8s.io"],
            &[
                "mutatingwebhookconfigurations",
                "validatingwebhookconfigurations",
            ],
            &["*"],
        ),
        rule(&[""], &["secrets"], &all_but_deletecollection),
        rule(&[""], &["configmaps"], &["*"]),
        rule(&[""], &["events"], &["get", "list", "create", "update"]),
        rule(&[""], &["services"], &all_but_deletecollection),
        rule(
            &[""],
            &["pods", "pods/status"],
            &["get", "list", "watch", "create", "update", "patch"],
        ),
        rule(
            &["apiextensions.k8s.io"],
            &["customresourcedefinitions"],
            &["get", "list"],
        ),
        rule(
            &["apps"],
            &["deployments"],
            &["get", "create", "update", "patch", "list", "watch"],
        ),
        rule(
            &["kubevirt.io"],
            &["virtualmachines"],
            &["get", "list", "watch", "create", "update", "patch"],
        ),
        rule(
            &["kubevirt.io"],
            &["virtualmachineinstances"],
            &["get", "list", "watch"],
        ),
        rule(&[""], &["namespaces"], &["get", "list", "watch"]),
        rule(&["authentication.k8s.io"], &["tokenreviews"], &["create"]),
        rule(
            &["authorization.k8s.io"],
            &["subjectaccessreviews"],
            &["create"],
        ),
    ]
}

fn service(ctx: &Ctx) -> Service {
    let mut service = common::webhook_service(
        ctx,
        COMPONENT,
        SERVICE,
        &[("control-plane", "mac-controller-manager")],
        WEBHOOK_PORT,
    );
    if let Some(spec) = service.spec.as_mut() {
        // The webhook must be reachable while the manager is still syncing its pool.
        spec.publish_not_ready_addresses = Some(true);
    }
    service
}

/// A one-replica Deployment of a KubeMacPool manager, on the infra placement.
fn deployment(
    ctx: &Ctx,
    name: &str,
    selector_labels: &[(&str, &str)],
    description: &str,
    mut pod: PodSpec,
) -> Deployment {
    let mut labels = selector_labels.to_vec();
    labels.push(("app", "kubemacpool"));
    labels.push((network_policy::ACCESS_LABEL, ""));
    pod.service_account_name = Some(SERVICE_ACCOUNT.to_string());
    pod.priority_class_name = Some("system-cluster-critical".to_string());
    pod.restart_policy = Some("Always".to_string());
    pod.termination_grace_period_seconds = Some(5);
    common::place(&mut pod, &ctx.infra);
    Deployment {
        metadata: common::meta(ctx, name, Some(COMPONENT)),
        spec: Some(DeploymentSpec {
            replicas: Some(1),
            selector: common::selector(selector_labels),
            // Never two managers at once: they would hand out the same addresses.
            strategy: Some(DeploymentStrategy {
                type_: Some("Recreate".to_string()),
                rolling_update: None,
            }),
            template: common::pod_template(ctx, COMPONENT, &labels, description, pod),
            ..DeploymentSpec::default()
        }),
        status: None,
    }
}

fn label_env(name: &str, label: &str) -> EnvVar {
    common::field_env(name, &format!("metadata.labels['{label}']"))
}

fn cert_manager(ctx: &Ctx) -> Deployment {
    let intervals = ctx
        .spec
        .self_sign_configuration
        .clone()
        .unwrap_or_else(default_self_sign);
    let manager = Container {
        command: Some(common::strings(&["/manager"])),
        args: Some(common::strings(&["--v=production"])),
        env: Some(vec![
            common::value_env("RUN_CERT_MANAGER", ""),
            common::field_env("POD_NAMESPACE", "metadata.namespace"),
            common::field_env("POD_NAME", "metadata.name"),
            // It labels the Secret it writes with these.
            label_env("COMPONENT", crate::labels::COMPONENT),
            label_env("PART_OF", crate::labels::PART_OF),
            label_env("VERSION", crate::labels::VERSION),
            label_env("MANAGED_BY", crate::labels::MANAGED_BY),
            common::value_env("CA_ROTATE_INTERVAL", &intervals.ca_rotate_interval),
            common::value_env("CA_OVERLAP_INTERVAL", &intervals.ca_overlap_interval),
            common::value_env("CERT_ROTATE_INTERVAL", &intervals.cert_rotate_interval),
            common::value_env("CERT_OVERLAP_INTERVAL", &intervals.cert_overlap_interval),
        ]),
        resources: Some(common::requests("30m", "30Mi")),
        ..common::container(ctx, "manager", &ctx.settings.kubemacpool_image)
    };
    deployment(
        ctx,
        CERT_MANAGER,
        CERT_MANAGER_SELECTOR,
        "KubeMacPool's certificate manager rotates the webhook's CA and certificate",
        PodSpec {
            containers: vec![manager],
            ..PodSpec::default()
        },
    )
}

fn mac_controller(ctx: &Ctx) -> Result<Deployment> {
    let pool = ctx
        .spec
        .kube_mac_pool
        .as_ref()
        .filter(|p| !p.range_start.is_empty() && !p.range_end.is_empty())
        .ok_or_else(|| Error::other("kubeMacPool has no MAC range: fill the defaults first"))?;
    let manager = Container {
        command: Some(common::strings(&["/manager"])),
        args: Some(
            common::strings(&["--v=production", "--wait-time=300"])
                .into_iter()
                .chain(tls::go_server_flags(ctx.spec.tls_security_profile.as_ref()))
                .collect(),
        ),
        env: Some(vec![
            common::field_env("POD_NAMESPACE", "metadata.namespace"),
            common::field_env("POD_NAME", "metadata.name"),
            common::value_env("RANGE_START", &pool.range_start),
            common::value_env("RANGE_END", &pool.range_end),
            common::value_env("KUBEVIRT_CLIENT_GO_SCHEME_REGISTRATION_VERSION", "v1"),
        ]),
        ports: Some(vec![ContainerPort {
            container_port: WEBHOOK_PORT,
            name: Some("webhook-server".to_string()),
            protocol: Some("TCP".to_string()),
            ..ContainerPort::default()
        }]),
        readiness_probe: Some(Probe {
            http_get: Some(HTTPGetAction {
                http_headers: Some(vec![HTTPHeader {
                    name: "Content-Type".to_string(),
                    value: "application/json".to_string(),
                }]),
                path: Some("/readyz".to_string()),
                port: IntOrString::String("webhook-server".to_string()),
                scheme: Some("HTTPS".to_string()),
                host: None,
            }),
            initial_delay_seconds: Some(10),
            period_seconds: Some(10),
            ..Probe::default()
        }),
        resources: Some(common::requests("100m", "100Mi")),
        volume_mounts: Some(vec![VolumeMount {
            read_only: Some(true),
            ..common::mount("tls-key-pair", "/tmp/k8s-webhook-server/serving-certs/")
        }]),
        ..common::container(ctx, "manager", &ctx.settings.kubemacpool_image)
    };
    Ok(deployment(
        ctx,
        MAC_CONTROLLER,
        CONTROLLER_SELECTOR,
        "KubeMacPool allocates MAC addresses to the interfaces of pods and VMs",
        PodSpec {
            containers: vec![manager],
            volumes: Some(vec![Volume {
                name: "tls-key-pair".to_string(),
                secret: Some(SecretVolumeSource {
                    secret_name: Some(TLS_SECRET.to_string()),
                    ..SecretVolumeSource::default()
                }),
                ..Volume::default()
            }]),
            ..PodSpec::default()
        },
    ))
}

fn not_in(key: &str, values: &[&str]) -> LabelSelectorRequirement {
    LabelSelectorRequirement {
        key: key.to_string(),
        operator: "NotIn".to_string(),
        values: Some(common::strings(values)),
    }
}

/// Never the control plane's own namespaces (run levels 0 and 1), then the opt-in or opt-out
/// label of the resource.
fn namespace_selector(opt: LabelSelectorRequirement) -> LabelSelector {
    LabelSelector {
        match_expressions: Some(vec![
            not_in("runlevel", &["0", "1"]),
            not_in("openshift.io/run-level", &["0", "1"]),
            opt,
        ]),
        match_labels: None,
    }
}

fn hook(
    ctx: &Ctx,
    name: &str,
    path: &str,
    opt: LabelSelectorRequirement,
    rule: RuleWithOperations,
) -> MutatingWebhook {
    MutatingWebhook {
        name: name.to_string(),
        admission_review_versions: common::strings(&["v1", "v1beta1"]),
        client_config: WebhookClientConfig {
            service: Some(ServiceReference {
                name: SERVICE.to_string(),
                namespace: ctx.settings.namespace.clone(),
                path: Some(path.to_string()),
                port: None,
            }),
            ..WebhookClientConfig::default()
        },
        failure_policy: Some("Fail".to_string()),
        namespace_selector: Some(namespace_selector(opt)),
        rules: Some(vec![rule]),
        side_effects: "NoneOnDryRun".to_string(),
        ..MutatingWebhook::default()
    }
}

fn webhook(ctx: &Ctx) -> MutatingWebhookConfiguration {
    let pods = hook(
        ctx,
        "mutatepods.kubemacpool.io",
        "/mutate-pods",
        LabelSelectorRequirement {
            key: "mutatepods.kubemacpool.io".to_string(),
            operator: "In".to_string(),
            values: Some(common::strings(&["allocate"])),
        },
        RuleWithOperations {
            api_groups: Some(common::strings(&[""])),
            api_versions: Some(common::strings(&["v1"])),
            operations: Some(common::strings(&["CREATE"])),
            resources: Some(common::strings(&["pods"])),
            scope: None,
        },
    );
    let vms = hook(
        ctx,
        "mutatevirtualmachines.kubemacpool.io",
        "/mutate-virtualmachines",
        not_in("mutatevirtualmachines.kubemacpool.io", &["ignore"]),
        RuleWithOperations {
            api_groups: Some(common::strings(&["kubevirt.io"])),
            api_versions: Some(common::strings(&["v1"])),
            operations: Some(common::strings(&["CREATE", "UPDATE"])),
            resources: Some(common::strings(&["virtualmachines"])),
            scope: None,
        },
    );
    MutatingWebhookConfiguration {
        metadata: common::cluster_meta(ctx, WEBHOOK, Some(COMPONENT)),
        webhooks: Some(vec![pods, vms]),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::cluster::ClusterInfo;
    use crate::settings::Settings;
    use crate::spec::{KubeMacPool, NetworkAddonsConfigSpec, SelfSignConfiguration};
    use serde_json::Value;

    fn env(container: &Value) -> Vec<(String, String)> {
        container["env"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| {
                Some((
                    e["name"].as_str()?.to_string(),
                    e["value"].as_str()?.to_string(),
                ))
            })
            .collect()
    }

    fn find<'a>(out: &'a [Rendered], kind: &str, name: &str) -> &'a Value {
        &out.iter()
            .find(|r| r.object["kind"] == kind && r.object["metadata"]["name"] == name)
            .unwrap()
            .object
    }

    #[test]
    fn the_tls_profile_goes_to_the_webhook_server_only() {
        let settings = Settings::defaults();
        let applied = NetworkAddonsConfigSpec {
            kube_mac_pool: Some(KubeMacPool {
                range_start: "02:00:00:00:00:00".to_string(),
                range_end: "02:00:00:00:ff:ff".to_string(),
            }),
            tls_security_profile: Some(crate::spec::TlsSecurityProfile {
                profile_type: Some(crate::spec::TlsProfileType::Intermediate),
                ..Default::default()
            }),
            ..NetworkAddonsConfigSpec::default()
        };
        let out = render(&Ctx::new(&applied, &settings, &ClusterInfo::default())).unwrap();
        let args = |name: &str| {
            find(&out, "Deployment", name)["spec"]["template"]["spec"]["containers"][0]["args"]
                .to_string()
        };
        assert!(args(MAC_CONTROLLER).contains("\"--tls-min-version=VersionTLS12\""));
        assert!(args(MAC_CONTROLLER)
            .contains("--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,"));
        assert!(!args(CERT_MANAGER).contains("tls"));
    }

    #[test]
    fn range_and_intervals_come_from_the_spec() {
        let settings = Settings::defaults();
        let applied = NetworkAddonsConfigSpec {
            kube_mac_pool: Some(KubeMacPool {
                range_start: "02:00:00:00:00:10".to_string(),
                range_end: "02:00:00:00:00:ff".to_string(),
            }),
            self_sign_configuration: Some(SelfSignConfiguration {
                ca_rotate_interval: "168h".to_string(),
                ca_overlap_interval: "24h".to_string(),
                cert_rotate_interval: "24h".to_string(),
                cert_overlap_interval: "8h".to_string(),
            }),
            ..NetworkAddonsConfigSpec::default()
        };
        let out = render(&Ctx::new(&applied, &settings, &ClusterInfo::default())).unwrap();

        let controller = find(&out, "Deployment", MAC_CONTROLLER);
        let env_of = |d: &Value| env(&d["spec"]["template"]["spec"]["containers"][0]);
        let controller_env = env_of(controller);
        assert!(controller_env.contains(&("RANGE_START".into(), "02:00:00:00:00:10".into())));
        assert!(controller_env.contains(&("RANGE_END".into(), "02:00:00:00:00:ff".into())));

        let cert_env = env_of(find(&out, "Deployment", CERT_MANAGER));
        for (name, value) in [
            ("CA_ROTATE_INTERVAL", "168h"),
            ("CA_OVERLAP_INTERVAL", "24h"),
            ("CERT_ROTATE_INTERVAL", "24h"),
            ("CERT_OVERLAP_INTERVAL", "8h"),
        ] {
            assert!(cert_env.contains(&(name.into(), value.into())), "{name}");
        }
    }

    #[test]
    fn the_webhook_comes_after_the_deployment_serving_it() {
        let settings = Settings::defaults();
        let applied = NetworkAddonsConfigSpec {
            kube_mac_pool: Some(KubeMacPool {
                range_start: "02:00:00:00:00:00".to_string(),
                range_end: "02:00:00:ff:ff:ff".to_string(),
            }),
            ..NetworkAddonsConfigSpec::default()
        };
        let out = render(&Ctx::new(&applied, &settings, &ClusterInfo::default())).unwrap();
        let position = |kind: &str, name: &str| {
            out.iter()
                .position(|r| r.object["kind"] == kind && r.object["metadata"]["name"] == name)
                .unwrap()
        };
        assert!(
            position("MutatingWebhookConfiguration", WEBHOOK)
                > position("Deployment", MAC_CONTROLLER)
        );
        let hooks = &find(&out, "MutatingWebhookConfiguration", WEBHOOK)["webhooks"];
        assert_eq!(
            hooks[0]["clientConfig"]["service"]["namespace"],
            settings.namespace
        );
        assert_eq!(hooks[0]["failurePolicy"], "Fail");
        assert!(hooks[0]["clientConfig"].get("caBundle").is_none());
    }

    #[test]
    fn an_unfilled_range_is_an_error() {
        let settings = Settings::defaults();
        let applied = NetworkAddonsConfigSpec {
            kube_mac_pool: Some(KubeMacPool::default()),
            ..NetworkAddonsConfigSpec::default()
        };
        assert!(render(&Ctx::new(&applied, &settings, &ClusterInfo::default())).is_err());
    }
}
