//! Events: recorded once per transition or failure, as core/v1 Events about the cluster-scoped
//! config, and the same event again counted on the first.

use serde_json::{json, Value};

use crate::harness::{count, harness, started, BRIDGE_DS, LINUX_BRIDGE};

#[tokio::test]
async fn progressing_is_recorded_once_per_rollout() {
    let h = started(LINUX_BRIDGE).await;
    h.set_unavailable(BRIDGE_DS);
    h.advance(1);
    h.reconcile().await.unwrap();
    h.advance(1);
    h.reconcile().await.unwrap();
    assert_eq!(count(&h.event_reasons(), "Progressing"), 1);

    // available, then a new rollout
    h.set_ready(BRIDGE_DS);
    h.reconcile().await.unwrap();
    h.patch_spec(json!({"placementConfiguration": {"workloads": {"nodeSelector": {"a": "b"}}}}))
        .await;
    h.reconcile().await.unwrap();
    h.reconcile().await.unwrap();
    assert_eq!(count(&h.event_reasons(), "Progressing"), 2);
}

#[tokio::test]
async fn a_hung_rollout_is_recorded_once() {
    let h = started(LINUX_BRIDGE).await;
    h.set_unavailable(BRIDGE_DS);
    h.reconcile().await.unwrap();
    h.advance(11);
    h.reconcile().await.unwrap();
    // still hung a minute later, with another note ("for 12 minutes")
    h.advance(1);
    h.reconcile().await.unwrap();
    assert_eq!(h.condition("Degraded").await.reason, "RolloutHung");
    assert_eq!(h.warnings(), ["Failed: RolloutHung"]);
}

#[tokio::test]
async fn a_failure_that_repeats_is_recorded_once() {
    let h = harness();
    h.create("cluster", LINUX_BRIDGE).await;
    h.fake
        .fail_next("PATCH", &format!("/daemonsets/{BRIDGE_DS}"), 500, 2);
    assert!(h.reconcile().await.is_err());
    assert!(h.reconcile().await.is_err());
    assert_eq!(h.warnings(), ["Failed: FailedToApply"]);
}

#[tokio::test]
async fn events_are_core_events_in_default_about_the_cluster_scoped_config() {
    let h = started(LINUX_BRIDGE).await;
    let events = h.fake.stored_events();
    assert!(!events.is_empty(), "events recorded");
    let uid = h.nac().await.metadata.uid.unwrap();
    for e in &events {
        assert_eq!(e["metadata"]["namespace"], "default", "{e}");
        assert!(e.get("eventTime").is_none_or(Value::is_null), "{e}");
        assert_eq!(e["involvedObject"]["kind"], "NetworkAddonsConfig");
        assert_eq!(e["involvedObject"]["name"], "cluster");
        assert_eq!(e["involvedObject"]["uid"], uid.as_str());
        assert!(e["involvedObject"].get("namespace").is_none());
        assert_eq!(e["source"]["component"], "network-addons-operator");
        assert_eq!(e["count"], 1);
        assert!(e["firstTimestamp"].is_string() && e["lastTimestamp"].is_string());
    }
    // nothing was written through the events.k8s.io API
    assert!(h
        .fake
        .requests()
        .iter()
        .all(|r| !r.path.starts_with("/apis/events.k8s.io")));
}

#[tokio::test]
async fn the_same_event_again_is_counted_on_the_first() {
    let h = started(LINUX_BRIDGE).await;
    let invalid = json!({"kubeMacPool": {"rangeStart": "02:00:00:00:00:00"}});
    h.patch_spec(invalid.clone()).await;
    assert!(h.reconcile().await.is_err());
    h.patch_spec(json!({"kubeMacPool": null})).await;
    h.reconcile().await.unwrap();
    h.patch_spec(invalid).await;
    assert!(h.reconcile().await.is_err());

    assert_eq!(
        h.warnings(),
        ["Failed: FailedToValidate", "Failed: FailedToValidate"]
    );
    let failed: Vec<Value> = h
        .fake
        .stored_events()
        .into_iter()
        .filter(|e| e["reason"] == "Failed: FailedToValidate")
        .collect();
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert_eq!(failed[0]["count"], 2);
    assert_eq!(failed[0]["type"], "Warning");
}

#[tokio::test]
async fn an_event_deleted_meanwhile_is_recorded_anew() {
    let h = started(LINUX_BRIDGE).await;
    let invalid = json!({"kubeMacPool": {"rangeStart": "02:00:00:00:00:00"}});
    h.patch_spec(invalid.clone()).await;
    assert!(h.reconcile().await.is_err());
    for e in h.fake.stored_events() {
        let name = e["metadata"]["name"].as_str().unwrap().to_string();
        h.fake.remove("v1", "events", "default", &name);
    }
    h.patch_spec(json!({"kubeMacPool": null})).await;
    h.reconcile().await.unwrap();
    h.patch_spec(invalid).await;
    assert!(h.reconcile().await.is_err());
    let failed: Vec<Value> = h
        .fake
        .stored_events()
        .into_iter()
        .filter(|e| e["reason"] == "Failed: FailedToValidate")
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["count"], 1);
}
