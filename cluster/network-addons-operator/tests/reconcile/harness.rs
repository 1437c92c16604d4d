//! The test bed every reconcile test starts from: a client on the in-memory API server, a
//! context whose clock the test moves, and what the tests read back from the server.

use std::sync::{Arc, Mutex};

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::{json, Value};

use crate::fake_api::{self, FakeApi};
use network_addons_operator::desired::{APPLIED_CONFIGMAP, APPLIED_KEY};
use network_addons_operator::reconcile::{reconcile_once, Ctx};
use network_addons_operator::settings::Settings;
use network_addons_operator::spec::{Condition, NetworkAddonsConfig, NetworkAddonsConfigSpec};

pub const NS: &str = "cluster-network-addons";
pub const BRIDGE_DS: &str = "kube-cni-linux-bridge-plugin";
pub const OVS_DS: &str = "ovs-cni-amd64";

/// A client on a fake server, a context whose clock the test moves, and a fixed MAC prefix.
pub struct Harness {
    pub client: Client,
    pub fake: FakeApi,
    pub ctx: Ctx,
    pub now: Arc<Mutex<Timestamp>>,
}

pub fn settings() -> Settings {
    Settings {
        operator_version: "9.9.9".to_string(),
        ..Settings::defaults()
    }
}

pub fn new_ctx(client: &Client, now: &Arc<Mutex<Timestamp>>, prefix: [u8; 2]) -> Ctx {
    let clock = now.clone();
    Ctx::new(client.clone(), settings())
        .with_clock(Arc::new(move || *clock.lock().unwrap()))
        .with_prefix(Arc::new(move || prefix))
}

/// A harness whose `cluster` has `spec_yaml` and was reconciled once.
pub async fn started(spec_yaml: &str) -> Harness {
    let h = harness();
    h.create("cluster", spec_yaml).await;
    h.reconcile().await.unwrap();
    h
}

pub fn harness() -> Harness {
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
    pub fn configs(&self) -> Api<NetworkAddonsConfig> {
        Api::all(self.client.clone())
    }

    pub async fn create(&self, name: &str, spec_yaml: &str) -> NetworkAddonsConfig {
        let spec: NetworkAddonsConfigSpec = serde_saphyr::from_str(spec_yaml).unwrap();
        let nac = NetworkAddonsConfig::new(name, spec);
        self.configs()
            .create(&PostParams::default(), &nac)
            .await
            .unwrap()
    }

    /// Merge-patches the spec, as `kubectl patch --type merge` would.
    pub async fn patch_spec(&self, patch: Value) {
        self.configs()
            .patch(
                "cluster",
                &PatchParams::default(),
                &Patch::Merge(json!({ "spec": patch })),
            )
            .await
            .unwrap();
    }

    pub async fn nac(&self) -> NetworkAddonsConfig {
        self.configs().get("cluster").await.unwrap()
    }

    /// Reconciles the current `cluster` object.
    pub async fn reconcile(&self) -> network_addons_operator::error::Result<()> {
        let nac = self.nac().await;
        reconcile_once(&self.ctx, &nac).await.map(|_| ())
    }

    pub fn advance(&self, minutes: i64) {
        let mut now = self.now.lock().unwrap();
        *now = now.checked_add(SignedDuration::from_mins(minutes)).unwrap();
    }

    /// The condition of `type_`, checked to have `status` and `reason`.
    pub async fn expect_condition(&self, type_: &str, status: &str, reason: &str) -> Condition {
        let c = self.condition(type_).await;
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            (status, reason),
            "{type_}: {}",
            c.message
        );
        c
    }

    pub async fn condition(&self, type_: &str) -> Condition {
        let nac = self.nac().await;
        nac.status
            .unwrap_or_default()
            .conditions
            .into_iter()
            .find(|c| c.type_ == type_)
            .unwrap_or_else(|| panic!("no {type_} condition"))
    }

    pub fn applied(&self) -> NetworkAddonsConfigSpec {
        let cm = self
            .fake
            .configmap(NS, APPLIED_CONFIGMAP)
            .expect("applied ConfigMap");
        serde_json::from_str(cm["data"][APPLIED_KEY].as_str().unwrap()).unwrap()
    }

    /// Sets a DaemonSet's status as its controller would: scheduled and updated on two nodes,
    /// `available` of them available.
    pub fn set_available_on(&self, name: &str, available: i64) {
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

    pub fn set_ready(&self, name: &str) {
        self.set_available_on(name, 2);
    }

    pub fn set_unavailable(&self, name: &str) {
        self.set_available_on(name, 1);
    }

    pub fn set_deployment_ready(&self, name: &str) {
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

    pub fn webhook_configurations(&self) -> Vec<Value> {
        self.fake.list(
            "admissionregistration.k8s.io/v1",
            "mutatingwebhookconfigurations",
        )
    }

    pub fn event_reasons(&self) -> Vec<String> {
        self.fake.events().into_iter().map(|(_, r)| r).collect()
    }

    pub fn warnings(&self) -> Vec<String> {
        self.fake
            .events()
            .into_iter()
            .filter(|(t, _)| t == "Warning")
            .map(|(_, r)| r)
            .collect()
    }

    /// Whether an object whose path ends with `name` was written.
    pub fn wrote(&self, name: &str) -> bool {
        self.object_writes().iter().any(|w| w.ends_with(name))
    }

    /// Writes other than the status and events.
    pub fn object_writes(&self) -> Vec<String> {
        self.fake
            .requests()
            .iter()
            .filter(|s| s.is_write() && !s.is_status() && !s.is_event())
            .map(|s| format!("{} {}", s.method, s.path))
            .collect()
    }
}

/// How many times `reason` is among `reasons`.
pub fn count(reasons: &[String], reason: &str) -> usize {
    reasons.iter().filter(|r| *r == reason).count()
}

pub fn assert_contains(text: &str, part: &str) {
    assert!(text.contains(part), "{part:?} not in {text:?}");
}

pub fn owner_kinds(object: &Value) -> Vec<String> {
    object["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| r["kind"].as_str().unwrap_or_default().to_string())
        .collect()
}

pub const LINUX_BRIDGE: &str = "linuxBridge: {}\n";

pub fn daemon_set_path(name: &str) -> String {
    format!("/apis/apps/v1/namespaces/{NS}/daemonsets/{name}")
}

/// The writes (anything but reads and watches) a reconcile sent, events left out.
pub fn writes(h: &Harness) -> Vec<String> {
    h.fake
        .requests()
        .iter()
        .filter(|s| s.is_write() && !s.is_event())
        .map(|s| format!("{} {}", s.method, s.path))
        .collect()
}

pub const MAC_CONTROLLER: &str = "kubemacpool-mac-controller-manager";
pub const CERT_MANAGER: &str = "kubemacpool-cert-manager";
