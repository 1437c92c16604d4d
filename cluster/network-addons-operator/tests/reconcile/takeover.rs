//! Objects the upstream operator (or someone else) left: taken over in place when they can be,
//! re-created when a field cannot change, deleted when not rendered, kept when not ours.

use serde_json::{json, Value};

use crate::harness::{daemon_set_path, harness, Harness, BRIDGE_DS, LINUX_BRIDGE, NS};
use network_addons_operator::labels::{self, UPSTREAM_MANAGED_BY_VALUE};
use network_addons_operator::spec::NetworkAddonsConfig;

const NAD_CRD: &str = "network-attachment-definitions.k8s.cni.cncf.io";

const UPSTREAM_GROUP_VERSION: &str = "networkaddonsoperator.network.kubevirt.io/v1";

/// Metadata as the upstream operator writes it: its labels and, with `owner`, that
/// NetworkAddonsConfig as the controlling owner.
fn upstream_meta(name: &str, owner: Option<&NetworkAddonsConfig>) -> Value {
    let owners: Vec<Value> = owner
        .map(|nac| {
            json!({"apiVersion": UPSTREAM_GROUP_VERSION, "kind": "NetworkAddonsConfig",
                   "name": "cluster", "uid": nac.metadata.uid.clone().unwrap(),
                   "controller": true, "blockOwnerDeletion": true})
        })
        .into_iter()
        .collect();
    json!({"name": name, "namespace": NS, "ownerReferences": owners,
           "labels": {labels::MANAGED_BY: UPSTREAM_MANAGED_BY_VALUE, labels::COMPONENT: "network",
                      labels::UPSTREAM_VERSION: "0.103.0"}})
}

/// A DaemonSet as the upstream operator leaves it, with an env var this operator does not
/// render.
fn upstream_daemon_set(name: &str, owner: Option<&NetworkAddonsConfig>) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": upstream_meta(name, owner),
           "spec": {"selector": {"matchLabels": {"name": name}},
                    "template": {"metadata": {"labels": {"name": name}},
                                 "spec": {"containers": [{"name": "cni-plugins", "image": "x",
                                          "env": [{"name": "UPSTREAM_ONLY", "value": "1"}]}]}}}})
}

/// The upstream operator's record of the fields it set, as the API server keeps it.
fn upstream_managed_fields() -> Value {
    json!([{"manager": "cluster-network-addons-operator", "operation": "Update",
            "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {"f:app.kubernetes.io/managed-by": {}}},
                         "f:spec": {"f:template": {"f:spec": {"f:containers": {
                             "k:{\"name\":\"cni-plugins\"}": {"f:env": {}}}}}}}}])
}

/// The merge patches that rewrote managedFields, with the resourceVersion they required.
fn fields_taken_over(h: &Harness, path: &str) -> Vec<(Value, Value)> {
    h.fake
        .requests()
        .iter()
        .filter(|s| s.method == "PATCH" && s.path == path && s.content_type.contains("merge-patch"))
        .map(|s| {
            (
                s.body["metadata"]["resourceVersion"].clone(),
                s.body["metadata"]["managedFields"].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn an_object_the_upstream_operator_created_is_taken_over_in_place_without_its_fields() {
    let h = harness();
    let nac = h.create("cluster", LINUX_BRIDGE).await;
    let mut upstream = upstream_daemon_set(BRIDGE_DS, Some(&nac));
    upstream["metadata"]["managedFields"] = upstream_managed_fields();
    h.fake.put("apps/v1", "daemonsets", upstream);
    let before = h.fake.daemonset(NS, BRIDGE_DS).unwrap()["metadata"].clone();
    h.reconcile().await.unwrap();

    let ds = h.fake.daemonset(NS, BRIDGE_DS).expect("kept");
    assert_eq!(ds["metadata"]["uid"], before["uid"]);
    assert!(h.fake.deletes().is_empty(), "{:?}", h.fake.deletes());
    assert_eq!(
        ds["metadata"]["labels"][labels::MANAGED_BY],
        labels::MANAGED_BY_VALUE
    );
    assert_eq!(ds["metadata"]["labels"][labels::COMPONENT], "linuxBridge");
    // The upstream operator's fields became ours, on the version read, before the apply. That
    // the apply then removes its extra env is the API server's doing, which this fake does not
    // model (its apply replaces the object): the cluster tier shows it (`changes::takeover`).
    let taken = fields_taken_over(&h, &daemon_set_path(BRIDGE_DS));
    assert_eq!(taken.len(), 1, "{taken:?}");
    assert_eq!(taken[0].0, before["resourceVersion"]);
    let managers: Vec<(&str, &str)> = taken[0]
        .1
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["manager"].as_str().unwrap_or_default(),
                e["operation"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(managers, [("network-addons-operator", "Apply")]);
    assert!(taken[0].1.to_string().contains("f:env"));
    assert_eq!(h.condition("Degraded").await.status, "False");
}

#[tokio::test]
async fn an_object_whose_selector_differs_is_deleted_and_created_again() {
    let h = harness();
    let nac = h.create("cluster", LINUX_BRIDGE).await;
    let mut upstream = upstream_daemon_set(BRIDGE_DS, Some(&nac));
    upstream["spec"]["selector"]["matchLabels"] = json!({"app": "upstream"});
    h.fake.put("apps/v1", "daemonsets", upstream);
    let old_uid = h.fake.daemonset(NS, BRIDGE_DS).unwrap()["metadata"]["uid"].clone();
    h.reconcile().await.unwrap();

    let ds = h.fake.daemonset(NS, BRIDGE_DS).expect("created again");
    assert_ne!(ds["metadata"]["uid"], old_uid);
    assert_eq!(
        h.fake.deletes(),
        [(daemon_set_path(BRIDGE_DS), "Background".to_string())]
    );
}

#[tokio::test]
async fn a_namespace_or_crd_the_upstream_operator_created_is_applied_never_deleted() {
    let h = harness();
    let upstream_labels = json!({labels::MANAGED_BY: UPSTREAM_MANAGED_BY_VALUE});
    h.fake.put(
        "v1",
        "namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"name": NS, "labels": upstream_labels}}),
    );
    h.fake.put(
        "apiextensions.k8s.io/v1",
        "customresourcedefinitions",
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": NAD_CRD, "labels": upstream_labels}}),
    );
    h.create("cluster", "multus: {}\n").await;
    h.reconcile().await.unwrap();
    h.reconcile().await.unwrap();

    assert!(h.fake.deletes().is_empty(), "{:?}", h.fake.deletes());
    let namespace = h.fake.get("v1", "namespaces", "", NS).unwrap();
    let crd = h
        .fake
        .get(
            "apiextensions.k8s.io/v1",
            "customresourcedefinitions",
            "",
            NAD_CRD,
        )
        .unwrap();
    for object in [namespace, crd] {
        assert_eq!(
            object["metadata"]["labels"][labels::MANAGED_BY],
            labels::MANAGED_BY_VALUE
        );
    }
}

#[tokio::test]
async fn an_object_already_ours_is_never_recreated() {
    let h = harness();
    h.create("cluster", LINUX_BRIDGE).await;
    let mut ours = upstream_daemon_set(BRIDGE_DS, None);
    ours["metadata"]["labels"][labels::MANAGED_BY] = json!(labels::MANAGED_BY_VALUE);
    h.fake.put("apps/v1", "daemonsets", ours);
    let uid = h.fake.daemonset(NS, BRIDGE_DS).unwrap()["metadata"]["uid"].clone();

    h.reconcile().await.unwrap();
    h.reconcile().await.unwrap();
    assert!(h.fake.deletes().is_empty(), "{:?}", h.fake.deletes());
    assert_eq!(
        h.fake.daemonset(NS, BRIDGE_DS).unwrap()["metadata"]["uid"],
        uid
    );
}

#[tokio::test]
async fn an_object_replaced_behind_the_operators_back_is_taken_over_again() {
    let h = harness();
    let nac = h.create("cluster", LINUX_BRIDGE).await;
    h.reconcile().await.unwrap();
    h.fake.remove("apps/v1", "daemonsets", NS, BRIDGE_DS);
    let mut upstream = upstream_daemon_set(BRIDGE_DS, Some(&nac));
    upstream["metadata"]["managedFields"] = upstream_managed_fields();
    h.fake.put("apps/v1", "daemonsets", upstream);
    let uid = h.fake.daemonset(NS, BRIDGE_DS).unwrap()["metadata"]["uid"].clone();

    h.reconcile().await.unwrap();
    let ds = h.fake.daemonset(NS, BRIDGE_DS).unwrap();
    assert_eq!(ds["metadata"]["uid"], uid);
    assert!(h.fake.deletes().is_empty(), "{:?}", h.fake.deletes());
    assert_eq!(fields_taken_over(&h, &daemon_set_path(BRIDGE_DS)).len(), 1);
}

#[tokio::test]
async fn objects_the_upstream_operator_left_are_deleted_when_not_rendered() {
    let h = harness();
    let nac = h.create("cluster", LINUX_BRIDGE).await;
    // upstream's separate marker DaemonSet
    h.fake.put(
        "apps/v1",
        "daemonsets",
        upstream_daemon_set("bridge-marker", Some(&nac)),
    );
    h.reconcile().await.unwrap();
    assert!(h.fake.daemonset(NS, "bridge-marker").is_none());
    assert!(h.fake.daemonset(NS, BRIDGE_DS).is_some());
    assert!(h.warnings().is_empty(), "{:?}", h.warnings());
}

#[tokio::test]
async fn the_upstream_metrics_service_is_taken_over_for_our_endpoint() {
    let h = harness();
    let nac = h.create("cluster", LINUX_BRIDGE).await;
    let metrics_name = "cluster-network-addons-operator-prometheus-metrics";
    let metrics = json!({"apiVersion": "v1", "kind": "Service",
                         "metadata": upstream_meta(metrics_name, Some(&nac)),
                         "spec": {"ports": [{"port": 8443, "protocol": "TCP"}]}});
    h.fake.put("v1", "services", metrics);
    let uid = h.fake.list("v1", "services")[0]["metadata"]["uid"].clone();

    h.reconcile().await.unwrap();
    let services = h.fake.list("v1", "services");
    assert_eq!(services.len(), 1);
    assert_eq!(
        services[0]["metadata"]["uid"], uid,
        "kept, not created again"
    );
    assert_eq!(services[0]["metadata"]["name"], metrics_name);
    assert_eq!(services[0]["spec"]["ports"][0]["port"], 8080);
    assert_eq!(
        services[0]["spec"]["selector"],
        json!({"prometheus.cnao.io": "true"})
    );
}

#[tokio::test]
async fn objects_of_the_upstream_operator_not_owned_by_the_config_are_kept() {
    let h = harness();
    h.create("cluster", LINUX_BRIDGE).await;
    h.fake.put(
        "apps/v1",
        "daemonsets",
        upstream_daemon_set("bridge-marker", None),
    );
    h.reconcile().await.unwrap();
    assert!(h.fake.daemonset(NS, "bridge-marker").is_some());
    assert!(h.fake.deletes().is_empty(), "{:?}", h.fake.deletes());
}
