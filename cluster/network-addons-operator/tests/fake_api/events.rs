//! Events as Kubernetes 1.20 validates them.

use serde_json::Value;

use super::answers::status;
use super::request::Target;

/// Kubernetes 1.20's `legacyValidateEvent`, which every event passes whatever API it is created
/// through (pkg/apis/core/validation/events.go), on a core/v1 or events.k8s.io event.
pub(super) fn invalid_event(t: &Target, body: &Value) -> Option<(u16, Value)> {
    let namespace = t.namespace.clone().unwrap_or_default();
    let involved = if t.group_version == "v1" {
        &body["involvedObject"]
    } else {
        &body["regarding"]
    };
    let involved_ns = involved["namespace"].as_str().unwrap_or_default();
    let has_event_time = body["eventTime"].as_str().is_some_and(|s| !s.is_empty());
    let mismatch = if has_event_time {
        involved_ns.is_empty() && namespace != "kube-system"
    } else if involved_ns.is_empty() {
        !namespace.is_empty() && namespace != "default"
    } else {
        namespace != involved_ns
    };
    if !mismatch {
        return None;
    }
    let name = body["metadata"]["name"].as_str().unwrap_or_default();
    Some(status(
        422,
        "Invalid",
        format!(
            "Event \"{name}\" is invalid: involvedObject.namespace: Invalid value: \"{involved_ns}\": does not match event.namespace"
        ),
    ))
}
