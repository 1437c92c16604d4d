//! The reply to a `transact` request (RFC 7047 section 4.1.3).

use serde_json::Value;

use crate::error::{Error, OpFailure, Result};

/// One result per operation, plus one more when the commit itself failed (a constraint or
/// referential integrity violation).
#[derive(Debug, Clone)]
pub struct Reply {
    results: Vec<Value>,
    ops: usize,
}

/// A string member of an error object as text; another JSON value as JSON.
pub(crate) fn text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

impl Reply {
    pub(crate) fn new(results: Vec<Value>, ops: usize) -> Reply {
        Reply { results, ops }
    }

    /// The first failure, if the transaction did not commit.
    pub fn failure(&self) -> Option<OpFailure> {
        self.results.iter().enumerate().find_map(|(index, r)| {
            let error = r.get("error").filter(|e| !e.is_null())?;
            Some(OpFailure {
                index,
                error: text(Some(error)),
                details: text(r.get("details")),
            })
        })
    }

    /// The per-operation results of a committed transaction; otherwise its failure, with
    /// `what` as the context.
    pub fn into_results(self, what: &str) -> Result<Vec<Value>> {
        if let Some(f) = self.failure() {
            return Err(Error::wrap(what, Error::Transaction(f)));
        }
        if self.results.len() < self.ops {
            return Err(Error::wrap(
                what,
                Error::Protocol(format!(
                    "OVSDB answered {} results for {} operations",
                    self.results.len(),
                    self.ops
                )),
            ));
        }
        Ok(self.results)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_committed_transaction_has_no_failure() {
        let ok = Reply::new(vec![json!({}), json!({"uuid": ["uuid", "u"]})], 2);
        assert!(ok.failure().is_none());
        assert_eq!(ok.into_results("adding").expect("committed").len(), 2);
    }

    #[test]
    fn the_failed_operation_is_reported_with_its_details() {
        let failed = Reply::new(
            vec![
                json!({"error": "timed out", "details": "where"}),
                Value::Null,
            ],
            2,
        );
        let f = failed.failure().expect("failed");
        assert_eq!((f.index, f.to_string().as_str()), (0, "timed out (where)"));
    }

    #[test]
    fn a_failed_commit_is_the_result_after_the_last_operation() {
        let commit = Reply::new(
            vec![
                json!({}),
                json!({}),
                json!({"error": "constraint violation"}),
            ],
            2,
        );
        let f = commit.failure().expect("commit failed");
        assert_eq!((f.index, f.error.as_str()), (2, "constraint violation"));
        let e = commit.into_results("adding").expect_err("not committed");
        assert!(matches!(e.root(), Error::Transaction(_)), "{e:?}");
        assert_eq!(
            e.report(),
            "adding: OVSDB transaction failed: constraint violation"
        );
    }

    #[test]
    fn missing_results_are_a_protocol_error() {
        let short = Reply::new(vec![json!({})], 2);
        let e = short.into_results("adding").expect_err("short");
        assert!(matches!(e.root(), Error::Protocol(_)), "{e:?}");
    }
}
