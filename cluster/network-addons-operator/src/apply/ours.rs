//! What this process last applied of each object and what the server returned then: an object
//! still as rendered and unchanged on the server since is not applied again.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use kube::api::DynamicObject;
use serde_json::Value;

use super::Identity;

/// What this process last applied of each object, for the NetworkAddonsConfig whose uid is
/// `owner`: an object still as rendered and as the server returned it then is not applied
/// again (see [`Ours::is_current`]).
#[derive(Debug, Default)]
pub struct Ours {
    state: Mutex<OursState>,
}

#[derive(Debug, Default)]
struct OursState {
    owner: String,
    applied: HashMap<Identity, Record>,
}

#[derive(Clone, Debug)]
struct Record {
    /// The rendered object applied.
    rendered: Value,
    /// The object as the apply returned it.
    live: Live,
}

/// What tells whether someone changed an object on the server since: its uid, and where the
/// server keeps a generation (a spec change bumps it, a status write does not), that and the
/// labels, annotations and owners; else its resourceVersion. (A Deployment's revision
/// annotation, which its controller sets after a rollout, makes one more apply, a no-op.)
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Live {
    pub uid: String,
    pub version: String,
}

impl Live {
    pub fn of(object: &DynamicObject) -> Live {
        let meta = &object.metadata;
        Live {
            uid: meta.uid.clone().unwrap_or_default(),
            version: match meta.generation {
                Some(g) if g > 0 => format!(
                    "generation {g} {}",
                    serde_json::json!([meta.labels, meta.annotations, meta.owner_references])
                ),
                _ => format!(
                    "resourceVersion {}",
                    meta.resource_version.as_deref().unwrap_or_default()
                ),
            },
        }
    }
}

impl Ours {
    fn lock(&self) -> std::sync::MutexGuard<'_, OursState> {
        match self.state.lock() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Forgets every object when the owner changed: a NetworkAddonsConfig deleted and created
    /// again had its objects garbage-collected.
    pub fn set_owner(&self, owner_uid: &str) {
        let mut state = self.lock();
        if state.owner != owner_uid {
            state.owner = owner_uid.to_string();
            state.applied.clear();
        }
    }

    /// Forgets the objects a render no longer contains: created again later, they are new.
    pub fn retain(&self, keep: &HashSet<Identity>) {
        self.lock().applied.retain(|id, _| keep.contains(id));
    }

    /// Forgets everything: the next reconcile applies every object.
    pub fn clear(&self) {
        self.lock().applied.clear();
    }

    /// Whether `object` was applied by this process as rendered now, and `live` (the object on
    /// the server now, `None` when it is not there) is what that apply returned.
    pub fn is_current(&self, object: &Value, live: Option<&Live>) -> bool {
        let state = self.lock();
        let Some(record) = state.applied.get(&Identity::of(object)) else {
            return false;
        };
        record.rendered == *object && live == Some(&record.live)
    }

    /// Whether this process has applied (or left as it was) the object since it started.
    pub fn knows(&self, id: &Identity) -> bool {
        self.lock().applied.contains_key(id)
    }

    pub(super) fn uid(&self, id: &Identity) -> Option<String> {
        self.lock().applied.get(id).map(|r| r.live.uid.clone())
    }

    /// Records `applied` as what the apply of `rendered` returned.
    pub fn remember(&self, rendered: &Value, applied: &DynamicObject) {
        let record = Record {
            rendered: rendered.clone(),
            live: Live::of(applied),
        };
        self.lock().applied.insert(Identity::of(rendered), record);
    }
}
