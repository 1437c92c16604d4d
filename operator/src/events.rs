//! Events recorded on the NetworkAddonsConfig, with the reasons the upstream operator uses, each
//! on a transition only, so a reconcile every minute does not pile up events: `Progressing` (the
//! Progressing condition turns True), `Available` (it becomes available), `Modified` (the applied
//! spec changed, the first apply included) and `Failed: <reason>` warnings (Degraded turns True,
//! or its reason changes).
//!
//! The object is cluster-scoped, so its events go to the `default` namespace. A failure to
//! record an event is logged and otherwise ignored: it never fails a reconcile.

use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Client, Resource};

use crate::spec::NetworkAddonsConfig;

/// `reportingController` of every event.
pub const REPORTER: &str = "network-addons-operator";

pub const PROGRESSING: &str = "Progressing";
pub const AVAILABLE: &str = "Available";
pub const MODIFIED: &str = "Modified";

/// The reason of a Warning event for a failure of `reason` (`Failed: FailedToValidate`).
pub fn failed(reason: &str) -> String {
    format!("Failed: {reason}")
}

/// Records events on the NetworkAddonsConfig. Cheap to clone; repeated events become one event
/// with a growing count.
#[derive(Clone)]
pub struct Events {
    recorder: Recorder,
}

impl Events {
    pub fn new(client: Client) -> Events {
        let reporter = Reporter {
            controller: REPORTER.to_string(),
            instance: std::env::var("POD_NAME").ok().filter(|n| !n.is_empty()),
        };
        Events {
            recorder: Recorder::new(client, reporter),
        }
    }

    pub async fn normal(&self, nac: &NetworkAddonsConfig, reason: &str, note: &str) {
        self.publish(nac, EventType::Normal, reason.to_string(), note)
            .await;
    }

    /// A `Failed: <reason>` warning.
    pub async fn failed(&self, nac: &NetworkAddonsConfig, reason: &str, note: &str) {
        self.publish(nac, EventType::Warning, failed(reason), note)
            .await;
    }

    async fn publish(
        &self,
        nac: &NetworkAddonsConfig,
        type_: EventType,
        reason: String,
        note: &str,
    ) {
        let event = Event {
            type_,
            action: "Reconcile".to_string(),
            note: Some(truncate(note, 1024)),
            secondary: None,
            reason: reason.clone(),
        };
        if let Err(e) = self.recorder.publish(&event, &nac.object_ref(&())).await {
            eprintln!("event {reason:?} not recorded: {e}");
        }
    }
}

/// The API server refuses event notes over 1 kB.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_notes_are_cut_on_a_character_boundary() {
        let note = "é".repeat(600);
        let cut = truncate(&note, 1024);
        assert!(cut.len() <= 1024);
        assert!(cut.ends_with("..."));
        assert_eq!(truncate("short", 1024), "short");
    }
}
