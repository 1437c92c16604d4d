//! A failed apply or deletion: Degraded with its reason and a readable message, the record
//! left as it was so the next reconcile retries, and which deletions go on regardless.

use serde_json::json;

use crate::harness::{assert_contains, harness, started, BRIDGE_DS, LINUX_BRIDGE, NS, OVS_DS};
use network_addons_operator::desired::APPLIED_CONFIGMAP;
use network_addons_operator::spec::Condition;

#[tokio::test]
async fn a_failed_apply_is_degraded_with_a_warning() {
    let h = harness();
    h.create("cluster", LINUX_BRIDGE).await;
    h.fake
        .fail_next("PATCH", &format!("/daemonsets/{BRIDGE_DS}"), 500, 1);
    assert!(h.reconcile().await.is_err());
    let degraded = h
        .expect_condition("Degraded", "True", "FailedToApply")
        .await;
    assert_contains(&degraded.message, BRIDGE_DS);
    let progressing = h.expect_condition("Progressing", "False", "Failing").await;
    assert!(
        progressing.message.starts_with("Retrying: "),
        "{}",
        progressing.message
    );
    assert_eq!(h.warnings(), ["Failed: FailedToApply"]);
    assert!(h.fake.configmap(NS, APPLIED_CONFIGMAP).is_none());
    // one line a human reads: what was done, to which object, and the server's message
    assert_eq!(
        degraded.message,
        format!("apply DaemonSet {NS}/{BRIDGE_DS}: injected failure")
    );
    assert_eq!(
        progressing.message,
        format!("Retrying: apply DaemonSet {NS}/{BRIDGE_DS}: injected failure")
    );

    h.reconcile().await.unwrap();
    assert_eq!(h.condition("Degraded").await.status, "False");
}

#[tokio::test]
async fn a_failed_deletion_keeps_the_previous_record_so_it_is_retried() {
    let h = started("linuxBridge: {}\novs: {}\n").await;
    h.patch_spec(json!({"linuxBridge": null})).await;
    h.fake
        .fail_next("DELETE", &format!("/daemonsets/{BRIDGE_DS}"), 500, 1);

    assert!(h.reconcile().await.is_err());
    h.expect_condition("Degraded", "True", "FailedToDeleteObjects")
        .await;
    assert!(h.fake.daemonset(NS, BRIDGE_DS).is_some());
    assert!(
        h.applied().linux_bridge.is_some(),
        "record not moved past the failure"
    );

    h.reconcile().await.unwrap();
    assert!(h.fake.daemonset(NS, BRIDGE_DS).is_none());
    assert!(h.applied().linux_bridge.is_none());
    assert_eq!(h.condition("Degraded").await.status, "False");
}

#[tokio::test]
async fn a_failed_webhook_deletion_stops_the_other_deletions() {
    let h = started("kubeMacPool: {}\n").await;
    h.patch_spec(json!({"kubeMacPool": null})).await;
    h.fake.fail_next(
        "DELETE",
        "/mutatingwebhookconfigurations/kubemacpool-mutator",
        500,
        1,
    );
    h.fake.clear_requests();

    assert!(h.reconcile().await.is_err());
    let deletes = h.fake.deletes();
    assert_eq!(deletes.len(), 1, "{deletes:?}");
    assert_eq!(h.fake.list("apps/v1", "deployments").len(), 2);
    let degraded = h.condition("Degraded").await;
    assert_eq!(degraded.reason, "FailedToDeleteObjects");
    assert_contains(&degraded.message, "kubemacpool-mutator");

    h.reconcile().await.unwrap();
    assert!(h.webhook_configurations().is_empty());
    assert!(h.fake.list("apps/v1", "deployments").is_empty());
}

#[tokio::test]
async fn a_failed_deletion_of_a_workload_does_not_stop_the_other_deletions() {
    let h = started("linuxBridge: {}\novs: {}\n").await;
    h.patch_spec(json!({"linuxBridge": null, "ovs": null}))
        .await;
    h.fake
        .fail_next("DELETE", &format!("/daemonsets/{BRIDGE_DS}"), 500, 1);
    assert!(h.reconcile().await.is_err());
    let degraded = h
        .expect_condition("Degraded", "True", "FailedToDeleteObjects")
        .await;
    assert!(
        !degraded.message.contains("webhook"),
        "no webhook is involved: {}",
        degraded.message
    );
    // the other component's objects, and the rest of the bridge's, went all the same
    assert!(h.fake.daemonset(NS, BRIDGE_DS).is_some());
    assert!(h.fake.daemonset(NS, OVS_DS).is_none());
    assert!(h.fake.list("v1", "serviceaccounts").is_empty());
}

/// No condition message is a debug dump, and each is one line per item.
fn assert_readable(c: &Condition) {
    for dump in [
        "Status {",
        "Some(",
        "ApiError",
        "StatusSummary",
        "code:",
        "{ ",
    ] {
        assert!(
            !c.message.contains(dump),
            "{} message has {dump:?}: {}",
            c.type_,
            c.message
        );
    }
}

#[tokio::test]
async fn every_condition_of_a_failed_deletion_reads_as_a_sentence() {
    let h = started("linuxBridge: {}\novs: {}\n").await;
    h.patch_spec(json!({"linuxBridge": null})).await;
    h.fake
        .fail_next("DELETE", &format!("/daemonsets/{BRIDGE_DS}"), 500, 1);
    assert!(h.reconcile().await.is_err());
    let degraded = h
        .expect_condition("Degraded", "True", "FailedToDeleteObjects")
        .await;
    assert_eq!(
        degraded.message,
        format!("delete DaemonSet {NS}/{BRIDGE_DS}: injected failure")
    );
    for t in ["Available", "Progressing", "Degraded"] {
        assert_readable(&h.condition(t).await);
    }
}
