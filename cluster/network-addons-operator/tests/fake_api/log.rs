//! The request log: every request answered, in order, and what tests read from it.

use std::collections::BTreeMap;

use serde_json::Value;

use super::request::parse_path;
use super::FakeApi;

/// One request the server answered.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub query: BTreeMap<String, String>,
    pub content_type: String,
    pub body: Value,
    pub code: u16,
}

impl Seen {
    /// A write: anything but a read or a watch.
    pub fn is_write(&self) -> bool {
        self.method != "GET" && self.method != "WATCH"
    }

    pub fn is_status(&self) -> bool {
        self.path.ends_with("/status")
    }

    pub fn is_event(&self) -> bool {
        self.path.contains("/events")
    }
}

impl FakeApi {
    /// Every request answered so far, in order.
    pub fn requests(&self) -> Vec<Seen> {
        self.lock().seen.clone()
    }

    pub fn clear_requests(&self) {
        self.lock().seen.clear();
    }

    /// `(path, propagationPolicy)` of every DELETE answered, in order (the policy empty when the
    /// request named none).
    pub fn deletes(&self) -> Vec<(String, String)> {
        self.requests()
            .iter()
            .filter(|s| s.method == "DELETE")
            .map(|s| {
                let policy = s.body["propagationPolicy"].as_str().unwrap_or_default();
                (s.path.clone(), policy.to_string())
            })
            .collect()
    }

    /// `(type, reason)` of every event written (created, or counted again), in order.
    pub fn events(&self) -> Vec<(String, String)> {
        self.requests()
            .iter()
            .filter(|s| s.is_event() && (s.method == "POST" || s.method == "PATCH") && s.code < 300)
            .map(|s| {
                // a PATCH counts an event again: its type and reason are the stored event's
                let event = match (s.method.as_str(), parse_path(&s.path)) {
                    ("PATCH", Some(t)) => self
                        .get(
                            &t.group_version,
                            &t.plural,
                            t.namespace.as_deref().unwrap_or_default(),
                            t.name.as_deref().unwrap_or_default(),
                        )
                        .unwrap_or_default(),
                    _ => s.body.clone(),
                };
                (
                    event["type"].as_str().unwrap_or_default().to_string(),
                    event["reason"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    }

    /// Every stored core/v1 Event, in all namespaces.
    pub fn stored_events(&self) -> Vec<Value> {
        self.list("v1", "events")
    }
}
