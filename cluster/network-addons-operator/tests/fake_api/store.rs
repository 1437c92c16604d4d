//! The stored objects, and what tests do to them behind the operator's back: read them, put
//! them as someone else would, remove them, set their status as their controller would. Every
//! write stamps the system fields.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::failures::Injected;
use super::log::Seen;
use super::FakeApi;

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Key {
    pub(super) group_version: String,
    pub(super) plural: String,
    pub(super) namespace: String,
    pub(super) name: String,
}

#[derive(Default)]
pub(super) struct State {
    pub(super) objects: BTreeMap<Key, Value>,
    pub(super) seen: Vec<Seen>,
    pub(super) revision: u64,
    pub(super) uids: u64,
    pub(super) injected: Vec<Injected>,
    /// Objects being deleted, with the requests left until the garbage collector removes them.
    pub(super) terminating: Vec<(Key, usize)>,
}

impl FakeApi {
    /// The stored object, if any (`namespace` empty for cluster-scoped objects).
    pub fn get(
        &self,
        group_version: &str,
        plural: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Value> {
        self.lock()
            .objects
            .get(&Key {
                group_version: group_version.to_string(),
                plural: plural.to_string(),
                namespace: namespace.to_string(),
                name: name.to_string(),
            })
            .cloned()
    }

    pub fn daemonset(&self, namespace: &str, name: &str) -> Option<Value> {
        self.get("apps/v1", "daemonsets", namespace, name)
    }

    pub fn configmap(&self, namespace: &str, name: &str) -> Option<Value> {
        self.get("v1", "configmaps", namespace, name)
    }

    /// Every stored object of a kind, in all namespaces.
    pub fn list(&self, group_version: &str, plural: &str) -> Vec<Value> {
        self.lock()
            .objects
            .iter()
            .filter(|(k, _)| k.group_version == group_version && k.plural == plural)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// Stores an object as if someone else had created it.
    pub fn put(&self, group_version: &str, plural: &str, object: Value) {
        let mut state = self.lock();
        let key = Key {
            group_version: group_version.to_string(),
            plural: plural.to_string(),
            namespace: object["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            name: object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        };
        let old = state.objects.get(&key).cloned();
        let stored = state.stamp(old.as_ref(), object);
        state.objects.insert(key, stored);
    }

    /// Removes an object at once, as if someone else had deleted it.
    pub fn remove(&self, group_version: &str, plural: &str, namespace: &str, name: &str) {
        self.lock().objects.remove(&Key {
            group_version: group_version.to_string(),
            plural: plural.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        });
    }

    /// Replaces the status of a stored object, as its controller would.
    pub fn set_status(
        &self,
        group_version: &str,
        plural: &str,
        namespace: &str,
        name: &str,
        status: Value,
    ) {
        let Some(mut object) = self.get(group_version, plural, namespace, name) else {
            panic!("no {plural} {namespace}/{name} to set the status of");
        };
        object["status"] = status;
        let mut state = self.lock();
        state.revision += 1;
        object["metadata"]["resourceVersion"] = json!(state.revision.to_string());
        state.objects.insert(
            Key {
                group_version: group_version.to_string(),
                plural: plural.to_string(),
                namespace: namespace.to_string(),
                name: name.to_string(),
            },
            object,
        );
    }
}

impl State {
    /// System fields: uid and creation time kept from `old` (or made), a new resourceVersion,
    /// the generation bumped when the spec changed.
    pub(super) fn stamp(&mut self, old: Option<&Value>, mut object: Value) -> Value {
        self.revision += 1;
        if !object["metadata"].is_object() {
            object["metadata"] = json!({});
        }
        // Core and RBAC objects have no generation: a change shows in their resourceVersion.
        let generation = !matches!(
            object["apiVersion"].as_str(),
            Some("v1" | "rbac.authorization.k8s.io/v1")
        );
        let meta = &mut object["metadata"];
        meta["resourceVersion"] = json!(self.revision.to_string());
        match old {
            Some(old) => {
                meta["uid"] = old["metadata"]["uid"].clone();
                meta["creationTimestamp"] = old["metadata"]["creationTimestamp"].clone();
                if generation {
                    let before = old["metadata"]["generation"].as_i64().unwrap_or(1);
                    let changed = old.get("spec") != object.get("spec");
                    object["metadata"]["generation"] =
                        json!(if changed { before + 1 } else { before });
                }
            }
            None => {
                self.uids += 1;
                meta["uid"] = json!(format!("00000000-0000-0000-0000-{:012}", self.uids));
                meta["creationTimestamp"] = json!("2025-01-01T00:00:00Z");
                if generation {
                    meta["generation"] = json!(1);
                }
            }
        }
        object
    }
}
