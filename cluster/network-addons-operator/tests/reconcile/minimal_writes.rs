//! A reconcile writes only what differs: nothing when it finds everything as it left it, the
//! status alone when only a workload's status moved, and only the objects a spec change touches.

use kube::api::{Patch, PatchParams};
use serde_json::json;

use crate::harness::{daemon_set_path, started, writes, Harness, BRIDGE_DS, LINUX_BRIDGE, NS};
use network_addons_operator::desired::APPLIED_CONFIGMAP;
use network_addons_operator::labels;

#[tokio::test]
async fn objects_applied_before_are_not_read_again_before_the_next_apply() {
    let h = started(LINUX_BRIDGE).await;
    let reads = |h: &Harness| {
        h.fake
            .requests()
            .iter()
            .filter(|s| s.method == "GET" && s.path.contains("/clusterrole") && s.query.is_empty())
            .count()
    };
    // The bridge marker's ClusterRole and the metrics reader's, each with its binding.
    assert_eq!(
        reads(&h),
        4,
        "the ClusterRoles and their bindings, read once"
    );
    // New labels on the config change every object: each is applied again, without a read.
    h.configs()
        .patch(
            "cluster",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {labels::VERSION: "2.0.0"}}})),
        )
        .await
        .unwrap();
    h.fake.clear_requests();
    h.reconcile().await.unwrap();
    let applied = h
        .fake
        .requests()
        .iter()
        .filter(|s| s.method == "PATCH" && s.path.contains("/clusterrole"))
        .count();
    assert_eq!(
        applied, 4,
        "the ClusterRoles and their bindings, applied again"
    );
    assert_eq!(reads(&h), 0);
}

#[tokio::test]
async fn an_unchanged_status_is_not_written_again() {
    let h = started(LINUX_BRIDGE).await;
    h.set_ready(BRIDGE_DS);
    h.reconcile().await.unwrap();
    h.fake.clear_requests();
    h.advance(1);
    h.reconcile().await.unwrap();
    assert!(!h.fake.requests().iter().any(|s| s.is_status()));
}

#[tokio::test]
async fn a_reconcile_that_finds_everything_as_it_left_it_writes_nothing() {
    let h = started(LINUX_BRIDGE).await;
    h.set_ready(BRIDGE_DS);
    h.reconcile().await.unwrap();
    h.fake.clear_requests();
    h.advance(1);
    h.reconcile().await.unwrap();
    assert_eq!(writes(&h), Vec::<String>::new());
}

#[tokio::test]
async fn a_workloads_status_change_writes_only_the_status() {
    let h = started(LINUX_BRIDGE).await;
    h.fake.clear_requests();
    h.set_ready(BRIDGE_DS);
    h.reconcile().await.unwrap();
    assert_eq!(
        writes(&h),
        ["PATCH /apis/networkaddonsoperator.network.kubevirt.io/v1/networkaddonsconfigs/cluster/status"]
    );
    assert_eq!(h.condition("Available").await.status, "True");
}

#[tokio::test]
async fn a_spec_change_applies_only_the_objects_it_changes() {
    let h = started(LINUX_BRIDGE).await;
    h.set_ready(BRIDGE_DS);
    h.reconcile().await.unwrap();
    h.patch_spec(
        json!({"placementConfiguration": {"workloads": {"tolerations": [{"operator": "Exists"}]}}}),
    )
    .await;
    h.fake.clear_requests();
    h.reconcile().await.unwrap();
    let applied: Vec<String> = writes(&h)
        .into_iter()
        .filter(|w| !w.ends_with("/status"))
        .collect();
    assert_eq!(
        applied,
        [
            format!("PATCH {}", daemon_set_path(BRIDGE_DS)),
            format!("PATCH /api/v1/namespaces/{NS}/configmaps/{APPLIED_CONFIGMAP}"),
        ]
    );
}
