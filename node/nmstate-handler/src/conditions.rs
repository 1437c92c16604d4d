//! kubernetes-nmstate's conditions, as pure functions of what was observed: the enactment's
//! (one node, one policy) and the policy's (every enactment of its generation). Each set
//! carries every type of its kind with exactly one `True`, as upstream writes them, so that
//! `kubectl wait --for condition=Available` and the `Status` printer column read the same
//! thing on our objects and on upstream's.

use serde_json::{json, Value};

/// The enactment's state on its node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Enactment {
    /// Waiting for a free slot of the policy's `maxUnavailable`.
    Pending,
    Progressing,
    Available,
    /// Failed (after its retries); the message says why and that the node was put back.
    Failing(String),
    /// Not tried: the rollout's failures reached `maxUnavailable`.
    Aborted,
}

pub const ENACTMENT_TYPES: [&str; 5] =
    ["Failing", "Available", "Progressing", "Pending", "Aborted"];
pub const POLICY_TYPES: [&str; 4] = ["Available", "Degraded", "Progressing", "Ignored"];

impl Enactment {
    /// (true type, reason, message)
    fn parts(&self) -> (&'static str, &'static str, String) {
        match self {
            Enactment::Pending => (
                "Pending",
                "MaxUnavailableLimitReached",
                "The maximum number of nodes configured at once was reached; waiting".to_string(),
            ),
            Enactment::Progressing => (
                "Progressing",
                "ConfigurationProgressing",
                "Applying the desired state".to_string(),
            ),
            Enactment::Available => (
                "Available",
                "SuccessfullyConfigured",
                "Successfully configured".to_string(),
            ),
            Enactment::Failing(why) => ("Failing", "FailedToConfigure", why.clone()),
            Enactment::Aborted => (
                "Aborted",
                "ConfigurationAborted",
                "Not applied: the policy failed on as many nodes as maxUnavailable allows"
                    .to_string(),
            ),
        }
    }

    /// The enactment's `status.conditions`, keeping the transition times of `old` where a
    /// condition's status did not change.
    pub fn conditions(&self, old: &Value, now: &str) -> Value {
        let (true_type, reason, message) = self.parts();
        condition_set(&ENACTMENT_TYPES, true_type, reason, &message, old, now)
    }

    /// Read back from an enactment's conditions; None when it has none yet.
    pub fn read(conditions: &Value) -> Option<Enactment> {
        let true_type = true_condition(conditions)?;
        Some(match true_type.0.as_str() {
            "Pending" => Enactment::Pending,
            "Progressing" => Enactment::Progressing,
            "Available" => Enactment::Available,
            "Failing" => Enactment::Failing(true_type.1),
            "Aborted" => Enactment::Aborted,
            _ => return None,
        })
    }
}

/// What the policy's enactments of its current generation say, over the nodes it matches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rollout {
    /// Nodes that match the selector and run a handler.
    pub matching: usize,
    pub available: usize,
    pub failing: usize,
    pub aborted: usize,
}

impl Rollout {
    /// The policy's `status.conditions`.
    pub fn conditions(&self, old: &Value, now: &str) -> Value {
        let finished = self.available + self.failing + self.aborted;
        let (true_type, reason, message) = if self.matching == 0 {
            (
                "Ignored",
                "NoMatchingNode",
                "Policy does not match any node".to_string(),
            )
        } else if finished < self.matching {
            (
                "Progressing",
                "ConfigurationProgressing",
                format!(
                    "Policy is progressing {finished}/{} nodes finished",
                    self.matching
                ),
            )
        } else if self.failing + self.aborted > 0 {
            (
                "Degraded",
                "FailedToConfigure",
                format!(
                    "{}/{} nodes failed to configure{}",
                    self.failing,
                    self.matching,
                    match self.aborted {
                        0 => String::new(),
                        n => format!(", {n} aborted"),
                    }
                ),
            )
        } else {
            (
                "Available",
                "SuccessfullyConfigured",
                format!(
                    "{}/{} nodes successfully configured",
                    self.available, self.matching
                ),
            )
        };
        condition_set(&POLICY_TYPES, true_type, reason, &message, old, now)
    }
}

/// Every type of `types`, `true_type` True with `reason` and `message`, the others False.
fn condition_set(
    types: &[&str],
    true_type: &str,
    reason: &str,
    message: &str,
    old: &Value,
    now: &str,
) -> Value {
    let conditions: Vec<Value> = types
        .iter()
        .map(|t| {
            let on = *t == true_type;
            let status = if on { "True" } else { "False" };
            let transition = previous(old, t)
                .filter(|c| c["status"] == status)
                .and_then(|c| c["lastTransitionTime"].as_str().map(str::to_string))
                .unwrap_or_else(|| now.to_string());
            let mut c = json!({
                "type": t,
                "status": status,
                "lastHeartbeatTime": now,
                "lastTransitionTime": transition,
            });
            // Empty ones are left out, as upstream writes them.
            if on {
                c["reason"] = json!(reason);
                c["message"] = json!(message);
            }
            c
        })
        .collect();
    Value::Array(conditions)
}

fn previous<'a>(old: &'a Value, kind: &str) -> Option<&'a Value> {
    old.as_array()?.iter().find(|c| c["type"] == kind)
}

/// The type and message of the condition that is True.
fn true_condition(conditions: &Value) -> Option<(String, String)> {
    let c = conditions
        .as_array()?
        .iter()
        .find(|c| c["status"] == "True")?;
    Some((
        c["type"].as_str()?.to_string(),
        c["message"].as_str().unwrap_or_default().to_string(),
    ))
}

/// Whether two condition sets say the same, ignoring the times: a write that changes only the
/// heartbeat is not made.
pub fn same(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| -> Vec<(Value, Value, Value, Value)> {
        v.as_array()
            .map(|cs| {
                cs.iter()
                    .map(|c| {
                        (
                            c["type"].clone(),
                            c["status"].clone(),
                            c["reason"].clone(),
                            c["message"].clone(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    strip(a) == strip(b)
}

#[cfg(test)]
mod tests;
