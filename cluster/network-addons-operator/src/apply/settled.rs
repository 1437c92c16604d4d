//! What a replica that has just become the leader may leave as it is. It has applied nothing
//! yet, so [`super::Ours`] knows nothing; applying every object again would write each one
//! (no-ops, but writes all the same) on every failover. An object is left alone when the
//! record of the applied spec says the last converge completed this very render (its
//! [`RENDERED`] annotation is this render's fingerprint) and the object, ours, still holds
//! every rendered value: then the apply could change nothing. Anything else is applied.

use kube::api::DynamicObject;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::is_ours;

/// The annotation on the applied-spec record: the fingerprint of the render it completed.
pub const RENDERED: &str = "networkaddonsoperator.network.kubevirt.io/rendered-sha256";

/// The fingerprint of a render: the SHA-256 of its objects, in apply order.
pub fn fingerprint(objects: &[Value]) -> String {
    let mut hasher = Sha256::new();
    for object in objects {
        hasher.update(object.to_string().as_bytes());
        hasher.update(b"\n");
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Whether the record on the server says the last converge completed the render whose
/// record is `rendered_record`.
pub fn completed(live_record: Option<&DynamicObject>, rendered_record: &Value) -> bool {
    let rendered = rendered_record["metadata"]["annotations"][RENDERED].as_str();
    let live = live_record
        .and_then(|r| r.metadata.annotations.as_ref())
        .and_then(|a| a.get(RENDERED));
    rendered.is_some() && rendered == live.map(String::as_str)
}

/// Whether applying `rendered` on `live` (ours) could change nothing: every value rendered is
/// there as rendered, `apiVersion` and `kind` included. Lists must match element by element;
/// fields only the server or others set do not matter.
pub fn unchanged(live: &DynamicObject, rendered: &Value) -> bool {
    is_ours(live) && serde_json::to_value(live).is_ok_and(|live| holds(&live, rendered))
}

fn holds(live: &Value, rendered: &Value) -> bool {
    match (live, rendered) {
        (Value::Object(live), Value::Object(rendered)) => rendered
            .iter()
            .all(|(k, v)| live.get(k).is_some_and(|l| holds(l, v))),
        (Value::Array(live), Value::Array(rendered)) => {
            live.len() == rendered.len() && live.iter().zip(rendered).all(|(l, r)| holds(l, r))
        }
        _ => live == rendered,
    }
}

#[cfg(test)]
mod tests;
