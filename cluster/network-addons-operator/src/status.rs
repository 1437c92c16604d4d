//! The NetworkAddonsConfig status: conditions `Available`, `Progressing` and `Degraded` computed
//! the way the upstream operator does (same reasons), readiness of the rendered DaemonSets and
//! Deployments, hung rollouts, and the status write itself.
//!
//! A progressing object whose status has not changed for the progress timeout (`PROGRESS_TIMEOUT`,
//! 10 minutes by default) makes the configuration Degraded (`RolloutHung`): a DaemonSet whose pods
//! crash-loop would otherwise report Progressing forever. One that waits for images that cannot
//! be pulled or for nodes that are down is not hung: it stays Progressing, naming them.
//!
//! This file holds the status as a pure function of what was observed; `workloads` the readiness
//! rules and the diagnosis of what a rollout waits for, `rollouts` the clock of hung rollouts,
//! `write` the status write. [`crate::publish`], the end of a reconcile, writes it with the
//! metrics and events.

use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

use crate::spec::{Condition, ContainerImage, NetworkAddonsConfigStatus, NotDeployed};

mod reason;
mod rollouts;
mod workloads;
mod write;

pub use reason::Reason;
pub use rollouts::{Rollout, RolloutTracker};
pub use workloads::{daemonset_progress, deployment_progress, image_pull_problems, nodes_down};
pub use write::write;

pub const AVAILABLE: &str = "Available";
pub const PROGRESSING: &str = "Progressing";
pub const DEGRADED: &str = "Degraded";

/// What this reconcile found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Health {
    /// The configuration could not be applied, for `reason` (any but `RolloutHung`).
    Failing { reason: Reason, message: String },
    /// Objects still rolling out, one line each; `hung` names those that have not changed for
    /// the progress timeout.
    Deploying {
        progressing: Vec<String>,
        hung: Vec<String>,
    },
    /// Every rendered DaemonSet and Deployment is available.
    Available,
}

/// Everything the next status is computed from.
#[derive(Clone, Debug)]
pub struct Report {
    pub health: Health,
    /// The NetworkAddonsConfig's `metadata.generation`.
    pub generation: Option<i64>,
    /// The operator's version.
    pub version: String,
    /// `None`: keep what the status has (nothing was rendered this time).
    pub containers: Option<Vec<ContainerImage>>,
    /// `None`: keep what the status has.
    pub not_deployed: Option<Vec<NotDeployed>>,
    /// Each component the spec turns on, for its own condition. `None`: keep what the status
    /// has (the configuration was not applied, so what runs is what ran before).
    pub components: Option<Vec<ComponentHealth>>,
    pub now: Timestamp,
}

/// One component as this reconcile found it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ComponentHealth {
    /// The spec key (`linuxBridge`).
    pub key: String,
    /// Its DaemonSets and Deployments still rolling out, one line each.
    pub progressing: Vec<String>,
    /// Why it is not deployed at all, when it is not.
    pub not_deployed: Option<Absent>,
}

/// Why a component the spec turns on is not deployed: its condition's reason
/// (`NotDeployed`, `UpstreamInstalled`) and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Absent {
    pub reason: String,
    pub message: String,
}

/// The type of a component's own condition: `LinuxBridgeAvailable` for `linuxBridge`, so
/// `kubectl wait --for=condition=LinuxBridgeAvailable` waits for that component alone.
pub fn component_condition_type(key: &str) -> String {
    let mut chars = key.chars();
    match chars.next() {
        Some(first) => format!("{}{}Available", first.to_ascii_uppercase(), chars.as_str()),
        None => String::new(),
    }
}

/// Whether `type_` is a component's own condition.
fn is_component_condition(type_: &str) -> bool {
    type_ != AVAILABLE && type_.ends_with(AVAILABLE)
}

/// The components' conditions.
fn component_conditions(components: &[ComponentHealth]) -> Vec<Stated> {
    components
        .iter()
        .map(|c| {
            let type_ = component_condition_type(&c.key);
            match (&c.not_deployed, c.progressing.is_empty()) {
                (Some(why), _) => cond(&type_, false, &why.reason, &why.message),
                (None, false) => cond(&type_, false, "Deploying", &c.progressing.join("\n")),
                (None, true) => cond(&type_, true, "AsExpected", ""),
            }
        })
        .collect()
}

/// The status after `report`, given the current one: conditions keep their
/// `lastTransitionTime` when their status did not change; `observedVersion` moves only when
/// everything is available; the retired `Failing` condition is dropped.
pub fn next_status(old: &NetworkAddonsConfigStatus, report: &Report) -> NetworkAddonsConfigStatus {
    let not_deployed = report
        .not_deployed
        .clone()
        .unwrap_or_else(|| old.not_deployed.clone());
    let mut all: Vec<Stated> = match &report.health {
        Health::Failing { reason, message } if reason.needs_a_spec_change() => vec![
            cond(
                AVAILABLE,
                false,
                "Failing",
                "Unable to apply desired configuration",
            ),
            cond(
                PROGRESSING,
                false,
                "InvalidConfiguration",
                "Human interaction is needed: see the Degraded condition",
            ),
            cond(DEGRADED, true, reason.as_str(), message),
        ],
        Health::Failing { reason, message } => vec![
            cond(
                AVAILABLE,
                false,
                "Failing",
                "Unable to apply desired configuration",
            ),
            cond(
                PROGRESSING,
                false,
                "Failing",
                &format!("Retrying: {message}"),
            ),
            cond(DEGRADED, true, reason.as_str(), message),
        ],
        Health::Deploying { progressing, hung } if !hung.is_empty() => vec![
            cond(
                AVAILABLE,
                false,
                "Failing",
                "A rollout is not making progress",
            ),
            cond(PROGRESSING, true, "Deploying", &progressing.join("\n")),
            cond(
                DEGRADED,
                true,
                Reason::RolloutHung.as_str(),
                &hung.join("\n"),
            ),
        ],
        Health::Deploying { progressing, .. } => vec![
            cond(AVAILABLE, false, "Startup", "Components are being deployed"),
            cond(PROGRESSING, true, "Deploying", &progressing.join("\n")),
            cond(DEGRADED, false, "AsExpected", ""),
        ],
        Health::Available => vec![
            cond(
                AVAILABLE,
                true,
                "AsExpected",
                &available_message(&not_deployed),
            ),
            cond(PROGRESSING, false, "AsExpected", ""),
            cond(DEGRADED, false, "AsExpected", ""),
        ],
    };
    let now = format_time(report.now);
    match &report.components {
        Some(components) => all.extend(component_conditions(components)),
        None => all.extend(
            old.conditions
                .iter()
                .filter(|c| is_component_condition(&c.type_))
                .map(Stated::kept),
        ),
    }
    let conditions = all
        .into_iter()
        .map(|stated| stated.at(&now, &old.conditions))
        .collect();
    NetworkAddonsConfigStatus {
        operator_version: Some(report.version.clone()),
        target_version: Some(report.version.clone()),
        observed_version: if report.health == Health::Available {
            Some(report.version.clone())
        } else {
            old.observed_version.clone()
        },
        observed_generation: report.generation.or(old.observed_generation),
        conditions,
        containers: report
            .containers
            .clone()
            .unwrap_or_else(|| old.containers.clone()),
        not_deployed,
    }
}

/// A condition as this reconcile states it, before its times.
struct Stated {
    type_: String,
    status: String,
    reason: String,
    message: String,
}

impl Stated {
    /// A component's condition as the status has it, when nothing new is known of it.
    fn kept(c: &Condition) -> Stated {
        Stated {
            type_: c.type_.clone(),
            status: c.status.clone(),
            reason: c.reason.clone(),
            message: c.message.clone(),
        }
    }

    /// The condition with its heartbeat `now`, and its transition time kept from the condition
    /// of its type in `old` when its status did not change.
    fn at(self, now: &str, old: &[Condition]) -> Condition {
        let previous = old.iter().find(|c| c.type_ == self.type_);
        let last_transition_time = match previous {
            Some(p) if p.status == self.status && p.last_transition_time.is_some() => {
                p.last_transition_time.clone()
            }
            _ => Some(now.to_string()),
        };
        Condition {
            type_: self.type_,
            status: self.status,
            reason: self.reason,
            message: self.message,
            last_heartbeat_time: Some(now.to_string()),
            last_transition_time,
        }
    }
}

fn cond(type_: &str, status: bool, reason: &str, message: &str) -> Stated {
    let status = if status { "True" } else { "False" };
    Stated {
        type_: type_.to_string(),
        status: status.to_string(),
        reason: reason.to_string(),
        message: message.to_string(),
    }
}

fn available_message(not_deployed: &[NotDeployed]) -> String {
    if not_deployed.is_empty() {
        return "All components are available".to_string();
    }
    let skipped: Vec<String> = not_deployed
        .iter()
        .map(|n| format!("{} ({})", n.component, n.reason))
        .collect();
    format!(
        "All deployed components are available; not deployed: {}",
        skipped.join("; ")
    )
}

/// RFC 3339 in whole seconds, as the API server writes times.
pub fn format_time(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Whether two statuses differ in more than the heartbeat times.
pub fn same_ignoring_heartbeat(
    a: &NetworkAddonsConfigStatus,
    b: &NetworkAddonsConfigStatus,
) -> bool {
    let strip = |s: &NetworkAddonsConfigStatus| {
        let mut s = s.clone();
        for c in &mut s.conditions {
            c.last_heartbeat_time = None;
        }
        s
    };
    strip(a) == strip(b)
}

/// The condition of `type_` in `status`, if its status is `True`.
pub fn is_true(status: &NetworkAddonsConfigStatus, type_: &str) -> bool {
    status
        .conditions
        .iter()
        .any(|c| c.type_ == type_ && c.status == "True")
}

/// Whether reporting Degraded with `reason` is news: Degraded was not True, or was True for
/// another reason. A Warning event is recorded only then.
pub fn degraded_anew(before: &NetworkAddonsConfigStatus, reason: Reason) -> bool {
    !before
        .conditions
        .iter()
        .any(|c| c.type_ == DEGRADED && c.status == "True" && c.reason == reason.as_str())
}

/// Every container and init container of every DaemonSet and Deployment in `objects`.
pub fn containers(objects: &[Value]) -> Vec<ContainerImage> {
    let mut out = Vec::new();
    for o in objects {
        let kind = o["kind"].as_str().unwrap_or_default();
        if kind != "DaemonSet" && kind != "Deployment" {
            continue;
        }
        let parent = o["metadata"]["name"].as_str().unwrap_or_default();
        let pod = &o["spec"]["template"]["spec"];
        let Ok(pod) = serde_json::from_value::<PodSpec>(pod.clone()) else {
            continue;
        };
        let all = pod
            .containers
            .iter()
            .chain(pod.init_containers.iter().flatten());
        for c in all {
            out.push(ContainerImage {
                parent_kind: kind.to_string(),
                parent_name: parent.to_string(),
                name: c.name.clone(),
                image: c.image.clone().unwrap_or_default(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests;
