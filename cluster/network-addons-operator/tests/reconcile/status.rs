//! The status and its conditions as the rollouts go: Available, Progressing, a hung rollout
//! Degraded, each component's own condition, and how the status is written.

use serde_json::json;

use crate::harness::{
    assert_contains, count, harness, started, BRIDGE_DS, CERT_MANAGER, LINUX_BRIDGE,
    MAC_CONTROLLER, NS, OVS_DS,
};

#[tokio::test]
async fn a_ready_daemonset_makes_the_config_available_with_one_event() {
    let h = started(LINUX_BRIDGE).await;
    h.set_ready(BRIDGE_DS);

    h.reconcile().await.unwrap();
    let available = h.condition("Available").await;
    assert_eq!(available.status, "True");
    assert_eq!(h.condition("Progressing").await.status, "False");
    assert_eq!(h.condition("Degraded").await.status, "False");
    assert_eq!(
        h.nac().await.status.unwrap().observed_version.as_deref(),
        Some("9.9.9")
    );
    assert_eq!(count(&h.event_reasons(), "Available"), 1);

    h.advance(1);
    h.reconcile().await.unwrap();
    assert_eq!(
        count(&h.event_reasons(), "Available"),
        1,
        "Available is recorded on the transition only"
    );
    let again = h.condition("Available").await;
    assert_eq!(again.last_transition_time, available.last_transition_time);
}

#[tokio::test]
async fn a_daemonset_unchanged_for_ten_minutes_is_a_hung_rollout() {
    let h = started(LINUX_BRIDGE).await;
    h.set_unavailable(BRIDGE_DS);
    h.reconcile().await.unwrap();
    assert_eq!(h.condition("Degraded").await.status, "False");

    h.advance(9);
    h.reconcile().await.unwrap();
    assert_eq!(h.condition("Degraded").await.status, "False");

    h.advance(2);
    h.reconcile().await.unwrap();
    let degraded = h.expect_condition("Degraded", "True", "RolloutHung").await;
    assert_contains(&degraded.message, BRIDGE_DS);
    assert_eq!(h.condition("Available").await.status, "False");
    assert_eq!(h.condition("Progressing").await.status, "True");
    assert!(h.warnings().contains(&"Failed: RolloutHung".to_string()));

    // it recovers as soon as the DaemonSet is ready
    h.set_ready(BRIDGE_DS);
    h.reconcile().await.unwrap();
    assert_eq!(h.condition("Degraded").await.status, "False");
    assert_eq!(h.condition("Available").await.status, "True");
}

#[tokio::test]
async fn a_daemonset_whose_status_moves_is_not_hung() {
    let h = started(LINUX_BRIDGE).await;
    h.set_unavailable(BRIDGE_DS);
    h.reconcile().await.unwrap();
    h.advance(8);
    h.set_available_on(BRIDGE_DS, 0);
    h.reconcile().await.unwrap();
    h.advance(8);
    h.reconcile().await.unwrap();
    assert_eq!(h.condition("Degraded").await.status, "False");
}

#[tokio::test]
async fn deployments_count_for_availability() {
    let h = started("kubeMacPool: {}\n").await;
    let progressing = h.condition("Progressing").await;
    assert_contains(&progressing.message, MAC_CONTROLLER);
    assert_contains(&progressing.message, CERT_MANAGER);

    h.set_deployment_ready(MAC_CONTROLLER);
    h.reconcile().await.unwrap();
    let progressing = h.condition("Progressing").await;
    assert!(
        !progressing.message.contains(MAC_CONTROLLER),
        "{}",
        progressing.message
    );
    assert_eq!(h.condition("Available").await.status, "False");

    h.set_deployment_ready(CERT_MANAGER);
    h.reconcile().await.unwrap();
    assert_eq!(h.condition("Available").await.status, "True");
    let status = h.nac().await.status.unwrap();
    assert!(status
        .containers
        .iter()
        .any(|c| c.parent_kind == "Deployment" && c.parent_name == MAC_CONTROLLER));
}

#[tokio::test]
async fn components_not_deployed_are_reported() {
    // no cert-manager and no OpenShift in the fake cluster
    let h = started("linuxBridge: {}\nkubevirtIpamController: {}\n").await;
    h.set_ready(BRIDGE_DS);
    h.reconcile().await.unwrap();
    let status = h.nac().await.status.unwrap();
    assert_eq!(status.not_deployed.len(), 1);
    assert_eq!(status.not_deployed[0].component, "kubevirtIpamController");
    assert_contains(&status.not_deployed[0].reason, "cert-manager");
    let available = h.condition("Available").await;
    assert_eq!(available.status, "True");
    assert_contains(&available.message, "kubevirtIpamController");
    let ipam = h.condition("KubevirtIpamControllerAvailable").await;
    assert_eq!(
        (ipam.status.as_str(), ipam.reason.as_str()),
        ("False", "NotDeployed")
    );
    assert!(h
        .fake
        .get(
            "apps/v1",
            "deployments",
            NS,
            "kubevirt-ipam-controller-manager"
        )
        .is_none());
}

#[tokio::test]
async fn each_component_reports_its_own_condition() {
    let h = started("linuxBridge: {}\novs: {}\n").await;
    h.set_ready(BRIDGE_DS);
    h.reconcile().await.unwrap();
    assert_eq!(h.condition("LinuxBridgeAvailable").await.status, "True");
    let ovs = h.condition("OvsAvailable").await;
    assert_eq!(
        (ovs.status.as_str(), ovs.reason.as_str()),
        ("False", "Deploying")
    );
    assert_contains(&ovs.message, OVS_DS);
    assert_eq!(h.condition("Available").await.status, "False");

    h.set_ready(OVS_DS);
    h.reconcile().await.unwrap();
    assert_eq!(h.condition("OvsAvailable").await.status, "True");
}

#[tokio::test]
async fn the_status_is_one_server_side_apply_of_the_status_with_our_field_manager() {
    let h = harness();
    h.create("cluster", LINUX_BRIDGE).await;
    h.reconcile().await.unwrap();
    let writes: Vec<(String, String)> = h
        .fake
        .requests()
        .iter()
        .filter(|s| s.is_status())
        .map(|s| {
            (
                s.content_type.clone(),
                s.query.get("fieldManager").cloned().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        writes,
        [(
            "application/apply-patch+yaml".to_string(),
            "network-addons-operator".to_string()
        )]
    );
    assert_eq!(h.condition("Progressing").await.status, "True");
}

#[tokio::test]
async fn the_retired_failing_condition_is_removed() {
    let h = harness();
    h.create("cluster", LINUX_BRIDGE).await;
    h.fake.set_status(
        "networkaddonsoperator.network.kubevirt.io/v1",
        "networkaddonsconfigs",
        "",
        "cluster",
        json!({"conditions": [{"type": "Failing", "status": "True"}], "observedVersion": "0.1"}),
    );
    h.reconcile().await.unwrap();
    let status = h.nac().await.status.unwrap();
    let types: Vec<&str> = status.conditions.iter().map(|c| c.type_.as_str()).collect();
    assert_eq!(
        types,
        [
            "Available",
            "Progressing",
            "Degraded",
            "LinuxBridgeAvailable"
        ]
    );
    assert_eq!(status.observed_version.as_deref(), Some("0.1"));
}
