#![allow(clippy::unwrap_used)]
//! Everything the operator sends a Kubernetes 1.20 API server is something 1.20 accepts: every
//! object it applies (for every documented example, with the reconciler's owner references and
//! labels), the applied-configuration record, its events, and everything in deploy/. Checked
//! against 1.20's own OpenAPI document (tests/k8s_1_20/): no field 1.20 does not know, and every
//! key of every associative list set (1.20's server-side apply does not default any, so a
//! Service port without `protocol` is refused).

mod k8s_1_20;

use std::fs;
use std::path::{Path, PathBuf};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde_json::Value;

use network_addons_operator::cluster::ClusterInfo;
use network_addons_operator::defaults::fill_defaults;
use network_addons_operator::desired::objects_for;
use network_addons_operator::manifests::deploy_files;
use network_addons_operator::settings::Settings;
use network_addons_operator::spec::NetworkAddonsConfig;

fn examples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

fn owner() -> OwnerReference {
    OwnerReference {
        api_version: "networkaddonsoperator.network.kubevirt.io/v1".to_string(),
        kind: "NetworkAddonsConfig".to_string(),
        name: "cluster".to_string(),
        uid: "00000000-0000-0000-0000-000000000001".to_string(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// What a reconcile of the example in `path` applies, as it applies it.
fn applied_objects(path: &Path) -> Vec<Value> {
    let mut cr: NetworkAddonsConfig =
        serde_saphyr::from_str(&fs::read_to_string(path).unwrap()).unwrap();
    cr.metadata.uid = Some(owner().uid);
    let applied = fill_defaults(&cr.spec, None, [0x4a, 0xbe]);
    let (mut objects, record) = objects_for(
        &cr,
        &applied,
        &Settings::defaults(),
        // As the operator finds 1.20: PodDisruptionBudgets only in policy/v1beta1.
        &ClusterInfo {
            pdb_v1beta1: true,
            ..ClusterInfo::WITH_CERT_MANAGER
        },
        Some(&owner()),
    )
    .unwrap();
    objects.extend(record);
    objects
}

/// The seed's full example, the one the upstream README opens with.
fn full_example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/full.yaml")
}

/// Every `ports` list in `value`, with its path.
fn port_lists<'a>(value: &'a Value, path: &str, out: &mut Vec<(String, &'a Vec<Value>)>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let child = format!("{path}.{k}");
                if k == "ports" {
                    if let Value::Array(list) = v {
                        out.push((child.clone(), list));
                    }
                }
                port_lists(v, &child, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                port_lists(v, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn every_port_of_the_full_example_names_its_protocol() {
    let mut missing = Vec::new();
    let mut ports = 0;
    for object in applied_objects(&full_example()) {
        let mut lists = Vec::new();
        port_lists(&object, "", &mut lists);
        for (path, list) in lists {
            for (i, port) in list.iter().enumerate() {
                ports += 1;
                if port["protocol"].as_str().is_none_or(str::is_empty) {
                    missing.push(format!(
                        "{} {}: {path}[{i}] has no protocol",
                        object["kind"], object["metadata"]["name"]
                    ));
                }
            }
        }
    }
    assert!(
        ports >= 2,
        "the full example renders a Service and container ports"
    );
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn every_applied_object_of_every_example_is_one_kubernetes_1_20_accepts() {
    let mut problems = Vec::new();
    for path in examples() {
        // cert-manager's and the Prometheus operator's kinds are CRDs (checked by
        // rendered_objects_typed), not 1.20's API
        for object in applied_objects(&path).into_iter().filter(|o| {
            let api_version = o["apiVersion"].as_str().unwrap_or_default();
            !api_version.starts_with("cert-manager.io/")
                && !api_version.starts_with("monitoring.coreos.com/")
        }) {
            for p in k8s_1_20::problems(&object) {
                problems.push(format!("{}: {p}", path.display()));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_applied_object_sets_an_empty_string_the_server_would_drop() {
    // One did (`RUN_CERT_MANAGER` with `value: ""`): Kubernetes 1.20 rewrote the Deployment on
    // every apply, and the write woke the operator up to apply it again, once a second.
    let mut found = Vec::new();
    for path in examples() {
        for object in applied_objects(&path) {
            found.extend(k8s_1_20::empty_strings(&object));
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn everything_in_deploy_is_one_kubernetes_1_20_accepts_but_the_crds_cel_rules() {
    let mut problems = Vec::new();
    let mut cel_rules = 0;
    let mut kinds = Vec::new();
    for (name, text) in deploy_files(&Settings::defaults()).unwrap() {
        if name.ends_with(".cr.yaml") {
            continue; // a NetworkAddonsConfig: the CRD's schema is checked in crd_structural
        }
        for doc in text.split("\n---\n") {
            let object: Value = serde_saphyr::from_str(doc).unwrap();
            if object.is_null() {
                continue;
            }
            kinds.push(object["kind"].as_str().unwrap_or_default().to_string());
            for p in k8s_1_20::problems(&object) {
                // The CRD's CEL rules: 1.20 has none, and drops them when the CRD is applied
                // with `--validate=false`, as cluster/network-addons-operator/README.md says for servers before 1.27.
                if name == "network-addons-config.crd.yaml"
                    && p.contains("x-kubernetes-validations")
                {
                    cel_rules += 1;
                    continue;
                }
                problems.push(format!("{name}: {p}"));
            }
        }
    }
    for kind in network_addons_operator::manifests::DEPLOY_KINDS {
        assert!(kinds.iter().any(|k| k == kind), "no {kind} in deploy/");
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(cel_rules > 0, "the CRD carries no CEL rule");
}

#[test]
fn the_events_are_ones_kubernetes_1_20_accepts() {
    let mut nac = NetworkAddonsConfig::new("cluster", Default::default());
    nac.metadata.uid = Some("u".to_string());
    let event =
        network_addons_operator::events::example_event(&nac, "Warning", "Failed: x", "message");
    let mut object = serde_json::to_value(&event).unwrap();
    object["apiVersion"] = "v1".into();
    object["kind"] = "Event".into();
    assert_eq!(k8s_1_20::problems(&object), Vec::<String>::new());
}

#[test]
fn the_checker_finds_a_port_without_protocol_and_a_field_1_20_does_not_know() {
    let service = serde_json::json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 443}], "internalTrafficPolicy": "Cluster"}
    });
    let found = k8s_1_20::problems(&service);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].contains(".spec.internalTrafficPolicy: not a field"));
    assert!(found[1].contains(
        ".spec.ports[0]: element of an associative list without its key field \"protocol\""
    ));
}
