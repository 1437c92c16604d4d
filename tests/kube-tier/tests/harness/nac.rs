//! The NetworkAddonsConfig `cluster` as the scenarios apply it, wait on it and hand it on from
//! one to the next.

use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::Value;

use kube_tier::cluster::{condition, condition_status};
use kube_tier::daemon::wait_for;

use super::ctx::Ctx;

/// A spec applied by [`Ctx::apply_nac`], and what identifies the object it made: a later
/// change of its spec, labels or the object itself shows in them.
#[derive(Clone, PartialEq)]
pub(super) struct AppliedConfig {
    spec: String,
    uid: Value,
    generation: Value,
    labels: Value,
}

impl Ctx {
    /// The NetworkAddonsConfig `cluster` as `spec` (YAML lines under `spec:`).
    pub fn apply_nac(&self, spec: &str) -> Result<()> {
        let indented: String = spec.lines().map(|l| format!("  {l}\n")).collect();
        self.apply(&format!(
            "apiVersion: networkaddonsoperator.network.kubevirt.io/v1\nkind: NetworkAddonsConfig\n\
             metadata:\n  name: cluster\nspec:\n{indented}"
        ))?;
        let applied = self.applied_config(spec)?;
        *self
            .applied
            .lock()
            .map_err(|_| anyhow::anyhow!("poisoned"))? = Some(applied);
        Ok(())
    }

    fn applied_config(&self, spec: &str) -> Result<AppliedConfig> {
        let nac = self.nac()?;
        Ok(AppliedConfig {
            spec: spec.to_string(),
            uid: nac["metadata"]["uid"].clone(),
            generation: nac["metadata"]["generation"].clone(),
            labels: nac["metadata"]["labels"].clone(),
        })
    }

    /// Starts a scenario from the NetworkAddonsConfig `spec`, Available: the one an earlier
    /// scenario left is handed on when [`Ctx::apply_nac`] applied that very spec and nothing has
    /// changed the object since; otherwise the cluster is reset and `spec` applied.
    pub fn start_from(&self, spec: &str) -> Result<()> {
        let last = self
            .applied
            .lock()
            .map_err(|_| anyhow::anyhow!("poisoned"))?
            .clone();
        let unchanged = match last {
            Some(last) if last.spec == spec => {
                self.applied_config(spec).ok().as_ref() == Some(&last)
            }
            _ => false,
        };
        if !unchanged {
            crate::scenarios::operator::reset(self)?;
            self.apply_nac(spec)?;
        }
        self.kubectl_wait("Available", "240s")
    }

    pub fn nac(&self) -> Result<Value> {
        self.get(&["get", "networkaddonsconfig", "cluster"])
    }

    /// Waits until condition `type_` of the NetworkAddonsConfig has `status`, for the current
    /// generation; returns the object.
    pub fn wait_nac(&self, type_: &str, status: &str, timeout: Duration) -> Result<Value> {
        wait_for(
            &format!("NetworkAddonsConfig {type_}={status}"),
            timeout,
            || {
                let nac = self.nac()?;
                let observed = nac["status"]["observedGeneration"].as_i64();
                let current = nac["metadata"]["generation"].as_i64();
                let fresh = observed.is_none() || observed == current;
                Ok(
                    (fresh && condition_status(&nac, type_).as_deref() == Some(status))
                        .then_some(nac),
                )
            },
        )
        .with_context(|| {
            format!(
                "status now: {}",
                self.nac()
                    .map(|n| n["status"].to_string())
                    .unwrap_or_default()
            )
        })
    }

    /// `kubectl wait networkaddonsconfig cluster --for condition=X`, as users run it.
    pub fn kubectl_wait(&self, condition: &str, timeout: &str) -> Result<()> {
        self.kubectl(&[
            "wait",
            "networkaddonsconfig",
            "cluster",
            &format!("--for=condition={condition}"),
            &format!("--timeout={timeout}"),
        ])
        .map(drop)
    }
}

pub fn nac_condition(nac: &Value, type_: &str) -> Option<Value> {
    condition(nac, type_).cloned()
}
