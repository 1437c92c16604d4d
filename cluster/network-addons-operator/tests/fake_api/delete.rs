//! DELETE: at once, or, with `propagationPolicy` `Orphan` or `Foreground`, marked as
//! terminating until the garbage collector would be done with it.

use serde_json::{json, Value};

use super::answers::{not_found, status};
use super::request::Target;
use super::store::State;

/// How many requests an object deleted with finalizers stays after its DELETE.
pub const GC_REQUESTS: usize = 2;

impl State {
    pub(super) fn delete(&mut self, t: &Target, name: &str, body: &Value) -> (u16, Value) {
        let k = t.key(name);
        let Some(mut object) = self.objects.get(&k).cloned() else {
            return not_found(t, name);
        };
        let finalizer = match body["propagationPolicy"].as_str() {
            Some("Orphan") => "orphan",
            Some("Foreground") => "foregroundDeletion",
            _ => {
                self.objects.remove(&k);
                let (code, mut answer) = status(200, "", String::new());
                answer["details"] = json!({"name": name, "kind": t.plural});
                return (code, answer);
            }
        };
        if !self.terminating.iter().any(|(t, _)| *t == k) {
            object["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:00:00Z");
            object["metadata"]["finalizers"] = json!([finalizer]);
            self.revision += 1;
            object["metadata"]["resourceVersion"] = json!(self.revision.to_string());
            self.objects.insert(k.clone(), object.clone());
            self.terminating.push((k, GC_REQUESTS));
        }
        (200, object)
    }

    /// One request has passed: objects whose deletion is done go.
    pub(super) fn collect_garbage(&mut self) {
        for (_, left) in &mut self.terminating {
            *left = left.saturating_sub(1);
        }
        let (gone, left): (Vec<_>, Vec<_>) = std::mem::take(&mut self.terminating)
            .into_iter()
            .partition(|(_, left)| *left == 0);
        self.terminating = left;
        for (key, _) in gone {
            self.objects.remove(&key);
        }
    }
}
