//! Which nodes a policy is for, and how many of them may be configuring it at once.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::error::{Error, Result};

/// Upstream's default `maxUnavailable`.
pub const DEFAULT_MAX_UNAVAILABLE: &str = "50%";

/// Whether a node with `labels` matches the policy's `nodeSelector` (a plain key/value map; no
/// selector matches every node).
pub fn matches(selector: &Value, labels: &BTreeMap<String, String>) -> bool {
    let Some(selector) = selector.as_object() else {
        return true;
    };
    selector.iter().all(|(k, v)| {
        v.as_str()
            .is_some_and(|v| labels.get(k).map(String::as_str) == Some(v))
    })
}

/// `maxUnavailable` (an integer, or a percentage of `matching` rounded up) as a node count: at
/// least 1, so that a policy always makes progress. A value that is neither is an error.
pub fn max_unavailable(value: &Value, matching: usize) -> Result<usize> {
    let limit = match value {
        Value::Null => percent(DEFAULT_MAX_UNAVAILABLE, matching)?,
        Value::Number(n) => n
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| invalid(n, "not a count of nodes"))?,
        Value::String(s) if s.ends_with('%') => percent(s, matching)?,
        // The policy's value, quoted, says more than the integer parser's words.
        Value::String(s) => s.parse().map_err(|_| invalid(format!("{s:?}"), NEITHER))?,
        other => return Err(invalid(other, NEITHER)),
    };
    Ok(limit.max(1))
}

const NEITHER: &str = "neither a count nor a percentage";

/// `value` as the policy has it (a string quoted), and why it is no limit.
fn invalid(value: impl std::fmt::Display, why: &'static str) -> Error {
    Error::MaxUnavailable {
        value: value.to_string(),
        why,
    }
}

/// The holders of a policy's slots that still configure it: their node matches and runs a
/// handler, and their enactment of this generation has not finished. Anyone else (a node
/// removed, a handler that died after it finished but before it released) gives its slot up.
pub fn live_holders(holders: &[String], matching: &[String], finished: &[String]) -> Vec<String> {
    holders
        .iter()
        .filter(|h| matching.contains(h) && !finished.contains(h))
        .cloned()
        .collect()
}

fn percent(text: &str, matching: usize) -> Result<usize> {
    let number = text.trim_end_matches('%');
    let pct: usize = number
        .parse()
        .ok()
        .filter(|p| *p <= 100)
        .ok_or_else(|| invalid(format!("{text:?}"), "not a percentage from 0% to 100%"))?;
    Ok((matching * pct).div_ceil(100))
}

#[cfg(test)]
mod tests;
