//! The AdmissionReview envelope (`admission.k8s.io/v1` and `v1beta1`, the same shape): the
//! request's fields the webhooks read, and the response, allowed with a JSON Patch or refused.

use base64::Engine;
use serde::Deserialize;
use serde_json::{json, Value};

/// A refusal, with the message the API server shows the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial(pub String);

/// The API server sends at most 3 MiB of object, twice for an UPDATE (object and oldObject).
/// A body past this is answered 413, which the API server reports as the webhook failing.
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

#[derive(Debug, Deserialize)]
pub struct Review {
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    pub request: Request,
}

#[derive(Debug, Deserialize)]
pub struct Request {
    pub uid: String,
    #[serde(default)]
    pub operation: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub object: Value,
    #[serde(rename = "oldObject", default)]
    pub old_object: Value,
    #[serde(rename = "dryRun", default)]
    pub dry_run: Option<bool>,
}

impl Request {
    pub fn is_dry_run(&self) -> bool {
        self.dry_run == Some(true)
    }

    /// The object's name; a pod made from `generateName` has none yet.
    pub fn object_name(&self) -> String {
        if !self.name.is_empty() {
            return self.name.clone();
        }
        self.object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    }
}

pub fn parse(body: &[u8]) -> Result<Review, serde_json::Error> {
    serde_json::from_slice(body)
}

/// Allowed, with `patch` (a JSON Patch array) applied unless it is empty.
pub fn allow(review: &Review, patch: Option<&Value>) -> Value {
    let mut response = json!({"uid": review.request.uid, "allowed": true});
    if let Some(patch) = patch.filter(|p| p.as_array().is_some_and(|a| !a.is_empty())) {
        response["patchType"] = json!("JSONPatch");
        response["patch"] =
            json!(base64::engine::general_purpose::STANDARD.encode(patch.to_string()));
    }
    envelope(review, response)
}

/// Refused with `message` and HTTP-like `code` (400 for bad input, 500 for a full range, as
/// upstream answers).
pub fn deny(review: &Review, code: u16, message: &str) -> Value {
    envelope(
        review,
        json!({
            "uid": review.request.uid,
            "allowed": false,
            "status": {"code": code, "message": message},
        }),
    )
}

fn envelope(review: &Review, response: Value) -> Value {
    json!({
        "apiVersion": review.api_version,
        "kind": "AdmissionReview",
        "response": response,
    })
}

#[cfg(test)]
mod tests;
