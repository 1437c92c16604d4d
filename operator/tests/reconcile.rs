//! The reconcile loop against an in-memory API server (`fake_api`): what it creates, updates,
//! deletes and reports, one behaviour per test.

#![allow(clippy::unwrap_used)]

mod fake_api;
mod k8s_1_20;

use std::sync::{Arc, Mutex};

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::{json, Value};

use fake_api::FakeApi;
use network_addons_operator::apply::UPSTREAM_MANAGED_BY_VALUE;
use network_addons_operator::desired::{APPLIED_CONFIGMAP, APPLIED_KEY};
use network_addons_operator::labels;
use network_addons_operator::reconcile::{reconcile_once, Ctx};
use network_addons_operator::settings::Settings;
use network_addons_operator::spec::{Condition, NetworkAddonsConfig, NetworkAddonsConfigSpec};

const NS: &str = "cluster-network-addons";
const BRIDGE_DS: &str = "kube-cni-linux-bridge-plugin";
const OVS_DS: &str = "ovs-cni-amd64";
const MACVTAP_DS: &str = "macvtap-cni";
const MACVTAP_CONFIG: &str = "macvtap-deviceplugin-config";
const NAD_CRD: &str = "network-attachment-definitions.k8s.cni.cncf.io";

/// A client on a fake server, a context whose clock the test moves, and a fixed MAC prefix.
struct Harness {
    client: Client,
    fake: FakeApi,
    ctx: Ctx,
    now: Arc<Mutex<Timestamp>>,
}

fn settings() -> Settings {
    Settings {
        operator_version: "9.9.9".to_string(),
        ..Settings::defaults()
    }
}

fn new_ctx(client: &Client, now: &Arc<Mutex<Timestamp>>, prefix: [u8; 2]) -> Ctx {
    let clock = now.clone();
    Ctx::new(client.clone(), settings())
        .with_clock(Arc::new(move || *clock.lock().unwrap()))
        .with_prefix(Arc::new(move || prefix))
}

/// A harness whose `cluster` has `spec_yaml` and was reconciled once.
async fn started(spec_yaml: &str) -> Harness {
    let h = harness();
    h.create("cluster", spec_yaml).await;
    h.reconcile().await.unwrap();
    h
}

fn harness() -> Harness {
    let (client, fake) = fake_api::start();
    let now = Arc::new(Mutex::new(Timestamp::from_second(1_750_000_000).unwrap()));
    let ctx = new_ctx(&client, &now, [0x12, 0x34]);
    Harness {
        client,
        fake,
        ctx,
        now,
    }
}

impl Harness {
    fn configs(&self) -> Api<NetworkAddonsConfig> {
        Api::all(self.client.clone())
    }

    async fn create(&self, name: &str, spec_yaml: &str) -> NetworkAddonsConfig {
        let spec: NetworkAddonsConfigSpec = serde_saphyr::from_str(spec_yaml).unwrap();
        let nac = NetworkAddonsConfig::new(name, spec);
        self.configs()
            .create(&PostParams::default(), &nac)
            .await
            .unwrap()
    }

    /// Merge-patches the spec, as `kubectl patch --type merge` would.
    async fn patch_spec(&self, patch: Value) {
        self.configs()
            .patch(
                "cluster",
                &PatchParams::default(),
                &Patch::Merge(json!({ "spec": patch })),
            )
            .await
            .unwrap();
    }

    async fn nac(&self) -> NetworkAddonsConfig {
        self.configs().get("cluster").await.unwrap()
    }

    /// Reconciles the current `cluster` object.
    async fn reconcile(&self) -> network_addons_operator::error::Result<()> {
        let nac = self.nac().await;
        reconcile_once(&self.ctx, &nac).await.map(|_| ())
    }

    fn advance(&self, minutes: i64) {
        let mut now = self.now.lock().unwrap();
        *now = now.checked_add(SignedDuration::from_mins(minutes)).unwrap();
    }

    /// The condition of `type_`, checked to have `status` and `reason`.
    async fn expect_condition(&self, type_: &str, status: &str, reason: &str) -> Condition {
        let c = self.condition(type_).await;
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            (status, reason),
            "{type_}: {}",
            c.message
        );
        c
    }

    async fn condition(&self, type_: &str) -> Condition {
        let nac = self.nac().await;
        nac.status
            .unwrap_or_default()
            .conditions
            .into_iter()
            .find(|c| c.type_ == type_)
            .unwrap_or_else(|| panic!("no {type_} condition"))
    }

    fn applied(&self) -> NetworkAddonsConfigSpec {
        let cm = self
            .fake
            .configmap(NS, APPLIED_CONFIGMAP)
            .expect("applied ConfigMap");
        serde_json::from_str(cm["data"][APPLIED_KEY].as_str().unwrap()).unwrap()
    }

    /// Sets a DaemonSet's status as its controller would: scheduled and updated on two nodes,
    /// `available` of them available.
    fn set_available_on(&self, name: &str, available: i64) {
        let ds = self.fake.daemonset(NS, name).expect("DaemonSet");
        let mut status = json!({
            "currentNumberScheduled": 2, "desiredNumberScheduled": 2,
            "numberMisscheduled": 0, "numberReady": available, "numberAvailable": available,
            "updatedNumberScheduled": 2, "observedGeneration": ds["metadata"]["generation"]
        });
        if available < 2 {
            status["numberUnavailable"] = json!(2 - available);
        }
        self.fake
            .set_status("apps/v1", "daemonsets", NS, name, status);
    }

    fn set_ready(&self, name: &str) {
        self.set_available_on(name, 2);
    }

    fn set_unavailable(&self, name: &str) {
        self.set_available_on(name, 1);
    }

    fn set_deployment_ready(&self, name: &str) {
        let d = self
            .fake
            .get("apps/v1", "deployments", NS, name)
            .expect("Deployment");
        self.fake.set_status(
            "apps/v1",
            "deployments",
            NS,
            name,
            json!({"replicas": 1, "readyReplicas": 1, "availableReplicas": 1,
                   "updatedReplicas": 1, "observedGeneration": d["metadata"]["generation"]}),
        );
    }

    fn webhook_configurations(&self) -> Vec<Value> {
        self.fake.list(
            "admissionregistration.k8s.io/v1",
            "mutatingwebhookconfigurations",
        )
    }

    fn event_reasons(&self) -> Vec<String> {
        self.fake.events().into_iter().map(|(_, r)| r).collect()
    }

    fn warnings(&self) -> Vec<String> {
        self.fake
            .events()
            .into_iter()
            .filter(|(t, _)| t == "Warning")
            .map(|(_, r)| r)
            .collect()
    }

    /// Whether an object whose path ends with `name` was written.
    fn wrote(&self, name: &str) -> bool {
        self.object_writes().iter().any(|w| w.ends_with(name))
    }

    /// Writes other than the status and events.
    fn object_writes(&self) -> Vec<String> {
        self.fake
            .requests()
            .iter()
            .filter(|s| s.is_write() && !s.is_status() && !s.is_event())
            .map(|s| format!("{} {}", s.method, s.path))
            .collect()
    }
}

/// How many times `reason` is among `reasons`.
fn count(reasons: &[String], reason: &str) -> usize {
    reasons.iter().filter(|r| *r == reason).count()
}

fn assert_contains(text: &str, part: &str) {
    assert!(text.contains(part), "{part:?} not in {text:?}");
}

fn owner_kinds(object: &Value) -> Vec<String> {
    object["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| r["kind"].as_str().unwrap_or_default().to_string())
        .collect()
}

const LINUX_BRIDGE: &str = "linuxBridge: {}\n";

#[tokio::test]
async fn creating_a_config_applies_its_objects_records_the_spec_and_reports_progress() {
    let h = started(LINUX_BRIDGE).await;

    let ds = h
        .fake
        .daemonset(NS, BRIDGE_DS)
        .expect("linux bridge DaemonSet");
    let owner = &ds["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "NetworkAddonsConfig");
    assert_eq!(owner["name"], "cluster");
    assert_eq!(owner["uid"], h.nac().await.metadata.uid.unwrap().as_str());
    assert_eq!(owner["controller"], true);
    assert_eq!(owner["blockOwnerDeletion"], true);
    assert_eq!(
        ds["metadata"]["labels"][labels::MANAGED_BY],
        labels::MANAGED_BY_VALUE
    );
    assert_eq!(ds["metadata"]["labels"][labels::COMPONENT], "linuxBridge");

    // every namespaced object is owned; the Namespace is not
    let namespace = h.fake.get("v1", "namespaces", "", NS).expect("Namespace");
    assert!(owner_kinds(&namespace).is_empty());
    for sa in h.fake.list("v1", "serviceaccounts") {
        assert_eq!(owner_kinds(&sa), ["NetworkAddonsConfig"]);
    }

    let applied = h.applied();
    assert!(applied.linux_bridge.is_some());
    assert_eq!(applied.image_pull_policy.as_deref(), Some("IfNotPresent"));
    assert!(applied.self_sign_configuration.is_some());
    assert!(applied.placement_configuration.is_some());
    let record = h.fake.configmap(NS, APPLIED_CONFIGMAP).unwrap();
    assert_eq!(owner_kinds(&record), ["NetworkAddonsConfig"]);

    let progressing = h.expect_condition("Progressing", "True", "Deploying").await;
    assert_contains(&progressing.message, BRIDGE_DS);
    h.expect_condition("Available", "False", "Startup").await;
    assert_eq!(h.condition("Degraded").await.status, "False");

    let status = h.nac().await.status.unwrap();
    assert_eq!(status.operator_version.as_deref(), Some("9.9.9"));
    assert_eq!(status.target_version.as_deref(), Some("9.9.9"));
    assert_eq!(status.observed_version, None);
    assert_eq!(status.observed_generation, Some(1));
    assert!(status
        .containers
        .iter()
        .any(|c| c.parent_kind == "DaemonSet" && c.parent_name == BRIDGE_DS));

    let reasons = h.event_reasons();
    assert!(reasons.contains(&"Modified".to_string()), "{reasons:?}");
    assert!(reasons.contains(&"Progressing".to_string()), "{reasons:?}");
    assert!(h.warnings().is_empty());
}

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
async fn adding_a_component_applies_its_objects() {
    let h = started(LINUX_BRIDGE).await;
    h.set_ready(BRIDGE_DS);
    h.reconcile().await.unwrap();

    h.patch_spec(json!({"ovs": {}})).await;
    h.reconcile().await.unwrap();
    assert!(h.fake.daemonset(NS, OVS_DS).is_some());
    assert!(h.fake.daemonset(NS, BRIDGE_DS).is_some());
    assert!(h.applied().ovs.is_some());
    assert_eq!(h.condition("Available").await.status, "False");
    assert_eq!(h.nac().await.status.unwrap().observed_generation, Some(2));
    assert_eq!(
        count(&h.event_reasons(), "Modified"),
        2,
        "first apply and the change"
    );
}

#[tokio::test]
async fn changing_the_placement_updates_the_daemonset() {
    let h = started(LINUX_BRIDGE).await;
    let before = h.fake.daemonset(NS, BRIDGE_DS).unwrap();

    h.patch_spec(
        json!({"placementConfiguration": {"workloads": {"nodeSelector": {"cni": "yes"}}}}),
    )
    .await;
    h.reconcile().await.unwrap();
    let after = h.fake.daemonset(NS, BRIDGE_DS).unwrap();
    assert_eq!(
        after["spec"]["template"]["spec"]["nodeSelector"],
        json!({"cni": "yes"})
    );
    assert_eq!(
        after["metadata"]["uid"], before["metadata"]["uid"],
        "updated in place"
    );
    assert_eq!(
        after["metadata"]["generation"].as_i64(),
        before["metadata"]["generation"].as_i64().map(|g| g + 1)
    );
}

#[tokio::test]
async fn removing_a_component_deletes_only_its_owned_objects_and_keeps_the_namespace() {
    let h = started("linuxBridge: {}\novs: {}\n").await;
    assert!(h.fake.daemonset(NS, BRIDGE_DS).is_some());
    // carries our labels but no NetworkAddonsConfig owns it: not ours to delete
    h.fake.put(
        "apps/v1",
        "daemonsets",
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
               "metadata": {"name": "someone-elses", "namespace": NS,
                            "labels": {labels::MANAGED_BY: labels::MANAGED_BY_VALUE}},
               "spec": {"selector": {"matchLabels": {"a": "b"}}}}),
    );
    let bridge_accounts: Vec<String> = h
        .fake
        .list("v1", "serviceaccounts")
        .iter()
        .filter(|sa| sa["metadata"]["labels"][labels::COMPONENT] == "linuxBridge")
        .map(|sa| sa["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(!bridge_accounts.is_empty());
    h.fake.clear_requests();

    h.patch_spec(json!({"linuxBridge": null})).await;
    h.reconcile().await.unwrap();

    assert!(h.fake.daemonset(NS, BRIDGE_DS).is_none());
    for name in &bridge_accounts {
        assert!(
            h.fake.get("v1", "serviceaccounts", NS, name).is_none(),
            "{name}"
        );
    }
    assert!(h.fake.daemonset(NS, OVS_DS).is_some());
    assert!(h.fake.daemonset(NS, "someone-elses").is_some());
    assert!(h.fake.get("v1", "namespaces", "", NS).is_some());
    assert!(h.applied().linux_bridge.is_none());
    assert!(h.warnings().is_empty(), "{:?}", h.warnings());

    // the record is written after the last deletion
    let writes = h.object_writes();
    let last_delete = writes
        .iter()
        .rposition(|w| w.starts_with("DELETE"))
        .unwrap();
    let record = writes
        .iter()
        .position(|w| w.ends_with(APPLIED_CONFIGMAP))
        .unwrap();
    assert!(record > last_delete, "{writes:#?}");
}

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

#[tokio::test]
async fn only_the_config_named_cluster_is_reconciled() {
    let h = harness();
    let other = h.create("other", LINUX_BRIDGE).await;
    h.fake.clear_requests();
    reconcile_once(&h.ctx, &other).await.unwrap();
    assert!(h.fake.requests().is_empty(), "{:?}", h.fake.requests());
    let other = h.configs().get("other").await.unwrap();
    assert!(other.status.is_none());
}

#[tokio::test]
async fn a_create_only_config_map_keeps_the_administrators_data() {
    let h = harness();
    h.fake.put(
        "v1",
        "configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": MACVTAP_CONFIG, "namespace": NS},
               "data": {"DP_MACVTAP_CONF": "[{\"name\": \"dataplane\", \"master\": \"eth1\"}]"}}),
    );
    h.create("cluster", "macvtap: {}\n").await;
    h.reconcile().await.unwrap();
    assert!(h.fake.daemonset(NS, MACVTAP_DS).is_some());
    let cm = h.fake.configmap(NS, MACVTAP_CONFIG).unwrap();
    assert!(cm["data"]["DP_MACVTAP_CONF"]
        .as_str()
        .unwrap()
        .contains("eth1"));
    assert!(!h.wrote(MACVTAP_CONFIG));
}

#[tokio::test]
async fn a_create_only_config_map_is_created_once_then_left_alone() {
    let h = started("macvtap: {}\n").await;
    let created = h.fake.configmap(NS, MACVTAP_CONFIG).expect("created");
    assert_eq!(created["data"]["DP_MACVTAP_CONF"], "[]");
    assert_eq!(owner_kinds(&created), ["NetworkAddonsConfig"]);

    let mut edited = created.clone();
    edited["data"]["DP_MACVTAP_CONF"] = json!("[{\"name\": \"a\", \"master\": \"eth2\"}]");
    h.fake.put("v1", "configmaps", edited.clone());
    h.fake.clear_requests();
    h.reconcile().await.unwrap();
    assert_eq!(
        h.fake.configmap(NS, MACVTAP_CONFIG).unwrap()["data"],
        edited["data"]
    );
    assert!(!h.wrote(MACVTAP_CONFIG));
}

#[tokio::test]
async fn a_daemonset_with_another_selector_is_deleted_and_created_again() {
    let h = harness();
    // left by an older release with a selector this one does not render
    h.fake.put(
        "apps/v1",
        "daemonsets",
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
               "metadata": {"name": BRIDGE_DS, "namespace": NS,
                            "labels": {labels::MANAGED_BY: labels::MANAGED_BY_VALUE}},
               "spec": {"selector": {"matchLabels": {"name": "old-selector"}}}}),
    );
    let old_uid = h.fake.daemonset(NS, BRIDGE_DS).unwrap()["metadata"]["uid"].clone();
    h.create("cluster", LINUX_BRIDGE).await;
    h.reconcile().await.unwrap();

    let ds = h.fake.daemonset(NS, BRIDGE_DS).unwrap();
    assert_ne!(ds["metadata"]["uid"], old_uid);
    assert_ne!(
        ds["spec"]["selector"],
        json!({"matchLabels": {"name": "old-selector"}})
    );
    let writes = h.object_writes();
    let ds_path = daemon_set_path(BRIDGE_DS);
    let deleted = writes
        .iter()
        .position(|w| *w == format!("DELETE {ds_path}"))
        .expect("deleted");
    assert!(writes[deleted + 1..]
        .iter()
        .any(|w| *w == format!("PATCH {ds_path}")));
    // its pods no longer match the new selector: they go with it
    assert_eq!(h.fake.deletes(), [(ds_path, "Background".to_string())]);
    assert_eq!(h.condition("Degraded").await.status, "False");
}

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

fn daemon_set_path(name: &str) -> String {
    format!("/apis/apps/v1/namespaces/{NS}/daemonsets/{name}")
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
async fn objects_applied_before_are_not_read_again_before_the_next_apply() {
    let h = started(LINUX_BRIDGE).await;
    let reads = |h: &Harness| {
        h.fake
            .requests()
            .iter()
            .filter(|s| s.method == "GET" && s.path.contains("/clusterrole") && s.query.is_empty())
            .count()
    };
    assert_eq!(reads(&h), 2, "the ClusterRole and its binding, read once");
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
    assert_eq!(applied, 2, "the ClusterRole and its binding, applied again");
    assert_eq!(reads(&h), 0);
}

#[tokio::test]
async fn a_label_changed_behind_the_operators_back_is_applied_again() {
    let h = started(LINUX_BRIDGE).await;
    let mut ds = h.fake.daemonset(NS, BRIDGE_DS).unwrap();
    ds["metadata"]["labels"][labels::MANAGED_BY] = json!("someone-else");
    h.fake.put("apps/v1", "daemonsets", ds);
    h.reconcile().await.unwrap();
    let ds = h.fake.daemonset(NS, BRIDGE_DS).unwrap();
    assert_eq!(
        ds["metadata"]["labels"][labels::MANAGED_BY],
        labels::MANAGED_BY_VALUE
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

#[tokio::test]
async fn a_binding_whose_role_changed_is_deleted_and_created_again() {
    let h = harness();
    // ours, but bound to a role this release does not render: roleRef cannot change in place
    h.fake.put(
        "rbac.authorization.k8s.io/v1",
        "clusterrolebindings",
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "bridge-marker-crb",
                            "labels": {labels::MANAGED_BY: labels::MANAGED_BY_VALUE}},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": "old-role"},
               "subjects": []}),
    );
    h.create("cluster", LINUX_BRIDGE).await;
    h.reconcile().await.unwrap();

    let binding = h
        .fake
        .get(
            "rbac.authorization.k8s.io/v1",
            "clusterrolebindings",
            "",
            "bridge-marker-crb",
        )
        .unwrap();
    assert_eq!(binding["roleRef"]["name"], "bridge-marker-cr");
    assert_eq!(
        h.fake.deletes(),
        [(
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/bridge-marker-crb".to_string(),
            "Background".to_string()
        )]
    );
    assert_eq!(h.condition("Degraded").await.status, "False");
}

#[tokio::test]
async fn drift_is_undone_on_the_next_reconcile() {
    let h = started(LINUX_BRIDGE).await;
    let mut ds = h.fake.daemonset(NS, BRIDGE_DS).unwrap();
    let rendered = ds["spec"]["template"]["spec"]["containers"][0]["image"].clone();
    ds["spec"]["template"]["spec"]["containers"][0]["image"] = json!("example.com/other:1");
    h.fake.put("apps/v1", "daemonsets", ds);

    h.reconcile().await.unwrap();
    let ds = h.fake.daemonset(NS, BRIDGE_DS).unwrap();
    assert_eq!(
        ds["spec"]["template"]["spec"]["containers"][0]["image"],
        rendered
    );
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
async fn the_ipam_controller_is_deployed_once_cert_manager_is_installed() {
    let h = started("kubevirtIpamController: {}\n").await;
    assert!(h
        .fake
        .get(
            "apps/v1",
            "deployments",
            NS,
            "kubevirt-ipam-controller-manager"
        )
        .is_none());
    for crd in network_addons_operator::cluster::CERT_MANAGER_CRDS {
        h.fake.put(
            "apiextensions.k8s.io/v1",
            "customresourcedefinitions",
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                   "metadata": {"name": crd}}),
        );
    }
    h.reconcile().await.unwrap();
    assert!(h
        .fake
        .get(
            "apps/v1",
            "deployments",
            NS,
            "kubevirt-ipam-controller-manager"
        )
        .is_some());
    let cert = h
        .fake
        .get(
            "cert-manager.io/v1",
            "certificates",
            NS,
            "kubevirt-ipam-controller-serving-cert",
        )
        .expect("a Certificate for the webhook");
    assert_eq!(cert["spec"]["secretName"], "webhook-server-cert");
    assert!(h.nac().await.status.unwrap().not_deployed.is_empty());
    let ipam = h.condition("KubevirtIpamControllerAvailable").await;
    assert_eq!(ipam.reason, "Deploying");
}

const NMSTATE: &str = "nmstate: {}\n";
const NMSTATE_DS: &str = "nmstate-handler";
const NMSTATE_CRDS: [&str; 3] = [
    "nodenetworkconfigurationpolicies.nmstate.io",
    "nodenetworkconfigurationenactments.nmstate.io",
    "nodenetworkstates.nmstate.io",
];

fn crd_exists(h: &Harness, name: &str) -> bool {
    h.fake
        .get(
            "apiextensions.k8s.io/v1",
            "customresourcedefinitions",
            "",
            name,
        )
        .is_some()
}

#[tokio::test]
async fn nmstate_deploys_its_crds_and_handler_and_reports_its_condition() {
    let h = started(NMSTATE).await;
    for crd in NMSTATE_CRDS {
        assert!(crd_exists(&h, crd), "{crd}");
    }
    assert!(h.fake.daemonset(NS, NMSTATE_DS).is_some());
    h.expect_condition("NmstateAvailable", "False", "Deploying")
        .await;
    h.set_ready(NMSTATE_DS);
    h.reconcile().await.unwrap();
    h.expect_condition("NmstateAvailable", "True", "AsExpected")
        .await;
    assert!(h.nac().await.status.unwrap().not_deployed.is_empty());
}

#[tokio::test]
async fn removing_nmstate_deletes_its_handler_and_rbac_and_keeps_its_crds() {
    let h = started(NMSTATE).await;
    h.patch_spec(json!({"nmstate": null})).await;
    h.reconcile().await.unwrap();

    assert!(h.fake.daemonset(NS, NMSTATE_DS).is_none());
    assert!(h
        .fake
        .get("v1", "serviceaccounts", NS, "nmstate-handler")
        .is_none());
    for (gv, plural) in [
        ("rbac.authorization.k8s.io/v1", "clusterroles"),
        ("rbac.authorization.k8s.io/v1", "clusterrolebindings"),
    ] {
        assert!(
            h.fake.get(gv, plural, "", "nmstate-handler").is_none(),
            "{plural}"
        );
    }
    // every user's policies, enactments and states live in them
    for crd in NMSTATE_CRDS {
        assert!(crd_exists(&h, crd), "{crd}");
    }
    assert!(h
        .fake
        .deletes()
        .iter()
        .all(|(path, _)| !path.contains("customresourcedefinitions")));
}

#[tokio::test]
async fn where_kubernetes_nmstate_is_installed_nmstate_renders_nothing_and_says_why() {
    let h = harness();
    h.fake.put(
        "apiextensions.k8s.io/v1",
        "customresourcedefinitions",
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": NMSTATE_CRDS[0],
                            "labels": {"app": "kubernetes-nmstate"}}}),
    );
    h.create("cluster", NMSTATE).await;
    h.reconcile().await.unwrap();

    assert!(h.fake.daemonset(NS, NMSTATE_DS).is_none());
    assert!(!crd_exists(&h, NMSTATE_CRDS[1]));
    let untouched = h
        .fake
        .get(
            "apiextensions.k8s.io/v1",
            "customresourcedefinitions",
            "",
            NMSTATE_CRDS[0],
        )
        .unwrap();
    assert!(untouched["metadata"]["labels"]
        .get(labels::MANAGED_BY)
        .is_none());
    let condition = h
        .expect_condition("NmstateAvailable", "False", "UpstreamInstalled")
        .await;
    assert_contains(&condition.message, NMSTATE_CRDS[0]);
    let status = h.nac().await.status.unwrap();
    assert_eq!(status.not_deployed[0].component, "nmstate");
    assert_eq!(h.condition("Available").await.status, "True");
}

#[tokio::test]
async fn a_handler_daemonset_of_another_installation_keeps_ours_away() {
    let h = harness();
    h.fake.put(
        "apps/v1",
        "daemonsets",
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
               "metadata": {"name": NMSTATE_DS, "namespace": "nmstate",
                            "labels": {"app": "kubernetes-nmstate"}},
               "spec": {"selector": {"matchLabels": {"name": NMSTATE_DS}}}}),
    );
    h.create("cluster", NMSTATE).await;
    h.reconcile().await.unwrap();

    assert!(h.fake.daemonset(NS, NMSTATE_DS).is_none());
    for crd in NMSTATE_CRDS {
        assert!(!crd_exists(&h, crd), "{crd}");
    }
    let condition = h
        .expect_condition("NmstateAvailable", "False", "UpstreamInstalled")
        .await;
    assert_contains(&condition.message, "DaemonSet nmstate-handler");
}

#[tokio::test]
async fn our_own_nmstate_crds_do_not_count_as_another_installation() {
    let h = started(NMSTATE).await;
    h.reconcile().await.unwrap();
    assert!(h.fake.daemonset(NS, NMSTATE_DS).is_some());
    assert!(h.nac().await.status.unwrap().not_deployed.is_empty());
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

/// The writes (anything but reads and watches) a reconcile sent, events left out.
fn writes(h: &Harness) -> Vec<String> {
    h.fake
        .requests()
        .iter()
        .filter(|s| s.is_write() && !s.is_event())
        .map(|s| format!("{} {}", s.method, s.path))
        .collect()
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

impl Harness {
    /// The same cluster seen by a replica that has just become the leader: it has applied
    /// nothing yet.
    fn new_leader(self) -> Harness {
        Harness {
            ctx: new_ctx(&self.client, &self.now, [0x12, 0x34]),
            ..self
        }
    }
}

#[tokio::test]
async fn a_new_leader_writes_nothing_the_last_one_completed() {
    let h = started(LINUX_BRIDGE).await;
    h.set_ready(BRIDGE_DS);
    h.reconcile().await.unwrap();
    let h = h.new_leader();
    h.fake.clear_requests();
    h.advance(1);
    h.reconcile().await.unwrap();
    assert_eq!(writes(&h), Vec::<String>::new());
}

#[tokio::test]
async fn a_new_leader_applies_what_changed_behind_the_last_ones_back() {
    let h = started(LINUX_BRIDGE).await;
    let mut ds = h.fake.daemonset(NS, BRIDGE_DS).unwrap();
    ds["spec"]["template"]["spec"]["containers"][0]["image"] = json!("elsewhere/bridge:1");
    h.fake.put("apps/v1", "daemonsets", ds);
    let h = h.new_leader();
    h.fake.clear_requests();
    h.reconcile().await.unwrap();
    assert_eq!(
        h.object_writes(),
        [format!(
            "PATCH /apis/apps/v1/namespaces/{NS}/daemonsets/{BRIDGE_DS}"
        )]
    );
}

#[tokio::test]
async fn a_new_leader_applies_everything_when_the_last_render_was_not_completed() {
    let h = started(LINUX_BRIDGE).await;
    let mut record = h.fake.configmap(NS, APPLIED_CONFIGMAP).unwrap();
    record["metadata"]["annotations"] = json!({});
    h.fake.put("v1", "configmaps", record);
    let written_first: Vec<String> = h
        .object_writes()
        .into_iter()
        .filter(|w| !w.contains("/networkaddonsconfigs"))
        .collect();
    let h = h.new_leader();
    h.fake.clear_requests();
    h.reconcile().await.unwrap();
    assert_eq!(h.object_writes(), written_first);
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

const MAC_CONTROLLER: &str = "kubemacpool-mac-controller-manager";
const CERT_MANAGER: &str = "kubemacpool-cert-manager";

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
async fn removing_kubemacpool_deletes_its_webhook_before_anything_else() {
    let h = started("kubeMacPool: {}\n").await;
    assert!(!h.webhook_configurations().is_empty());
    h.fake.clear_requests();

    h.patch_spec(json!({"kubeMacPool": null})).await;
    h.reconcile().await.unwrap();
    let deletes: Vec<String> = h
        .object_writes()
        .into_iter()
        .filter(|w| w.starts_with("DELETE"))
        .collect();
    assert!(deletes.len() > 1, "{deletes:?}");
    assert!(
        deletes[0].contains("/mutatingwebhookconfigurations/"),
        "{deletes:#?}"
    );
    assert!(h.webhook_configurations().is_empty());
    assert!(h.fake.list("apps/v1", "deployments").is_empty());
    assert!(h.warnings().is_empty());
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
