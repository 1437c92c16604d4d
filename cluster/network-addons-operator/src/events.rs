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
mod tests;
