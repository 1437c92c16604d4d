//! The reconcile pass against an in-memory API server that keeps resourceVersions.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::ByteString;
use kube::core::DynamicObject;
use serde_json::json;

use super::*;
use crate::certs::issue::all_certificates;

const H: i64 = 3600;
const T0: i64 = 1_800_000_000;
const NS: &str = "kmp";

#[derive(Default)]
struct State {
    secrets: BTreeMap<String, Secret>,
    config: Option<DynamicObject>,
    version: u64,
    writes: usize,
    /// The next write finds the object changed by someone else.
    lose_next_write: bool,
}

#[derive(Default)]
struct FakeCluster(Mutex<State>);

impl FakeCluster {
    fn with_webhooks(n: usize) -> FakeCluster {
        let webhook = json!({"name": "w.kubemacpool.io", "clientConfig": {"service": {}}});
        let config = serde_json::from_value(json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": WEBHOOK_CONFIGURATION, "resourceVersion": "1"},
            "webhooks": vec![webhook; n],
        }))
        .expect("configuration");
        let fake = FakeCluster::default();
        fake.state().config = Some(config);
        fake.state().version = 1;
        fake
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn secret_data(&self, name: &str, key: &str) -> Option<Vec<u8>> {
        let s = self.state().secrets.get(name)?.clone();
        Some(s.data?.get(key)?.0.clone())
    }

    fn bundles(&self) -> Vec<Vec<u8>> {
        let config = self.state().config.clone().expect("config");
        config.data["webhooks"]
            .as_array()
            .expect("webhooks")
            .iter()
            .map(|w| {
                w["clientConfig"]["caBundle"]
                    .as_str()
                    .map(|b| STANDARD.decode(b).expect("base64"))
                    .unwrap_or_default()
            })
            .collect()
    }

    fn blank_bundle(&self, index: usize) {
        let mut state = self.state();
        let config = state.config.as_mut().expect("config");
        config.data["webhooks"][index]["clientConfig"]["caBundle"] = json!("");
    }

    /// Whether a client trusting webhook `index`'s caBundle accepts the served certificate.
    fn served_cert_is_trusted(&self, index: usize, now: i64) -> bool {
        let cert = self
            .secret_data(SERVING_SECRET, "tls.crt")
            .expect("tls.crt");
        let leaf = crate::certs::issue::first_certificate(&cert).expect("leaf");
        all_certificates(&self.bundles()[index])
            .iter()
            .any(|ca| verify_serving(&leaf, ca, NS, now).is_ok())
    }

    fn bump(state: &mut State) -> Option<String> {
        state.version += 1;
        state.writes += 1;
        if std::mem::take(&mut state.lose_next_write) {
            return None;
        }
        Some(state.version.to_string())
    }
}

impl Cluster for FakeCluster {
    async fn secret(&self, name: &str) -> Result<Option<Secret>> {
        Ok(self.state().secrets.get(name).cloned())
    }

    async fn webhook_configuration(&self) -> Result<Option<DynamicObject>> {
        Ok(self.state().config.clone())
    }

    async fn create_secret(&self, secret: &Secret) -> Result<Written> {
        let mut state = self.state();
        let name = secret.metadata.name.clone().expect("name");
        if state.secrets.contains_key(&name) {
            return Ok(Written::Conflict);
        }
        let Some(version) = FakeCluster::bump(&mut state) else {
            return Ok(Written::Conflict);
        };
        let mut stored = secret.clone();
        stored.metadata.resource_version = Some(version);
        state.secrets.insert(name, stored);
        Ok(Written::Done)
    }

    async fn replace_secret(&self, secret: &Secret) -> Result<Written> {
        let mut state = self.state();
        let name = secret.metadata.name.clone().expect("name");
        let current = state
            .secrets
            .get(&name)
            .map(|s| s.metadata.resource_version.clone());
        if current != Some(secret.metadata.resource_version.clone()) {
            return Ok(Written::Conflict);
        }
        let Some(version) = FakeCluster::bump(&mut state) else {
            return Ok(Written::Conflict);
        };
        let mut stored = secret.clone();
        stored.metadata.resource_version = Some(version);
        state.secrets.insert(name, stored);
        Ok(Written::Done)
    }

    async fn replace_webhook_configuration(&self, config: &DynamicObject) -> Result<Written> {
        let mut state = self.state();
        let current = state
            .config
            .as_ref()
            .map(|c| c.metadata.resource_version.clone());
        if current != Some(config.metadata.resource_version.clone()) {
            return Ok(Written::Conflict);
        }
        let Some(version) = FakeCluster::bump(&mut state) else {
            return Ok(Written::Conflict);
        };
        let mut stored = config.clone();
        stored.metadata.resource_version = Some(version);
        state.config = Some(stored);
        Ok(Written::Done)
    }
}

fn settings() -> Settings {
    Settings {
        namespace: NS.into(),
        intervals: Intervals {
            ca_rotate: Duration::from_secs(100 * H as u64),
            ca_overlap: Duration::from_secs(10 * H as u64),
            cert_rotate: Duration::from_secs(50 * H as u64),
            cert_overlap: Duration::from_secs(5 * H as u64),
        },
        labels: crate::certs::objects::secret_labels(|_| None),
    }
}

/// Passes until nothing is left to do; the instant of the next check.
async fn settle(cluster: &FakeCluster, now: i64) -> Option<i64> {
    for _ in 0..10 {
        match reconcile(cluster, &settings(), now).await.expect("pass") {
            Outcome::Settled { next_check } => return next_check,
            Outcome::Changed(_) | Outcome::Conflict => {}
            Outcome::NoWebhookConfiguration => panic!("no configuration"),
        }
    }
    panic!("not settled after 10 passes");
}

#[tokio::test]
async fn the_first_pass_writes_both_secrets_and_every_ca_bundle() {
    let cluster = FakeCluster::with_webhooks(2);
    let outcome = reconcile(&cluster, &settings(), T0).await.expect("pass");
    assert_eq!(outcome, Outcome::Changed(Action::NewCaAndCert));
    let ca = cluster.secret_data(CA_SECRET, "ca.crt").expect("ca.crt");
    assert_eq!(cluster.bundles(), vec![ca.clone(), ca]);
    assert!(cluster.served_cert_is_trusted(1, T0));
    let secret = cluster.state().secrets[SERVING_SECRET].clone();
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    let labels = secret.metadata.labels.expect("labels");
    assert_eq!(labels.get("app").map(String::as_str), Some("kubemacpool"));
    assert_eq!(settle(&cluster, T0).await, Some(T0 + 45 * H));
}

#[tokio::test]
async fn a_settled_cluster_is_left_alone() {
    let cluster = FakeCluster::with_webhooks(2);
    settle(&cluster, T0).await;
    let writes = cluster.state().writes;
    settle(&cluster, T0 + 44 * H).await;
    assert_eq!(cluster.state().writes, writes);
}

#[tokio::test]
async fn no_configuration_means_nothing_is_written() {
    let cluster = FakeCluster::default();
    let outcome = reconcile(&cluster, &settings(), T0).await.expect("pass");
    assert_eq!(outcome, Outcome::NoWebhookConfiguration);
    assert_eq!(cluster.state().writes, 0);
}

#[tokio::test]
async fn deleting_the_serving_secret_renews_it_and_the_ca_bundle() {
    let cluster = FakeCluster::with_webhooks(2);
    settle(&cluster, T0).await;
    let (cert, bundles) = (
        cluster.secret_data(SERVING_SECRET, "tls.crt"),
        cluster.bundles(),
    );
    cluster.state().secrets.remove(SERVING_SECRET);
    settle(&cluster, T0 + H).await;
    assert_ne!(cluster.secret_data(SERVING_SECRET, "tls.crt"), cert);
    assert!(cluster.bundles().iter().all(|b| !bundles.contains(b)));
    assert!(cluster.served_cert_is_trusted(0, T0 + H));
}

#[tokio::test]
async fn blanking_a_ca_bundle_renews_it_and_the_serving_secret() {
    let cluster = FakeCluster::with_webhooks(2);
    settle(&cluster, T0).await;
    let (cert, bundles) = (
        cluster.secret_data(SERVING_SECRET, "tls.crt"),
        cluster.bundles(),
    );
    cluster.blank_bundle(0);
    settle(&cluster, T0 + H).await;
    assert_ne!(cluster.secret_data(SERVING_SECRET, "tls.crt"), cert);
    assert!(cluster
        .bundles()
        .iter()
        .all(|b| !b.is_empty() && !bundles.contains(b)));
    assert!(cluster.served_cert_is_trusted(0, T0 + H));
    assert!(cluster.served_cert_is_trusted(1, T0 + H));
}

#[tokio::test]
async fn a_cert_past_its_rotation_point_is_renewed_under_the_same_ca() {
    let cluster = FakeCluster::with_webhooks(1);
    settle(&cluster, T0).await;
    let (cert, bundles) = (
        cluster.secret_data(SERVING_SECRET, "tls.crt"),
        cluster.bundles(),
    );
    assert_eq!(settle(&cluster, T0 + 45 * H).await, Some(T0 + 90 * H));
    assert_ne!(cluster.secret_data(SERVING_SECRET, "tls.crt"), cert);
    assert_eq!(cluster.bundles(), bundles);
}

#[tokio::test]
async fn the_ca_bundle_keeps_the_old_ca_during_the_overlap() {
    let cluster = FakeCluster::with_webhooks(1);
    settle(&cluster, T0).await;
    let old_ca = cluster.secret_data(CA_SECRET, "ca.crt").expect("ca");
    settle(&cluster, T0 + 90 * H).await;
    let new_ca = cluster.secret_data(CA_SECRET, "ca.crt").expect("ca");
    assert_ne!(new_ca, old_ca);
    assert_eq!(cluster.bundles()[0], [new_ca.clone(), old_ca].concat());
    settle(&cluster, T0 + 100 * H).await;
    assert_eq!(cluster.bundles()[0], new_ca);
}

#[tokio::test]
async fn the_served_cert_stays_trusted_across_rotations() {
    let cluster = FakeCluster::with_webhooks(2);
    let mut now = T0;
    let end = T0 + 400 * H;
    while now < end {
        let next = settle(&cluster, now).await.expect("a next check");
        assert!(next > now, "next check {next} is not after {now}");
        for i in 0..2 {
            assert!(cluster.served_cert_is_trusted(i, now), "at {now}");
        }
        now = next;
    }
    // Four CAs in 400 hours, a certificate every 45 hours between.
    assert!(cluster.state().writes > 12);
}

#[tokio::test]
async fn a_write_that_loses_a_race_reads_again() {
    let cluster = FakeCluster::with_webhooks(1);
    cluster.state().lose_next_write = true;
    let outcome = reconcile(&cluster, &settings(), T0).await.expect("pass");
    assert_eq!(outcome, Outcome::Conflict);
    settle(&cluster, T0).await;
    assert!(cluster.served_cert_is_trusted(0, T0));
}

#[tokio::test]
async fn an_unusable_ca_secret_is_replaced_in_place() {
    let cluster = FakeCluster::with_webhooks(1);
    let foreign = Secret {
        metadata: ObjectMeta {
            name: Some(CA_SECRET.into()),
            resource_version: Some("7".into()),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".into()),
        data: Some(BTreeMap::from([(
            "ca.key".to_string(),
            ByteString(
                b"-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n".to_vec(),
            ),
        )])),
        ..Secret::default()
    };
    cluster.state().secrets.insert(CA_SECRET.into(), foreign);
    settle(&cluster, T0).await;
    let secret = cluster.state().secrets[CA_SECRET].clone();
    assert_eq!(secret.type_.as_deref(), Some("Opaque"));
    assert!(cluster.served_cert_is_trusted(0, T0));
}
