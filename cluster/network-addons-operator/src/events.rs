//! Events recorded on the NetworkAddonsConfig, with the reasons the upstream operator uses, each
//! on a transition only, so a reconcile every minute does not pile up events: `Progressing` (the
//! Progressing condition turns True), `Available` (it becomes available), `Modified` (the applied
//! spec changed, the first apply included) and `Failed: <reason>` warnings (Degraded turns True,
//! or its reason changes).
//!
//! They are core/v1 Events in the `default` namespace, written the way client-go's recorder
//! (the upstream operator's) writes them: no `eventTime`; `firstTimestamp`, `lastTimestamp`,
//! `count` and `source.component` set. That is the only form every supported API server accepts
//! for a cluster-scoped object: Kubernetes 1.20 validates an event that has an `eventTime` (an
//! events.k8s.io one) about a cluster-scoped object only in `kube-system`, while a legacy one
//! is accepted in `default`, where `kubectl get events` and the upstream README look. The same
//! event again (same type, reason and message) is counted on the existing Event (`count`,
//! `lastTimestamp`) instead of creating another, as client-go does.
//!
//! A failure to record an event is logged and otherwise ignored: it never fails a reconcile.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client, Resource, ResourceExt};
use serde_json::json;

use crate::error::describe;
use crate::spec::NetworkAddonsConfig;

/// `source.component` and `reportingComponent` of every event.
pub const REPORTER: &str = "network-addons-operator";

/// Where the events of a cluster-scoped object go, as client-go puts them.
pub const EVENT_NAMESPACE: &str = "default";

pub const PROGRESSING: &str = "Progressing";
pub const AVAILABLE: &str = "Available";
pub const MODIFIED: &str = "Modified";

/// At most this many distinct events are remembered for counting repeats.
const REMEMBERED: usize = 256;

/// The API server refuses event messages over 1 kB in the newer events API; the legacy one is
/// kept to the same length.
const MESSAGE_LIMIT: usize = 1024;

/// The reason of a Warning event for a failure of `reason` (`Failed: FailedToValidate`).
pub fn failed(reason: &str) -> String {
    format!("Failed: {reason}")
}

/// What makes two events the same one, counted rather than repeated.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Key {
    uid: String,
    type_: String,
    reason: String,
    message: String,
}

#[derive(Clone, Debug)]
struct Seen {
    key: Key,
    name: String,
    count: i32,
}

#[derive(Default)]
struct Memory {
    seen: VecDeque<Seen>,
    /// The last name given, in nanoseconds: names stay unique even within one nanosecond.
    last_name_nanos: i128,
}

/// Records events on the NetworkAddonsConfig. Cheap to clone.
#[derive(Clone)]
pub struct Events {
    client: Client,
    /// `reportingInstance`: the operator's pod name.
    instance: String,
    memory: Arc<Mutex<Memory>>,
}

impl Events {
    /// `instance` names this operator process (its pod's name) in every event.
    pub fn new(client: Client, instance: &str) -> Events {
        let instance = if instance.is_empty() {
            REPORTER.to_string()
        } else {
            instance.to_string()
        };
        Events {
            client,
            instance,
            memory: Arc::default(),
        }
    }

    pub async fn normal(
        &self,
        nac: &NetworkAddonsConfig,
        reason: &str,
        note: &str,
        now: Timestamp,
    ) {
        self.publish(nac, "Normal", reason, note, now).await;
    }

    /// A `Failed: <reason>` warning.
    pub async fn failed(
        &self,
        nac: &NetworkAddonsConfig,
        reason: &str,
        note: &str,
        now: Timestamp,
    ) {
        self.publish(nac, "Warning", &failed(reason), note, now)
            .await;
    }

    fn memory(&self) -> std::sync::MutexGuard<'_, Memory> {
        match self.memory.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    async fn publish(
        &self,
        nac: &NetworkAddonsConfig,
        type_: &str,
        reason: &str,
        note: &str,
        now: Timestamp,
    ) {
        let key = Key {
            uid: nac.uid().unwrap_or_default(),
            type_: type_.to_string(),
            reason: reason.to_string(),
            message: truncate(note, MESSAGE_LIMIT),
        };
        let api: Api<Event> = Api::namespaced(self.client.clone(), EVENT_NAMESPACE);
        let repeat = self.remembered(&key);
        if let Some(seen) = repeat {
            let count = seen.count + 1;
            let patch = json!({ "count": count, "lastTimestamp": Time(now) });
            match api
                .patch(&seen.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {
                    self.remember(Seen { count, ..seen });
                    tracing::debug!(%reason, count, "event counted again");
                    return;
                }
                // expired (events live an hour by default) or deleted: record it anew
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => {
                    tracing::warn!(%reason, error = %describe(&e), "event not recorded");
                    return;
                }
            }
        }
        let name = self.new_name(&nac.name_any());
        let event = build_event(nac, &name, &key, &self.instance, now);
        match api.create(&PostParams::default(), &event).await {
            Ok(_) => {
                tracing::debug!(%reason, event = %name, "event recorded");
                self.remember(Seen {
                    key,
                    name,
                    count: 1,
                });
            }
            Err(e) => tracing::warn!(%reason, error = %describe(&e), "event not recorded"),
        }
    }

    fn remembered(&self, key: &Key) -> Option<Seen> {
        self.memory().seen.iter().find(|s| s.key == *key).cloned()
    }

    fn remember(&self, seen: Seen) {
        let mut memory = self.memory();
        memory.seen.retain(|s| s.key != seen.key);
        memory.seen.push_back(seen);
        while memory.seen.len() > REMEMBERED {
            memory.seen.pop_front();
        }
    }

    /// `<object>.<hex nanoseconds>`, as client-go names events, unique in this process.
    fn new_name(&self, object: &str) -> String {
        let mut memory = self.memory();
        let nanos = Timestamp::now()
            .as_nanosecond()
            .max(memory.last_name_nanos + 1);
        memory.last_name_nanos = nanos;
        format!("{object}.{nanos:x}")
    }
}

/// The core/v1 Event about `nac`, first seen `now`.
fn build_event(
    nac: &NetworkAddonsConfig,
    name: &str,
    key: &Key,
    instance: &str,
    now: Timestamp,
) -> Event {
    Event {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(EVENT_NAMESPACE.to_string()),
            ..ObjectMeta::default()
        },
        involved_object: involved_object(nac),
        type_: Some(key.type_.clone()),
        reason: Some(key.reason.clone()),
        message: Some(key.message.clone()),
        source: Some(EventSource {
            component: Some(REPORTER.to_string()),
            host: None,
        }),
        first_timestamp: Some(Time(now)),
        last_timestamp: Some(Time(now)),
        count: Some(1),
        reporting_component: Some(REPORTER.to_string()),
        reporting_instance: Some(instance.to_string()),
        ..Event::default()
    }
}

/// The reference to the cluster-scoped NetworkAddonsConfig: no namespace.
fn involved_object(nac: &NetworkAddonsConfig) -> ObjectReference {
    ObjectReference {
        api_version: Some(NetworkAddonsConfig::api_version(&()).to_string()),
        kind: Some(NetworkAddonsConfig::kind(&()).to_string()),
        name: Some(nac.name_any()),
        uid: nac.uid(),
        ..ObjectReference::default()
    }
}

/// `s` cut to at most `max` bytes on a character boundary, ending in `...` when cut.
fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max - 3;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

/// The Event [`Events`] creates for a first occurrence, for tests of what the API server is
/// sent.
pub fn example_event(nac: &NetworkAddonsConfig, type_: &str, reason: &str, note: &str) -> Event {
    let key = Key {
        uid: nac.uid().unwrap_or_default(),
        type_: type_.to_string(),
        reason: reason.to_string(),
        message: truncate(note, MESSAGE_LIMIT),
    };
    build_event(
        nac,
        "cluster.1",
        &key,
        "network-addons-operator-0",
        Timestamp::UNIX_EPOCH,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nac() -> NetworkAddonsConfig {
        let mut nac = NetworkAddonsConfig::new("cluster", Default::default());
        nac.metadata.uid = Some("u-1".to_string());
        nac
    }

    #[test]
    fn long_notes_are_cut_on_a_character_boundary() {
        let note = "é".repeat(600);
        let cut = truncate(&note, 1024);
        assert!(cut.len() <= 1024);
        assert!(cut.ends_with("..."));
        assert_eq!(truncate("short", 1024), "short");
    }

    /// Kubernetes 1.20's legacyValidateEvent (pkg/apis/core/validation/events.go) for a
    /// core/v1 Event: without an eventTime, an event about an object without a namespace must
    /// be in "" or "default"; with one, only "kube-system" is accepted and reportingController,
    /// reportingInstance and action are required.
    fn accepted_by_kubernetes_1_20(e: &Event) -> Result<(), String> {
        let namespace = e.metadata.namespace.as_deref().unwrap_or_default();
        let involved = e.involved_object.namespace.as_deref().unwrap_or_default();
        if e.event_time.is_none() {
            let ok = if involved.is_empty() {
                namespace.is_empty() || namespace == "default"
            } else {
                namespace == involved
            };
            if !ok {
                return Err(format!(
                    "involvedObject.namespace: Invalid value: {involved:?}: does not match event.namespace"
                ));
            }
            return Ok(());
        }
        if involved.is_empty() && namespace != "kube-system" {
            return Err(format!(
                "involvedObject.namespace: Invalid value: {involved:?}: does not match event.namespace"
            ));
        }
        for (field, value) in [
            ("reportingController", &e.reporting_component),
            ("reportingInstance", &e.reporting_instance),
            ("action", &e.action),
        ] {
            if value.as_deref().unwrap_or_default().is_empty() {
                return Err(format!("{field}: Required value"));
            }
        }
        Ok(())
    }

    #[test]
    fn the_event_is_a_legacy_core_event_in_default_that_kubernetes_1_20_accepts() {
        let e = example_event(&nac(), "Warning", "Failed: FailedToApply", "apply x: y");
        assert_eq!(accepted_by_kubernetes_1_20(&e), Ok(()));
        assert_eq!(e.metadata.namespace.as_deref(), Some("default"));
        assert!(
            e.event_time.is_none(),
            "an eventTime makes it a new-style event"
        );
        assert!(e.series.is_none() && e.action.is_none());
        assert_eq!(e.count, Some(1));
        assert!(e.first_timestamp.is_some() && e.last_timestamp.is_some());
        assert_eq!(
            e.source.as_ref().and_then(|s| s.component.as_deref()),
            Some(REPORTER)
        );
        let o = &e.involved_object;
        assert_eq!(o.kind.as_deref(), Some("NetworkAddonsConfig"));
        assert_eq!(
            o.api_version.as_deref(),
            Some("networkaddonsoperator.network.kubevirt.io/v1")
        );
        assert_eq!(o.name.as_deref(), Some("cluster"));
        assert_eq!(o.uid.as_deref(), Some("u-1"));
        assert_eq!(o.namespace, None);
        assert_eq!(e.type_.as_deref(), Some("Warning"));
        assert_eq!(e.reason.as_deref(), Some("Failed: FailedToApply"));
    }

    #[test]
    fn the_rule_that_refused_the_previous_events_is_modelled() {
        // what kube's events.k8s.io recorder sent: an eventTime, in the default namespace
        let mut e = example_event(&nac(), "Normal", "Available", "ok");
        e.event_time = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
            Timestamp::UNIX_EPOCH,
        ));
        assert!(accepted_by_kubernetes_1_20(&e)
            .is_err_and(|m| m.contains("does not match event.namespace")));
    }
}
