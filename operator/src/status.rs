//! The NetworkAddonsConfig status: conditions `Available`, `Progressing` and `Degraded` computed
//! the way the upstream operator does (same reasons), readiness of the rendered DaemonSets and
//! Deployments, hung rollouts, and the status write itself.
//!
//! A progressing object whose status has not changed for the progress timeout (`PROGRESS_TIMEOUT`,
//! 10 minutes by default) makes the configuration Degraded (`RolloutHung`): a DaemonSet whose pods
//! crash-loop would otherwise report Progressing forever. One that waits for images that cannot
//! be pulled or for nodes that are down is not hung: it stays Progressing, naming them.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Patch, PatchParams};
use kube::{Api, Client, ResourceExt};
use serde_json::{json, Map, Value};

use crate::apply::Identity;
use crate::error::{Error, Result};
use crate::spec::{
    Condition, ContainerImage, NetworkAddonsConfig, NetworkAddonsConfigStatus, NotDeployed,
};

pub const AVAILABLE: &str = "Available";
pub const PROGRESSING: &str = "Progressing";
pub const DEGRADED: &str = "Degraded";

/// Status writes retried on a conflict, 50 ms apart.
const WRITE_ATTEMPTS: usize = 10;
const WRITE_RETRY_DELAY: Duration = Duration::from_millis(50);

/// The failures only a change of the spec resolves: reported as an invalid configuration that
/// needs human interaction. Every other failure is retried by the operator.
pub const NEEDS_A_SPEC_CHANGE: [&str; 2] = ["FailedToValidate", "UnsafeChange"];

/// What this reconcile found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Health {
    /// The configuration could not be applied: `reason` is one of `FailedToValidate`,
    /// `UnsafeChange`, `FailedToGetPreviousConfigSpec`, `FailedToRender`, `FailedToApply`,
    /// `FailedToDeleteObjects`.
    Failing { reason: String, message: String },
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

/// The components' conditions as (type, (status, reason, message)).
fn component_conditions(components: &[ComponentHealth]) -> Vec<(String, (String, String, String))> {
    components
        .iter()
        .map(|c| {
            let value = match (&c.not_deployed, c.progressing.is_empty()) {
                (Some(why), _) => cond(false, &why.reason, &why.message),
                (None, false) => cond(false, "Deploying", &c.progressing.join("\n")),
                (None, true) => cond(true, "AsExpected", ""),
            };
            (component_condition_type(&c.key), value)
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
    let (available, progressing, degraded) = match &report.health {
        Health::Failing { reason, message } if NEEDS_A_SPEC_CHANGE.contains(&reason.as_str()) => (
            cond(false, "Failing", "Unable to apply desired configuration"),
            cond(
                false,
                "InvalidConfiguration",
                "Human interaction is needed: see the Degraded condition",
            ),
            cond(true, reason, message),
        ),
        Health::Failing { reason, message } => (
            cond(false, "Failing", "Unable to apply desired configuration"),
            cond(false, "Failing", &format!("Retrying: {message}")),
            cond(true, reason, message),
        ),
        Health::Deploying { progressing, hung } if !hung.is_empty() => (
            cond(false, "Failing", "A rollout is not making progress"),
            cond(true, "Deploying", &progressing.join("\n")),
            cond(true, "RolloutHung", &hung.join("\n")),
        ),
        Health::Deploying { progressing, .. } => (
            cond(false, "Startup", "Components are being deployed"),
            cond(true, "Deploying", &progressing.join("\n")),
            cond(false, "AsExpected", ""),
        ),
        Health::Available => (
            cond(true, "AsExpected", &available_message(&not_deployed)),
            cond(false, "AsExpected", ""),
            cond(false, "AsExpected", ""),
        ),
    };
    let now = format_time(report.now);
    let mut all: Vec<(String, (String, String, String))> = vec![
        (AVAILABLE.to_string(), available),
        (PROGRESSING.to_string(), progressing),
        (DEGRADED.to_string(), degraded),
    ];
    match &report.components {
        Some(components) => all.extend(component_conditions(components)),
        None => all.extend(
            old.conditions
                .iter()
                .filter(|c| is_component_condition(&c.type_))
                .map(|c| {
                    let value = (c.status.clone(), c.reason.clone(), c.message.clone());
                    (c.type_.clone(), value)
                }),
        ),
    }
    let conditions = all
        .into_iter()
        .map(|(type_, (status, reason, message))| {
            let previous = old.conditions.iter().find(|c| c.type_ == type_);
            let last_transition_time = match previous {
                Some(p) if p.status == status && p.last_transition_time.is_some() => {
                    p.last_transition_time.clone()
                }
                _ => Some(now.clone()),
            };
            Condition {
                type_,
                status,
                reason,
                message,
                last_heartbeat_time: Some(now.clone()),
                last_transition_time,
            }
        })
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

fn cond(status: bool, reason: &str, message: &str) -> (String, String, String) {
    let status = if status { "True" } else { "False" };
    (status.to_string(), reason.to_string(), message.to_string())
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
pub fn degraded_anew(before: &NetworkAddonsConfigStatus, reason: &str) -> bool {
    !before
        .conditions
        .iter()
        .any(|c| c.type_ == DEGRADED && c.status == "True" && c.reason == reason)
}

/// Why a DaemonSet is still rolling out, or `None` when it is available.
pub fn daemonset_progress(ds: &DaemonSet) -> Option<String> {
    let status = ds.status.clone().unwrap_or_default();
    let desired = status.desired_number_scheduled;
    let unavailable = status.number_unavailable.unwrap_or(0);
    let why = if unavailable > 0 {
        format!("is not available (awaiting {unavailable} nodes)")
    } else if status.number_available.unwrap_or(0) == 0 && desired != 0 {
        "is not yet scheduled on any node".to_string()
    } else if status.updated_number_scheduled.unwrap_or(0) < desired {
        "update is rolling out".to_string()
    } else if ds.metadata.generation.unwrap_or(0) > status.observed_generation.unwrap_or(0) {
        "update is being processed".to_string()
    } else {
        return None;
    };
    Some(format!("DaemonSet {:?} {why}", qualified(ds)))
}

/// Why a Deployment is still rolling out, or `None` when it is available.
pub fn deployment_progress(d: &Deployment) -> Option<String> {
    let status = d.status.clone().unwrap_or_default();
    let wanted = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let unavailable = status.unavailable_replicas.unwrap_or(0);
    let why = if unavailable > 0 {
        format!("is not available (awaiting {unavailable} replicas)")
    } else if status.available_replicas.unwrap_or(0) == 0 && wanted != 0 {
        "has no available replica yet".to_string()
    } else if status.observed_generation.unwrap_or(0) < d.metadata.generation.unwrap_or(0) {
        "update is being processed".to_string()
    } else {
        return None;
    };
    Some(format!("Deployment {:?} {why}", qualified(d)))
}

/// Waiting reasons of a container whose image cannot be had.
const IMAGE_PULL_REASONS: &[&str] = &[
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
];

/// What keeps `pods` from running because an image cannot be pulled, one entry per image:
/// `image "quay.io/x@sha256:..." cannot be pulled (ImagePullBackOff)`.
pub fn image_pull_problems(pods: &[Pod]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut images: Vec<&str> = Vec::new();
    for pod in pods {
        let Some(status) = &pod.status else { continue };
        let statuses = status
            .init_container_statuses
            .iter()
            .flatten()
            .chain(status.container_statuses.iter().flatten());
        for c in statuses {
            let Some(reason) = c
                .state
                .as_ref()
                .and_then(|s| s.waiting.as_ref())
                .and_then(|w| w.reason.as_deref())
            else {
                continue;
            };
            if IMAGE_PULL_REASONS.contains(&reason) && !images.contains(&c.image.as_str()) {
                images.push(&c.image);
                out.push(format!("image {:?} cannot be pulled ({reason})", c.image));
            }
        }
    }
    out
}

/// The node a DaemonSet's pod is for: where it is bound, else the one its node affinity names
/// (the DaemonSet controller pins each pod to its node with `metadata.name In [node]`, so a pod
/// made for a node that went down stays Pending, unbound).
fn pod_node(pod: &Pod) -> Option<&str> {
    let spec = pod.spec.as_ref()?;
    if let Some(name) = spec.node_name.as_deref() {
        return Some(name);
    }
    spec.affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms
        .iter()
        .flat_map(|t| t.match_fields.iter().flatten())
        .find(|f| f.key == "metadata.name" && f.operator == "In")
        .and_then(|f| match f.values.as_deref() {
            Some([one]) => Some(one.as_str()),
            _ => None,
        })
}

/// The nodes that are not Ready and hold (or are to hold) a pod of `pods` that is not ready,
/// one line each (`waiting for node node02, which is not Ready (Unknown: ...)`): a pod there
/// waits for its node, not for its rollout.
pub fn nodes_down(pods: &[Pod], nodes: &[Node]) -> Vec<String> {
    let mut out = Vec::new();
    for pod in pods {
        let ready = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
        let Some(node_name) = pod_node(pod) else {
            continue;
        };
        if ready {
            continue;
        }
        let Some(node) = nodes
            .iter()
            .find(|n| n.metadata.name.as_deref() == Some(node_name))
        else {
            continue;
        };
        let condition = node
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
        if condition.is_some_and(|c| c.status == "True") {
            continue;
        }
        let why = match condition {
            Some(c) => format!(
                "{}: {}",
                c.status,
                c.message
                    .as_deref()
                    .unwrap_or(c.reason.as_deref().unwrap_or(""))
            ),
            None => "no Ready condition".to_string(),
        };
        let line = format!("waiting for node {node_name}, which is not Ready ({why})");
        if !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

fn qualified<K: kube::Resource>(o: &K) -> String {
    match o.meta().namespace.as_deref() {
        Some(ns) => format!("{ns}/{}", o.meta().name.as_deref().unwrap_or_default()),
        None => o.meta().name.clone().unwrap_or_default(),
    }
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

/// The status before and after a write.
#[derive(Clone, Debug, Default)]
pub struct Written {
    pub before: NetworkAddonsConfigStatus,
    pub after: NetworkAddonsConfigStatus,
    /// Whether a patch was sent (the status changed in more than its heartbeat).
    pub patched: bool,
}

/// Reads the current status of the NetworkAddonsConfig `name`, computes the next one with
/// `next`, and patches the status subresource when it changed (ignoring heartbeats). The patch
/// carries the resourceVersion read, so a concurrent write makes it fail with Conflict; it is
/// then recomputed and retried, up to 10 times.
pub async fn write(
    client: &Client,
    name: &str,
    next: impl Fn(&NetworkAddonsConfigStatus) -> NetworkAddonsConfigStatus,
) -> Result<Written> {
    let api: Api<NetworkAddonsConfig> = Api::all(client.clone());
    let mut last_error = None;
    for attempt in 0..WRITE_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(WRITE_RETRY_DELAY).await;
        }
        let current = api
            .get(name)
            .await
            .map_err(|e| Error::wrap(format!("read NetworkAddonsConfig {name}"), e))?;
        let before = current.status.clone().unwrap_or_default();
        let after = next(&before);
        if same_ignoring_heartbeat(&before, &after) {
            return Ok(Written {
                before,
                after,
                patched: false,
            });
        }
        let patch = status_patch(&before, &after, current.resource_version())?;
        match api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {
                return Ok(Written {
                    before,
                    after,
                    patched: true,
                })
            }
            Err(kube::Error::Api(s)) if s.code == 409 => last_error = Some(s.message.clone()),
            Err(e) => return Err(Error::wrap(format!("write the status of {name}"), e)),
        }
    }
    Err(Error::other(format!(
        "write the status of {name}: still conflicting after {WRITE_ATTEMPTS} attempts: {}",
        last_error.unwrap_or_default()
    )))
}

/// A merge patch replacing the status: fields the new status no longer has are set to null
/// (a merge patch leaves absent fields alone), and the resourceVersion makes it conditional.
fn status_patch(
    before: &NetworkAddonsConfigStatus,
    after: &NetworkAddonsConfigStatus,
    resource_version: Option<String>,
) -> Result<Value> {
    let old = serde_json::to_value(before).map_err(|e| Error::wrap("serialize the status", e))?;
    let mut new =
        match serde_json::to_value(after).map_err(|e| Error::wrap("serialize the status", e))? {
            Value::Object(m) => m,
            _ => Map::new(),
        };
    if let Value::Object(old) = old {
        for k in old.keys() {
            new.entry(k.clone()).or_insert(Value::Null);
        }
    }
    let mut patch = json!({ "status": new });
    if let Some(rv) = resource_version {
        patch["metadata"] = json!({ "resourceVersion": rv });
    }
    Ok(patch)
}

#[cfg(test)]
mod tests {
    /// The default progress timeout.
    const TIMEOUT: std::time::Duration = crate::settings::DEFAULT_PROGRESS_TIMEOUT;
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    fn report(health: Health, secs: i64) -> Report {
        Report {
            health,
            generation: Some(3),
            version: "1.2.3".to_string(),
            containers: None,
            not_deployed: None,
            components: None,
            now: at(secs),
        }
    }

    fn condition<'a>(s: &'a NetworkAddonsConfigStatus, t: &str) -> &'a Condition {
        s.conditions
            .iter()
            .find(|c| c.type_ == t)
            .unwrap_or_else(|| panic!("no {t} condition"))
    }

    #[test]
    fn transition_time_stays_while_the_status_does_and_heartbeat_moves() {
        let deploying = Health::Deploying {
            progressing: vec!["DaemonSet \"ns/a\" update is rolling out".to_string()],
            hung: vec![],
        };
        let first = next_status(
            &NetworkAddonsConfigStatus::default(),
            &report(deploying.clone(), 0),
        );
        let second = next_status(&first, &report(deploying, 60));
        let p1 = condition(&first, PROGRESSING);
        let p2 = condition(&second, PROGRESSING);
        assert_eq!(p1.last_transition_time, p2.last_transition_time);
        assert_ne!(p1.last_heartbeat_time, p2.last_heartbeat_time);
        assert!(same_ignoring_heartbeat(&first, &second));

        let third = next_status(&second, &report(Health::Available, 120));
        assert_eq!(condition(&third, AVAILABLE).status, "True");
        assert_ne!(
            condition(&third, AVAILABLE).last_transition_time,
            p1.last_transition_time
        );
        assert_eq!(third.observed_version.as_deref(), Some("1.2.3"));
        assert_eq!(second.observed_version, None);
    }

    fn component(key: &str, progressing: &[&str], not_deployed: Option<&str>) -> ComponentHealth {
        ComponentHealth {
            key: key.to_string(),
            progressing: progressing.iter().map(|s| s.to_string()).collect(),
            not_deployed: not_deployed.map(|reason| Absent {
                reason: reason.to_string(),
                message: format!("because {reason}"),
            }),
        }
    }

    #[test]
    fn each_component_has_its_own_available_condition() {
        let line = "DaemonSet \"ns/ovs-cni-amd64\" update is rolling out";
        let mut r = report(
            Health::Deploying {
                progressing: vec![line.to_string()],
                hung: vec![],
            },
            0,
        );
        r.components = Some(vec![
            component("linuxBridge", &[], None),
            component("ovs", &[line], None),
            component("macvtap", &[], Some("NotDeployed")),
            component("nmstate", &[], Some("UpstreamInstalled")),
        ]);
        let next = next_status(&NetworkAddonsConfigStatus::default(), &r);
        let bridge = condition(&next, "LinuxBridgeAvailable");
        assert_eq!(
            (bridge.status.as_str(), bridge.reason.as_str()),
            ("True", "AsExpected")
        );
        let ovs = condition(&next, "OvsAvailable");
        assert_eq!(
            (ovs.status.as_str(), ovs.reason.as_str()),
            ("False", "Deploying")
        );
        assert_eq!(ovs.message, line);
        let macvtap = condition(&next, "MacvtapAvailable");
        assert_eq!(
            (macvtap.status.as_str(), macvtap.reason.as_str()),
            ("False", "NotDeployed")
        );
        let nmstate = condition(&next, "NmstateAvailable");
        assert_eq!(
            (nmstate.status.as_str(), nmstate.reason.as_str()),
            ("False", "UpstreamInstalled")
        );
        assert_eq!(nmstate.message, "because UpstreamInstalled");
    }

    #[test]
    fn a_component_turned_off_loses_its_condition() {
        let mut r = report(Health::Available, 0);
        r.components = Some(vec![component("ovs", &[], None)]);
        let first = next_status(&NetworkAddonsConfigStatus::default(), &r);
        r.components = Some(vec![]);
        let next = next_status(&first, &r);
        assert!(next.conditions.iter().all(|c| c.type_ != "OvsAvailable"));
    }

    #[test]
    fn a_failed_apply_keeps_the_components_conditions_of_what_runs() {
        let mut r = report(Health::Available, 0);
        r.components = Some(vec![component("ovs", &[], None)]);
        let first = next_status(&NetworkAddonsConfigStatus::default(), &r);
        let failing = report(
            Health::Failing {
                reason: "FailedToValidate".to_string(),
                message: "invalid configuration:\nx".to_string(),
            },
            60,
        );
        let next = next_status(&first, &failing);
        let ovs = condition(&next, "OvsAvailable");
        assert_eq!(ovs.status, "True");
        assert_eq!(
            ovs.last_transition_time,
            condition(&first, "OvsAvailable").last_transition_time
        );
    }

    #[test]
    fn the_retired_failing_condition_is_dropped() {
        let old = NetworkAddonsConfigStatus {
            conditions: vec![Condition {
                type_: "Failing".to_string(),
                status: "True".to_string(),
                ..Condition::default()
            }],
            ..Default::default()
        };
        let next = next_status(&old, &report(Health::Available, 0));
        let types: Vec<&str> = next.conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, [AVAILABLE, PROGRESSING, DEGRADED]);
    }

    #[test]
    fn a_failure_is_degraded_and_not_available() {
        let next = next_status(
            &NetworkAddonsConfigStatus::default(),
            &report(
                Health::Failing {
                    reason: "FailedToValidate".to_string(),
                    message: "invalid configuration:\nx".to_string(),
                },
                0,
            ),
        );
        assert_eq!(condition(&next, DEGRADED).status, "True");
        assert_eq!(condition(&next, DEGRADED).reason, "FailedToValidate");
        assert_eq!(condition(&next, AVAILABLE).reason, "Failing");
        assert_eq!(condition(&next, PROGRESSING).reason, "InvalidConfiguration");
        assert_eq!(next.operator_version.as_deref(), Some("1.2.3"));
        assert_eq!(next.target_version.as_deref(), Some("1.2.3"));
        assert_eq!(next.observed_generation, Some(3));
    }

    #[test]
    fn a_failure_the_operator_retries_asks_for_no_human_interaction() {
        let next = next_status(
            &NetworkAddonsConfigStatus::default(),
            &report(
                Health::Failing {
                    reason: "FailedToApply".to_string(),
                    message: "apply DaemonSet ns/a: connection refused".to_string(),
                },
                0,
            ),
        );
        let progressing = condition(&next, PROGRESSING);
        assert_eq!(
            (progressing.status.as_str(), progressing.reason.as_str()),
            ("False", "Failing")
        );
        assert_eq!(
            progressing.message,
            "Retrying: apply DaemonSet ns/a: connection refused"
        );
        assert_eq!(condition(&next, DEGRADED).reason, "FailedToApply");
    }

    #[test]
    fn degraded_is_news_when_it_turns_true_or_changes_reason() {
        let failing = |reason: &str| {
            next_status(
                &NetworkAddonsConfigStatus::default(),
                &report(
                    Health::Failing {
                        reason: reason.to_string(),
                        message: "m".to_string(),
                    },
                    0,
                ),
            )
        };
        assert!(degraded_anew(
            &NetworkAddonsConfigStatus::default(),
            "FailedToApply"
        ));
        assert!(!degraded_anew(&failing("FailedToApply"), "FailedToApply"));
        assert!(degraded_anew(
            &failing("FailedToApply"),
            "FailedToDeleteObjects"
        ));
        let available = next_status(
            &NetworkAddonsConfigStatus::default(),
            &report(Health::Available, 0),
        );
        assert!(degraded_anew(&available, "FailedToApply"));
    }

    fn pod_waiting(init: Option<(&str, &str)>, main: (&str, &str)) -> Pod {
        let status = |(image, reason): (&str, &str)| {
            serde_json::json!({"name": "c", "image": image, "imageID": "", "ready": false,
                "restartCount": 0, "state": {"waiting": {"reason": reason}}})
        };
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p"},
            "status": {
                "initContainerStatuses": init.map(status).into_iter().collect::<Vec<_>>(),
                "containerStatuses": [status(main)],
            }
        }))
        .expect("a valid Pod")
    }

    #[test]
    fn images_that_cannot_be_pulled_are_named_once_each() {
        let pods = [
            pod_waiting(
                Some(("quay.io/a:1", "ImagePullBackOff")),
                ("quay.io/b:1", "PodInitializing"),
            ),
            pod_waiting(
                Some(("quay.io/a:1", "ErrImagePull")),
                ("quay.io/b:1", "PodInitializing"),
            ),
            pod_waiting(None, ("quay.io/c:1", "ErrImagePull")),
        ];
        assert_eq!(
            image_pull_problems(&pods),
            [
                r#"image "quay.io/a:1" cannot be pulled (ImagePullBackOff)"#,
                r#"image "quay.io/c:1" cannot be pulled (ErrImagePull)"#,
            ]
        );
    }

    fn pod_on(node: &str, ready: &str) -> Pod {
        serde_json::from_value(json!({
            "spec": {"nodeName": node, "containers": []},
            "status": {"conditions": [{"type": "Ready", "status": ready}]}
        }))
        .expect("a valid Pod")
    }

    fn node(name: &str, ready: &str, message: &str) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "status": {"conditions": [{"type": "Ready", "status": ready, "message": message}]}
        }))
        .expect("a valid Node")
    }

    #[test]
    fn an_unready_pod_on_a_node_that_is_down_waits_for_its_node() {
        let nodes = [
            node("node01", "True", "kubelet is posting ready status"),
            node("node02", "Unknown", "Kubelet stopped posting node status."),
        ];
        let pods = [pod_on("node01", "True"), pod_on("node02", "False")];
        assert_eq!(
            nodes_down(&pods, &nodes),
            ["waiting for node node02, which is not Ready (Unknown: Kubelet stopped posting node status.)"]
        );
    }

    #[test]
    fn a_pending_pod_made_for_a_node_that_is_down_waits_for_that_node() {
        let nodes = [node(
            "node02",
            "Unknown",
            "Kubelet stopped posting node status.",
        )];
        let pod: Pod = serde_json::from_value(json!({
            "spec": {"containers": [], "affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
                    "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node02"]}]
                }]}
            }}},
            "status": {"phase": "Pending"}
        }))
        .expect("a valid Pod");
        assert_eq!(nodes_down(&[pod], &nodes).len(), 1);
    }

    #[test]
    fn an_unready_pod_on_a_ready_node_waits_for_no_node() {
        let nodes = [node("node01", "True", "")];
        assert!(nodes_down(&[pod_on("node01", "False")], &nodes).is_empty());
    }

    #[test]
    fn a_ready_pod_on_a_node_gone_not_ready_waits_for_nothing() {
        let nodes = [node("node02", "False", "")];
        assert!(nodes_down(&[pod_on("node02", "True")], &nodes).is_empty());
    }

    #[test]
    fn containers_waiting_for_other_reasons_are_no_pull_problem() {
        let pods = [pod_waiting(None, ("quay.io/b:1", "ContainerCreating"))];
        assert!(image_pull_problems(&pods).is_empty());
    }

    #[test]
    fn a_daemonset_without_status_is_being_processed() {
        let ds: DaemonSet = serde_json::from_value(json!({
            "metadata": {"name": "a", "namespace": "ns", "generation": 1}
        }))
        .expect("a DaemonSet");
        let line = daemonset_progress(&ds).unwrap_or_default();
        assert_eq!(line, "DaemonSet \"ns/a\" update is being processed");
    }

    #[test]
    fn daemonset_rules_in_upstream_order() {
        let ds = |status: Value| -> DaemonSet {
            serde_json::from_value(json!({
                "metadata": {"name": "a", "namespace": "ns", "generation": 2},
                "status": status
            }))
            .expect("valid object")
        };
        let base = json!({"currentNumberScheduled": 3, "desiredNumberScheduled": 3,
            "numberMisscheduled": 0, "numberReady": 3, "numberAvailable": 3,
            "updatedNumberScheduled": 3, "observedGeneration": 2});
        assert_eq!(daemonset_progress(&ds(base.clone())), None);
        let mut s = base.clone();
        s["numberUnavailable"] = json!(2);
        assert!(daemonset_progress(&ds(s))
            .unwrap_or_default()
            .ends_with("is not available (awaiting 2 nodes)"));
        let mut s = base.clone();
        s["numberAvailable"] = json!(0);
        assert!(daemonset_progress(&ds(s))
            .unwrap_or_default()
            .ends_with("not yet scheduled on any node"));
        let mut s = base.clone();
        s["updatedNumberScheduled"] = json!(1);
        assert!(daemonset_progress(&ds(s))
            .unwrap_or_default()
            .ends_with("update is rolling out"));
        let mut s = base;
        s["observedGeneration"] = json!(1);
        assert!(daemonset_progress(&ds(s))
            .unwrap_or_default()
            .ends_with("update is being processed"));
    }

    #[test]
    fn deployment_rules() {
        let d = |status: Value| -> Deployment {
            serde_json::from_value(json!({
                "metadata": {"name": "k", "namespace": "ns", "generation": 2},
                "spec": {"replicas": 2, "selector": {}, "template": {}},
                "status": status
            }))
            .expect("valid object")
        };
        assert_eq!(
            deployment_progress(&d(json!({"availableReplicas": 2, "observedGeneration": 2}))),
            None
        );
        assert!(deployment_progress(&d(json!({"availableReplicas": 1,
            "unavailableReplicas": 1, "observedGeneration": 2})))
        .is_some());
        assert!(deployment_progress(&d(json!({"observedGeneration": 2}))).is_some());
        assert!(
            deployment_progress(&d(json!({"availableReplicas": 2, "observedGeneration": 1})))
                .is_some()
        );
    }

    fn daemonset(namespace: &str, name: &str) -> Identity {
        Identity {
            api_version: "apps/v1".to_string(),
            kind: "DaemonSet".to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    fn rollout(object: &Identity, line: &str, fingerprint: &str) -> Rollout {
        Rollout {
            object: object.clone(),
            line: line.to_string(),
            fingerprint: fingerprint.to_string(),
        }
    }

    #[test]
    fn a_rollout_is_hung_after_ten_unchanged_minutes_and_a_change_restarts_the_clock() {
        let tracker = RolloutTracker::default();
        let a = daemonset("ns", "a");
        let line = "DaemonSet \"ns/a\" is not available (awaiting 1 nodes)".to_string();
        let obs =
            |fp: &str, secs: i64| tracker.observe(&[rollout(&a, &line, fp)], at(secs), TIMEOUT);
        assert!(obs("s1", 0).is_empty());
        assert!(obs("s1", 9 * 60).is_empty());
        assert!(obs("s2", 9 * 60 + 30).is_empty());
        assert!(obs("s2", 19 * 60).is_empty());
        let hung = obs("s2", 20 * 60);
        assert_eq!(hung.len(), 1);
        assert!(hung[0].starts_with(&line));
        // no longer progressing: forgotten, so a new rollout gets its full ten minutes
        assert!(tracker.observe(&[], at(21 * 60), TIMEOUT).is_empty());
        assert!(obs("s2", 22 * 60).is_empty());
    }

    #[test]
    fn a_rollout_is_tracked_by_its_object_whatever_its_line_says() {
        let tracker = RolloutTracker::default();
        let a = daemonset("ns", "a");
        // the line a missing DaemonSet gets names it without quotes
        let missing = "DaemonSet ns/a is missing";
        assert!(tracker
            .observe(&[rollout(&a, missing, "")], at(0), TIMEOUT)
            .is_empty());
        let reworded = "DaemonSet ns/a is still missing";
        let hung = tracker.observe(&[rollout(&a, reworded, "")], at(10 * 60), TIMEOUT);
        assert_eq!(
            hung,
            [format!(
                "{reworded}; its status has not changed for 10 minutes"
            )]
        );
    }

    #[test]
    fn two_objects_whose_lines_read_the_same_keep_their_own_clocks() {
        let tracker = RolloutTracker::default();
        let (a, b) = (daemonset("ns", "a"), daemonset("other", "a"));
        let line = "a rollout line naming neither";
        assert!(tracker
            .observe(&[rollout(&a, line, "s1")], at(0), TIMEOUT)
            .is_empty());
        let both = [rollout(&a, line, "s1"), rollout(&b, line, "s1")];
        assert!(tracker.observe(&both, at(5 * 60), TIMEOUT).is_empty());
        // a has been unchanged for ten minutes, b only for five
        assert_eq!(tracker.observe(&both, at(10 * 60), TIMEOUT).len(), 1);
    }

    #[test]
    fn containers_include_init_containers() {
        let ds = json!({"kind": "DaemonSet", "metadata": {"name": "a"}, "spec": {"template": {"spec": {
            "initContainers": [{"name": "install", "image": "img:1"}],
            "containers": [{"name": "main", "image": "img:2"}]}}}});
        let cm = json!({"kind": "ConfigMap", "metadata": {"name": "c"}});
        let list = containers(&[ds, cm]);
        let names: Vec<(&str, &str)> = list
            .iter()
            .map(|c| (c.name.as_str(), c.image.as_str()))
            .collect();
        assert_eq!(names, [("main", "img:2"), ("install", "img:1")]);
        assert_eq!(list[0].parent_kind, "DaemonSet");
        assert_eq!(list[0].parent_name, "a");
    }

    #[test]
    fn the_patch_nulls_fields_the_new_status_drops() {
        let before = NetworkAddonsConfigStatus {
            observed_version: Some("0.9".to_string()),
            not_deployed: vec![NotDeployed {
                component: "macvtap".to_string(),
                reason: "r".to_string(),
            }],
            ..Default::default()
        };
        let after = NetworkAddonsConfigStatus {
            observed_version: Some("1.0".to_string()),
            ..Default::default()
        };
        let patch = status_patch(&before, &after, Some("7".to_string())).unwrap_or_default();
        assert_eq!(patch["status"]["notDeployed"], Value::Null);
        assert!(patch["status"]
            .as_object()
            .is_some_and(|m| m.contains_key("notDeployed")));
        assert_eq!(patch["status"]["observedVersion"], "1.0");
        assert_eq!(patch["metadata"]["resourceVersion"], "7");
    }
}
