//! Failures injected in place of the answers to chosen requests.

use serde_json::Value;

use super::answers::status;
use super::store::State;
use super::FakeApi;

/// A failure to answer instead of serving a matching request.
pub(super) struct Injected {
    method: String,
    path_suffix: String,
    code: u16,
    times: usize,
}

impl FakeApi {
    /// The next `times` requests with `method` on a path ending in `path_suffix` fail with
    /// `code` (409 as a Conflict, anything else as an internal error).
    pub fn fail_next(&self, method: &str, path_suffix: &str, code: u16, times: usize) {
        self.lock().injected.push(Injected {
            method: method.to_string(),
            path_suffix: path_suffix.to_string(),
            code,
            times,
        });
    }
}

impl State {
    pub(super) fn injected_failure(&mut self, method: &str, path: &str) -> Option<(u16, Value)> {
        let i = self
            .injected
            .iter()
            .position(|f| f.times > 0 && f.method == method && path.ends_with(&f.path_suffix))?;
        self.injected[i].times -= 1;
        let code = self.injected[i].code;
        Some(match code {
            409 => status(409, "Conflict", "the object has been modified".to_string()),
            _ => status(code, "InternalError", "injected failure".to_string()),
        })
    }
}
