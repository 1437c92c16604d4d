//! The server's `Status` answers, with the codes and reasons the real server gives.

use serde_json::{json, Value};

use super::request::Target;

pub(super) fn status(code: u16, reason: &str, message: String) -> (u16, Value) {
    (
        code,
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": if code < 300 { "Success" } else { "Failure" },
            "message": message,
            "reason": reason,
            "code": code,
        }),
    )
}

pub(super) fn not_found(t: &Target, name: &str) -> (u16, Value) {
    status(
        404,
        "NotFound",
        format!("{} \"{name}\" not found", t.plural),
    )
}
