//! The `kubemacpool-cert-manager` loop: reconcile, then sleep until the next rotation point or
//! until a watched object changes (either Secret, or the webhook configuration), whichever is
//! first. Watches make a deleted Secret or a blanked caBundle come back within a second or two;
//! a resync every few minutes covers a watch that silently stalls and a clock that jumps.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::{stream, Stream, StreamExt};
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Secret;
use kube::runtime::watcher::{self, watcher};
use kube::runtime::WatchStreamExt;
use kube::{Api, Client};
use tokio::sync::Notify;
use tracing::{error, info, warn};

use super::cluster::KubeCluster;
use super::intervals::Intervals;
use super::objects::secret_labels;
use super::reconcile::{reconcile, Outcome, Settings};
use super::x509::UnixSeconds;
use super::{CA_SECRET, SERVING_SECRET, WEBHOOK_CONFIGURATION};
use crate::error::{Error, Result};

/// The longest sleep between two passes, whatever the next rotation point.
const RESYNC: Duration = Duration::from_secs(300);
/// How often to look for a webhook configuration that does not exist yet (a watch also wakes).
const CONFIG_RETRY: Duration = Duration::from_secs(5);
/// Events come in bursts (our own three writes): one pass after the burst.
const DEBOUNCE: Duration = Duration::from_millis(200);
/// So many changes in a row mean something undoes them; slow down rather than spin.
const MAX_CHANGES_IN_A_ROW: u32 = 10;

fn unix_now() -> UnixSeconds {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

/// Between 0.2 and 1 s, taken from the clock's nanoseconds: two cert managers whose writes
/// collided are unlikely to retry at the same moment.
fn jitter() -> Duration {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    Duration::from_millis(200 + u64::from(nanos % 800))
}

/// One event per change of the watched object; errors are logged and retried with backoff.
fn changes<K>(api: Api<K>, name: &'static str) -> impl Stream<Item = ()> + Send
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    K::DynamicType: Default,
{
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    watcher(api, config)
        .default_backoff()
        .filter_map(move |event| async move {
            match event {
                Ok(_) => Some(()),
                Err(e) => {
                    warn!(object = name, error = %e, "watching");
                    None
                }
            }
        })
}

/// Keeps the CA Secret, the serving Secret and every webhook's caBundle of
/// `kubemacpool-mutator` in agreement and rotated on time. Runs until the process ends.
pub async fn run_cert_manager(
    client: Client,
    namespace: String,
    intervals: Intervals,
) -> Result<()> {
    intervals.validate()?;
    let settings = Settings {
        namespace: namespace.clone(),
        intervals,
        labels: secret_labels(|v| std::env::var(v).ok()),
    };
    info!(
        %namespace,
        ca_rotate_s = intervals.ca_rotate.as_secs(),
        ca_overlap_s = intervals.ca_overlap.as_secs(),
        cert_rotate_s = intervals.cert_rotate.as_secs(),
        cert_overlap_s = intervals.cert_overlap.as_secs(),
        "cert manager starting"
    );
    let cluster = KubeCluster::new(client.clone(), &namespace);

    let wake = Arc::new(Notify::new());
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);
    let configs: Api<MutatingWebhookConfiguration> = Api::all(client);
    let mut events = stream::select_all([
        changes(secrets.clone(), CA_SECRET).boxed(),
        changes(secrets, SERVING_SECRET).boxed(),
        changes(configs, WEBHOOK_CONFIGURATION).boxed(),
    ]);
    let waker = wake.clone();
    let watching = tokio::spawn(async move {
        while events.next().await.is_some() {
            waker.notify_one();
        }
    });

    let mut changes_in_a_row = 0u32;
    let mut waiting_for_config = false;
    let mut failures = 0u32;
    loop {
        let now = unix_now();
        let pause = match reconcile(&cluster, &settings, now).await {
            Ok(outcome) => {
                failures = 0;
                if outcome != Outcome::NoWebhookConfiguration && waiting_for_config {
                    info!(
                        configuration = WEBHOOK_CONFIGURATION,
                        "webhook configuration found"
                    );
                    waiting_for_config = false;
                }
                match outcome {
                    Outcome::Settled { next_check } => {
                        changes_in_a_row = 0;
                        let until = next_check.map_or(RESYNC, |t| {
                            Duration::from_secs(u64::try_from(t - now).unwrap_or(0).max(1))
                        });
                        until.min(RESYNC)
                    }
                    Outcome::Changed(_) => {
                        changes_in_a_row += 1;
                        if changes_in_a_row >= MAX_CHANGES_IN_A_ROW {
                            error!(
                                changes = changes_in_a_row,
                                "certificates keep changing; something else rewrites them"
                            );
                            changes_in_a_row = 0;
                            Duration::from_secs(30)
                        } else {
                            Duration::ZERO
                        }
                    }
                    Outcome::Conflict => jitter(),
                    Outcome::NoWebhookConfiguration => {
                        if !waiting_for_config {
                            info!(
                                configuration = WEBHOOK_CONFIGURATION,
                                "waiting for the webhook configuration to exist"
                            );
                            waiting_for_config = true;
                        }
                        CONFIG_RETRY
                    }
                }
            }
            Err(e) => {
                failures = failures.saturating_add(1);
                warn!(
                    error = error_context::report(&e),
                    "reconciling certificates"
                );
                Duration::from_secs(2u64.saturating_pow(failures.min(6)).min(60))
            }
        };
        if watching.is_finished() {
            return Err(Error::WatchEnded(
                "watches of the certificates' objects".to_string(),
            ));
        }
        if !pause.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = wake.notified() => tokio::time::sleep(DEBOUNCE).await,
            }
        }
    }
}

#[cfg(test)]
mod tests;
