//! The readiness rules of the rendered DaemonSets and Deployments (upstream's), and what their
//! pods wait for when they are not ready: images that cannot be pulled, nodes that are down.

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{Node, Pod};

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

#[cfg(test)]
mod tests;
