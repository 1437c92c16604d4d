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
mod tests {
    use super::*;
    use serde_json::{json, Value};

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
}
