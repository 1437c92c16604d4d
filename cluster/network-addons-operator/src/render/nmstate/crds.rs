//! kubernetes-nmstate's three CRDs, with its group, names, short names, versions, printer
//! columns and fields: the schema builders they share and each CRD. Kubernetes 1.20 needs
//! structural schemas: every node typed, `maxUnavailable` an int-or-string without `anyOf`, the
//! free-form nmstate states kept by x-kubernetes-preserve-unknown-fields.

use serde_json::{json, Value};

use crate::nmstate_names::{ENACTMENT_CRD, GROUP, POLICY_CRD, STATE_CRD};
use crate::render::common::{self, Ctx};
use crate::spec::Component;

fn string() -> Value {
    json!({"type": "string"})
}

fn date_time() -> Value {
    json!({"type": "string", "format": "date-time"})
}

fn string_map(description: &str) -> Value {
    json!({"type": "object", "additionalProperties": string(), "description": description})
}

fn integer_map() -> Value {
    json!({"type": "object", "additionalProperties": {"type": "integer"}})
}

/// An nmstate network state: free-form YAML, whatever nmstate's schema holds.
fn network_state(description: &str) -> Value {
    json!({"type": "object", "description": description,
           "x-kubernetes-preserve-unknown-fields": true})
}

/// kubernetes-nmstate's condition list, the same in all three kinds.
fn conditions() -> Value {
    json!({
        "type": "array",
        "items": {
            "type": "object",
            "required": ["type", "status"],
            "properties": {
                "type": string(),
                "status": string(),
                "reason": string(),
                "message": string(),
                "lastHeartbeatTime": date_time(),
                "lastTransitionTime": date_time(),
            },
        },
    })
}

/// When and by which nmstate a state was rendered.
fn meta_info() -> Value {
    json!({"type": "object", "properties": {"time": date_time(), "version": string()}})
}

/// The root of an object's schema: `spec` (when the kind has one) and `status`.
fn root(description: &str, spec: Option<Value>, status: Value) -> Value {
    let mut properties = json!({
        "apiVersion": string(),
        "kind": string(),
        "metadata": {"type": "object"},
        "status": status,
    });
    if let Some(spec) = spec {
        properties["spec"] = spec;
    }
    json!({"type": "object", "description": description, "properties": properties})
}

/// `Status`: the reason of the condition that is True (`SuccessfullyConfigured`,
/// `FailedToConfigure`, ...), what the walkthrough's `kubectl get nncp` shows; `Type` (which
/// condition that is) only with `-o wide`.
pub fn status_columns() -> Value {
    json!([
        {"name": "Status", "type": "string",
         "description": "The reason of the condition that holds",
         "jsonPath": ".status.conditions[?(@.status==\"True\")].reason"},
        {"name": "Type", "type": "string", "priority": 1,
         "description": "The condition that holds",
         "jsonPath": ".status.conditions[?(@.status==\"True\")].type"},
    ])
}

/// One served version (`storage` for the one stored; `deprecated` ones warn their clients).
fn version(name: &str, storage: bool, deprecated: bool, schema: &Value, columns: &Value) -> Value {
    let mut v = json!({
        "name": name,
        "served": true,
        "storage": storage,
        "schema": {"openAPIV3Schema": schema},
        "subresources": {"status": {}},
    });
    if deprecated {
        v["deprecated"] = json!(true);
    }
    if columns.as_array().is_some_and(|c| !c.is_empty()) {
        v["additionalPrinterColumns"] = columns.clone();
    }
    v
}

/// A cluster-scoped CRD of `nmstate.io`. `versions` are (name, storage, deprecated), all with
/// `schema`.
fn crd(
    ctx: &Ctx,
    name: &str,
    kind: &str,
    short_name: &str,
    versions: &[(&str, bool, bool)],
    schema: &Value,
    columns: &Value,
) -> Value {
    let plural = name.split('.').next().unwrap_or(name);
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": common::cluster_meta(ctx, name, Some(Component::Nmstate)),
        "spec": {
            "group": GROUP,
            "names": {
                "kind": kind,
                "listKind": format!("{kind}List"),
                "plural": plural,
                "singular": kind.to_ascii_lowercase(),
                "shortNames": [short_name],
            },
            "scope": "Cluster",
            "conversion": {"strategy": "None"},
            "versions": versions
                .iter()
                .map(|(v, storage, deprecated)| version(v, *storage, *deprecated, schema, columns))
                .collect::<Vec<_>>(),
        },
    })
}

pub(super) fn policy_crd(ctx: &Ctx) -> Value {
    let spec = json!({
        "type": "object",
        "properties": {
            "nodeSelector": string_map(
                "Labels a node must have for the policy to apply to it; none: every node",
            ),
            "desiredState": network_state("The nodes' network as nmstate declares it"),
            "maxUnavailable": {
                "x-kubernetes-int-or-string": true,
                "description": "How many of the selected nodes (a number, or a percentage) may be configuring at once; default 50%",
            },
            "capture": string_map(
                "Named expressions over the node's current state, referenced from desiredState",
            ),
        },
    });
    let status = json!({
        "type": "object",
        "properties": {
            "conditions": conditions(),
            "unavailableNodeCount": {"type": "integer"},
            "unavailableNodeCountMap": integer_map(),
            // Ours: who holds the slots `unavailableNodeCount` counts.
            "configuringNodes": {"type": "array", "items": string()},
            "lastUnavailableNodeCountUpdate": date_time(),
        },
    });
    crd(
        ctx,
        POLICY_CRD,
        "NodeNetworkConfigurationPolicy",
        "nncp",
        &[
            ("v1", true, false),
            ("v1beta1", false, true),
            ("v1alpha1", false, true),
        ],
        &root(
            "The network configuration of the nodes a selector picks",
            Some(spec),
            status,
        ),
        &status_columns(),
    )
}

pub(super) fn enactment_crd(ctx: &Ctx) -> Value {
    let status = json!({
        "type": "object",
        "properties": {
            "desiredState": network_state("The policy's desiredState as rendered for this node"),
            "desiredStateMetaInfo": meta_info(),
            "capturedStates": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "properties": {
                        "state": network_state("What the capture resolved to"),
                        "metaInfo": meta_info(),
                    },
                },
            },
            "policyGeneration": {"type": "integer", "format": "int64"},
            "conditions": conditions(),
            "features": {"type": "array", "items": string()},
            "retryCount": integer_map(),
        },
    });
    let mut schema = root(
        "One policy on one node: what was applied there and how it went",
        None,
        status,
    );
    // As upstream's: fields a handler of another release writes are kept, not pruned.
    schema["x-kubernetes-preserve-unknown-fields"] = json!(true);
    crd(
        ctx,
        ENACTMENT_CRD,
        "NodeNetworkConfigurationEnactment",
        "nnce",
        &[("v1beta1", true, false), ("v1alpha1", false, true)],
        &schema,
        &status_columns(),
    )
}

pub(super) fn state_crd(ctx: &Ctx) -> Value {
    let status = json!({
        "type": "object",
        "properties": {
            "currentState": network_state("The node's network as nmstate reports it"),
            "lastSuccessfulUpdateTime": date_time(),
            "hostNetworkManagerVersion": string(),
            "handlerNetworkManagerVersion": string(),
            "handlerNmstateVersion": string(),
            "conditions": conditions(),
        },
    });
    crd(
        ctx,
        STATE_CRD,
        "NodeNetworkState",
        "nns",
        &[("v1beta1", true, false), ("v1alpha1", false, true)],
        &root("The current network of one node", None, status),
        &json!([]),
    )
}
