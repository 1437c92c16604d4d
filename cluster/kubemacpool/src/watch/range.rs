//! The range ConfigMap, applied as it changes; a range that cannot be used is an event.

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference, Pod};
use kube::runtime::watcher::{self, watcher};
use kube::runtime::WatchStreamExt;
use kube::{Api, Client, ResourceExt};
use tracing::{info, warn};

use crate::events::{self, EventName};
use crate::range::{MacRange, RangeError};
use crate::state::Shared;

pub const RANGE_CONFIG: &str = "kubemacpool-mac-range-config";

/// Follows the range ConfigMap and applies each new range. A range that cannot be used leaves
/// the one before it serving, and says why in a Warning event on this manager's pod, as
/// upstream does: `InvalidRange` when an end is missing or not a MAC, `UpdateFailed` when the
/// ends are MACs the pool cannot use (multicast, or not in order).
pub async fn follow_range(client: Client, namespace: String, pod: String, shared: Arc<Shared>) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    let config = watcher::Config::default().fields(&format!("metadata.name={RANGE_CONFIG}"));
    let mut events = watcher(api, config)
        .default_backoff()
        .applied_objects()
        .boxed();
    // The ends last refused: a relist that brings them again is not a second event.
    let mut refused: Option<(String, String)> = None;
    loop {
        match events.try_next().await {
            Ok(Some(cm)) => {
                let data = cm.data.unwrap_or_default();
                let (start, end) = (
                    data.get("RANGE_START").cloned().unwrap_or_default(),
                    data.get("RANGE_END").cloned().unwrap_or_default(),
                );
                match MacRange::parse(&start, &end) {
                    Ok(range) => {
                        refused = None;
                        let dropped = shared.pool().set_range(range, crate::random_u64());
                        if !dropped.is_empty() {
                            if let Err(e) = shared.claims.release(&dropped).await {
                                warn!(error = %e, "giving back the blocks outside the new range");
                            }
                        }
                        info!(%range, "range");
                    }
                    Err(e) => {
                        warn!(error = %e, "{RANGE_CONFIG} keeps the range before it");
                        if refused.as_ref() != Some(&(start.clone(), end.clone())) {
                            refused = Some((start, end));
                            warn_on_own_pod(&client, &namespace, &pod, &e).await;
                        }
                    }
                }
            }
            Ok(None) => return,
            Err(e) => warn!(error = %e, "watching {RANGE_CONFIG}"),
        }
    }
}

/// A Warning event on this manager's pod, saying why a range was refused.
async fn warn_on_own_pod(client: &Client, namespace: &str, pod: &str, why: &RangeError) {
    let reason = match why {
        RangeError::NotAMac { .. } => "InvalidRange",
        RangeError::Multicast { .. } | RangeError::Order { .. } => "UpdateFailed",
    };
    // The pod's UID, which `kubectl describe` selects its events by.
    let uid = match Api::<Pod>::namespaced(client.clone(), namespace)
        .get_metadata(pod)
        .await
    {
        Ok(p) => p.uid(),
        Err(e) => {
            warn!(error = %e, "reading this manager's pod for a {reason} event");
            None
        }
    };
    let about = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: Some(namespace.into()),
        name: Some(pod.into()),
        uid,
        ..ObjectReference::default()
    };
    let message = format!("{RANGE_CONFIG} keeps the range before it: {why}");
    let event = events::warning(
        about,
        EventName::Generated(format!("{pod}.")),
        reason,
        message,
    );
    if let Err(e) = events::record(client, &event).await {
        warn!(error = %e, "recording a {reason} event");
    }
}
