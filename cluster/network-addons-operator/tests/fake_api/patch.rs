//! JSON merge patches (RFC 7386), on the object or its status.

use serde_json::{Map, Value};

use super::answers::{not_found, status};
use super::request::Target;
use super::store::State;
use super::writes::precondition;

impl State {
    pub(super) fn merge(&mut self, t: &Target, name: &str, body: &Value) -> (u16, Value) {
        let k = t.key(name);
        let Some(old) = self.objects.get(&k).cloned() else {
            return not_found(t, name);
        };
        if let Some(conflict) = precondition(&old, body, t, name) {
            return conflict;
        }
        let mut object = old.clone();
        let mut patch = body.clone();
        if let Some(m) = patch.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
        }
        match t.subresource.as_deref() {
            Some("status") => {
                merge_patch(&mut object["status"], &patch["status"]);
            }
            Some(other) => return status(404, "NotFound", format!("no subresource {other}")),
            None => {
                // the status moves only through its subresource
                if let Some(m) = patch.as_object_mut() {
                    m.remove("status");
                }
                merge_patch(&mut object, &patch);
            }
        }
        let stored = self.stamp(Some(&old), object);
        self.objects.insert(k, stored.clone());
        (200, stored)
    }
}

/// RFC 7386: objects merge, null removes, anything else replaces.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Some(target) = target.as_object_mut() else {
        return;
    };
    for (k, v) in patch {
        if v.is_null() {
            target.remove(k);
        } else {
            merge_patch(target.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}
