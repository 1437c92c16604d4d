//! kubernetes-nmstate's API as the handler uses it: policies (v1), enactments and states
//! (v1beta1), all cluster-scoped, read and written as untyped objects.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::Client;
use serde_json::{json, Value};

pub const GROUP: &str = "nmstate.io";
/// The labels an enactment carries, as upstream's.
pub const POLICY_LABEL: &str = "nmstate.io/policy";
pub const NODE_LABEL: &str = "nmstate.io/node";
/// The label of the handler's pods: a node counts for a policy only where one runs.
pub const HANDLER_SELECTOR: &str = "component=kubernetes-nmstate-handler";
/// The policy's status field listing the nodes configuring its current generation now: the
/// rollout's semaphore, claimed and released with the policy's resourceVersion as the lock
/// (`unavailableNodeCount`, upstream's field, counts them). In the status, so that the handler
/// needs no right to change a policy's spec.
pub const CONFIGURING_FIELD: &str = "configuringNodes";

fn api(client: &Client, version: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(GROUP, version, kind);
    Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(&gvk, plural),
    )
}

pub fn policies(client: &Client) -> Api<DynamicObject> {
    api(
        client,
        "v1",
        "NodeNetworkConfigurationPolicy",
        "nodenetworkconfigurationpolicies",
    )
}

pub fn enactments(client: &Client) -> Api<DynamicObject> {
    api(
        client,
        "v1beta1",
        "NodeNetworkConfigurationEnactment",
        "nodenetworkconfigurationenactments",
    )
}

pub fn states(client: &Client) -> Api<DynamicObject> {
    api(client, "v1beta1", "NodeNetworkState", "nodenetworkstates")
}

/// `<node>.<policy>`, upstream's name.
pub fn enactment_name(node: &str, policy: &str) -> String {
    format!("{node}.{policy}")
}

/// Owned by the Node, so that a node removed takes its enactments and state along.
pub fn node_owner(node: &str, uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: "v1".to_string(),
        kind: "Node".to_string(),
        name: node.to_string(),
        uid: uid.to_string(),
        ..OwnerReference::default()
    }
}

/// A new enactment of `policy` on `node`.
pub fn new_enactment(node: &str, node_uid: &str, policy: &str) -> Value {
    json!({
        "apiVersion": "nmstate.io/v1beta1",
        "kind": "NodeNetworkConfigurationEnactment",
        "metadata": {
            "name": enactment_name(node, policy),
            "labels": { POLICY_LABEL: policy, NODE_LABEL: node },
            "ownerReferences": [node_owner(node, node_uid)],
        },
    })
}

/// A new state of `node`.
pub fn new_state(node: &str, node_uid: &str) -> Value {
    json!({
        "apiVersion": "nmstate.io/v1beta1",
        "kind": "NodeNetworkState",
        "metadata": {
            "name": node,
            "ownerReferences": [node_owner(node, node_uid)],
        },
    })
}

/// The nodes in the policy's `status.configuringNodes`.
pub fn configuring(policy: &DynamicObject) -> Vec<String> {
    policy.data["status"][CONFIGURING_FIELD]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n.as_str().map(str::to_string))
        .collect()
}

/// Now, as the API's timestamps are written.
pub fn now() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}
