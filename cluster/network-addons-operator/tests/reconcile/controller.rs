//! The controller as `run` starts it (what it reconciles and watches), and the metrics that
//! follow the config.

use std::sync::Arc;

use serde_json::json;

use crate::fake_api;
use crate::harness::{
    harness, settings, started, BRIDGE_DS, CERT_MANAGER, LINUX_BRIDGE, MAC_CONTROLLER, NS,
};
use network_addons_operator::labels;

#[tokio::test]
async fn the_controller_reconciles_cluster_and_watches_its_workloads_by_label() {
    let h = harness();
    h.create("other", LINUX_BRIDGE).await;
    h.create("cluster", LINUX_BRIDGE).await;
    let metrics = Arc::new(network_addons_operator::metrics::State::default());
    let controller = tokio::spawn(network_addons_operator::reconcile::run(
        h.client.clone(),
        settings(),
        metrics.clone(),
    ));
    let mut reconciled = false;
    for _ in 0..100 {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        if h.nac().await.status.is_some() && metrics.is_ready() {
            reconciled = true;
            break;
        }
    }
    controller.abort();
    assert!(
        reconciled,
        "cluster reconciled by the controller, which is then ready"
    );
    assert!(metrics
        .render()
        .contains("network_addons_operator_reconcile_total{result=\"success\"} 1\n"));
    assert!(h.fake.daemonset(NS, BRIDGE_DS).is_some());
    let other = h.configs().get("other").await.unwrap();
    assert!(other.status.is_none());

    let watches: Vec<fake_api::Seen> = h
        .fake
        .requests()
        .into_iter()
        .filter(|s| s.method == "WATCH")
        .collect();
    let selector = labels::managed_selector();
    for plural in ["daemonsets", "deployments"] {
        let path = format!("/apis/apps/v1/namespaces/{NS}/{plural}");
        assert!(
            watches
                .iter()
                .any(|w| w.path == path && w.query.get("labelSelector") == Some(&selector)),
            "{plural} watched by label in {NS}: {watches:#?}"
        );
    }
    assert!(watches
        .iter()
        .any(|w| w.path.ends_with("/networkaddonsconfigs")
            && w.query.get("fieldSelector").map(String::as_str) == Some("metadata.name=cluster")));
}

#[tokio::test]
async fn the_metrics_follow_the_config() {
    let h = started("kubeMacPool: {}\n").await;
    let metrics = h.ctx.metrics.clone();
    metrics.set_leading();
    assert!(metrics
        .render()
        .contains("\nkubevirt_cnao_cr_kubemacpool_deployed 1\n"));
    assert!(metrics.render().contains("\nkubevirt_cnao_cr_ready 0\n"));
    h.set_deployment_ready(MAC_CONTROLLER);
    h.set_deployment_ready(CERT_MANAGER);
    h.reconcile().await.unwrap();
    h.expect_condition("Available", "True", "AsExpected").await;
    assert!(metrics.render().contains("\nkubevirt_cnao_cr_ready 1\n"));

    h.patch_spec(json!({"kubeMacPool": {"rangeStart": "02:00:00:00:00:00"}}))
        .await;
    assert!(h.reconcile().await.is_err());
    assert!(metrics.render().contains("\nkubevirt_cnao_cr_ready 0\n"));
}
