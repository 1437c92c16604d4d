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
        deployment_progress(&d(json!({"availableReplicas": 2, "observedGeneration": 1}))).is_some()
    );
}
