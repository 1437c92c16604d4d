//! The spec as it is applied: validated, refused when it changes what cannot change in place,
//! and its defaults (the MAC range) kept from the recorded one, ours or the upstream operator's.

use serde_json::json;

use crate::harness::{
    assert_contains, harness, new_ctx, started, BRIDGE_DS, LINUX_BRIDGE, NS, OVS_DS,
};
use network_addons_operator::desired::{APPLIED_CONFIGMAP, APPLIED_KEY};
use network_addons_operator::reconcile::reconcile_once;

#[tokio::test]
async fn an_invalid_spec_is_degraded_and_changes_nothing() {
    let h = harness();
    h.create(
        "cluster",
        "linuxBridge: {}\nkubeMacPool:\n  rangeStart: this:aint:right\n",
    )
    .await;
    h.fake.clear_requests();
    assert!(h.reconcile().await.is_err());

    let degraded = h
        .expect_condition("Degraded", "True", "FailedToValidate")
        .await;
    assert!(degraded.message.starts_with("invalid configuration:\n"));
    assert_contains(&degraded.message, "rangeStart");
    h.expect_condition("Available", "False", "Failing").await;
    h.expect_condition("Progressing", "False", "InvalidConfiguration")
        .await;
    assert!(h.object_writes().is_empty(), "{:?}", h.object_writes());
    assert!(h.fake.daemonset(NS, BRIDGE_DS).is_none());
    assert_eq!(h.warnings(), ["Failed: FailedToValidate"]);
}

#[tokio::test]
async fn fixing_an_invalid_spec_recovers() {
    let h = harness();
    h.create("cluster", "linuxBridge: {}\nimagePullPolicy: Sometimes\n")
        .await;
    assert!(h.reconcile().await.is_err());
    h.patch_spec(json!({"imagePullPolicy": null})).await;
    h.reconcile().await.unwrap();
    assert_eq!(h.condition("Degraded").await.status, "False");
    assert!(h.fake.daemonset(NS, BRIDGE_DS).is_some());
}

#[tokio::test]
async fn changing_the_pull_policy_after_apply_is_refused() {
    let h = started(LINUX_BRIDGE).await;
    h.patch_spec(json!({"imagePullPolicy": "Always", "ovs": {}}))
        .await;
    h.fake.clear_requests();

    assert!(h.reconcile().await.is_err());
    let degraded = h.expect_condition("Degraded", "True", "UnsafeChange").await;
    assert_contains(&degraded.message, "imagePullPolicy");
    assert!(h.object_writes().is_empty(), "{:?}", h.object_writes());
    assert!(h.fake.daemonset(NS, OVS_DS).is_none());
    assert_eq!(
        h.applied().image_pull_policy.as_deref(),
        Some("IfNotPresent")
    );
}

#[tokio::test]
async fn the_random_mac_range_survives_reconciles_and_restarts() {
    let h = started("kubeMacPool: {}\n").await;
    let pool = h.applied().kube_mac_pool.unwrap();
    assert_eq!(pool.range_start, "02:12:34:00:00:00");
    assert_eq!(pool.range_end, "02:12:34:ff:ff:ff");

    h.reconcile().await.unwrap();
    assert_eq!(h.applied().kube_mac_pool.unwrap(), pool);

    // a restarted operator, whose randomness would pick another range
    let restarted = new_ctx(&h.client, &h.now, [0xab, 0xcd]);
    let nac = h.nac().await;
    reconcile_once(&restarted, &nac).await.unwrap();
    assert_eq!(h.applied().kube_mac_pool.unwrap(), pool);
}

#[tokio::test]
async fn a_range_recorded_by_the_upstream_operator_is_kept() {
    let h = harness();
    let upstream = json!({"kubeMacPool": {"rangeStart": "02:aa:bb:00:00:00",
                                          "rangeEnd": "02:aa:bb:ff:ff:ff"},
                          "imagePullPolicy": "Always"});
    h.fake.put(
        "v1",
        "configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": APPLIED_CONFIGMAP, "namespace": NS},
               "data": {APPLIED_KEY: upstream.to_string()}}),
    );
    h.create("cluster", "kubeMacPool: {}\n").await;
    h.reconcile().await.unwrap();
    let applied = h.applied();
    assert_eq!(
        applied.kube_mac_pool.unwrap().range_start,
        "02:aa:bb:00:00:00"
    );
    assert_eq!(applied.image_pull_policy.as_deref(), Some("Always"));
}
