//! POST and PUT: create, with the events 1.20 accepts; replace, on the resourceVersion named.
//! A write to the main resource leaves the status as it was.

use serde_json::{json, Value};

use super::answers::{not_found, status};
use super::events::invalid_event;
use super::request::Target;
use super::store::State;

impl State {
    pub(super) fn create(&mut self, t: &Target, body: &Value) -> (u16, Value) {
        if t.plural == "events" {
            if let Some(refused) = invalid_event(t, body) {
                return refused;
            }
        }
        let Some(name) = body["metadata"]["name"].as_str() else {
            return status(422, "Invalid", "metadata.name: Required value".to_string());
        };
        let k = t.key(name);
        if self.objects.contains_key(&k) {
            return status(
                409,
                "AlreadyExists",
                format!("{} \"{name}\" already exists", t.plural),
            );
        }
        let mut object = body.clone();
        if let Some(ns) = &t.namespace {
            object["metadata"]["namespace"] = json!(ns);
        }
        let stored = self.stamp(None, object);
        self.objects.insert(k, stored.clone());
        (201, stored)
    }

    pub(super) fn replace(&mut self, t: &Target, name: &str, body: &Value) -> (u16, Value) {
        let k = t.key(name);
        let Some(old) = self.objects.get(&k).cloned() else {
            return not_found(t, name);
        };
        if let Some(conflict) = precondition(&old, body, t, name) {
            return conflict;
        }
        let mut object = body.clone();
        if t.subresource.as_deref() == Some("status") {
            let mut whole = old.clone();
            whole["status"] = object["status"].take();
            object = whole;
        } else {
            keep_status(&old, &mut object);
        }
        let stored = self.stamp(Some(&old), object);
        self.objects.insert(k, stored.clone());
        (200, stored)
    }
}

/// 409 when the body names a resourceVersion other than the stored one.
pub(super) fn precondition(
    old: &Value,
    body: &Value,
    t: &Target,
    name: &str,
) -> Option<(u16, Value)> {
    let wanted = body["metadata"]["resourceVersion"].as_str()?;
    if wanted.is_empty() || Some(wanted) == old["metadata"]["resourceVersion"].as_str() {
        return None;
    }
    Some(status(
        409,
        "Conflict",
        format!(
            "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
            t.plural
        ),
    ))
}

/// Writes to the main resource leave the status as it was.
pub(super) fn keep_status(old: &Value, object: &mut Value) {
    if let Some(m) = object.as_object_mut() {
        match old.get("status") {
            Some(s) => {
                m.insert("status".to_string(), s.clone());
            }
            None => {
                m.remove("status");
            }
        }
    }
}
