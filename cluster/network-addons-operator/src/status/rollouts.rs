//! When each progressing object's status last changed, kept between reconciles: what tells a
//! hung rollout (pods crash-looping) from one still making progress.

use std::collections::HashMap;
use std::sync::Mutex;

use k8s_openapi::jiff::{SignedDuration, Timestamp};

use crate::apply::Identity;

/// A progressing object as the tracker sees it.
#[derive(Clone, Debug)]
pub struct Rollout {
    /// Which object: the tracker's key, so rewording `line` never restarts its clock.
    pub object: Identity,
    /// What the status says about it.
    pub line: String,
    /// Changes whenever the object's status or generation does.
    pub fingerprint: String,
}

/// When each progressing object's status last changed, kept between reconciles.
#[derive(Default)]
pub struct RolloutTracker {
    seen: Mutex<HashMap<Identity, (String, Timestamp)>>,
}

impl RolloutTracker {
    /// Records this reconcile's progressing objects and returns the lines of those whose
    /// fingerprint has not changed for `timeout`. Objects no longer progressing are forgotten.
    pub fn observe(
        &self,
        progressing: &[Rollout],
        now: Timestamp,
        timeout: std::time::Duration,
    ) -> Vec<String> {
        let timeout = SignedDuration::try_from(timeout).unwrap_or(SignedDuration::MAX);
        let mut seen = match self.seen.lock() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        };
        seen.retain(|object, _| progressing.iter().any(|r| r.object == *object));
        let mut hung = Vec::new();
        for rollout in progressing {
            let entry = seen
                .entry(rollout.object.clone())
                .or_insert_with(|| (rollout.fingerprint.clone(), now));
            if entry.0 != rollout.fingerprint {
                *entry = (rollout.fingerprint.clone(), now);
            }
            if now.duration_since(entry.1) >= timeout {
                hung.push(format!(
                    "{}; its status has not changed for {} minutes",
                    rollout.line,
                    now.duration_since(entry.1).as_mins()
                ));
            }
        }
        hung
    }

    pub fn clear(&self) {
        match self.seen.lock() {
            Ok(mut s) => s.clear(),
            Err(poisoned) => poisoned.into_inner().clear(),
        }
    }
}

#[cfg(test)]
mod tests;
