//! A policy's desired state applied to the node as a transaction: an earlier change that could
//! not be undone put back first, the change made (journal first), probed, then kept or rolled
//! back; what may pass next time is tried again after a wait that `transitions::retry` chooses.

use error_context::report;
use kube::api::DynamicObject;
use nmstate_netlink::DesiredState;
use tracing::warn;

use super::enact::Handler;
use super::probes::{self, Probe};
use super::transitions::{self, ApplyError, Started, TRIES};
use crate::error::{Context, Error};

impl Handler {
    /// Applies, trying again what `transitions::retry` says may pass next time.
    pub(super) async fn apply_with_retries(
        &self,
        name: &str,
        policy: &DynamicObject,
        started: Started,
    ) -> Result<String, ApplyError> {
        let mut tries = 0;
        loop {
            tries += 1;
            let why = match self.apply(policy, started).await {
                Ok(summary) => return Ok(summary),
                Err(why) => why,
            };
            let Some(wait) = transitions::retry(tries, &why) else {
                return Err(why);
            };
            warn!(
                "policy {name}: try {tries} of {TRIES} failed, again in {wait:?}: {}",
                report(&why)
            );
            tokio::time::sleep(wait).await;
        }
    }

    /// One transaction: parse, apply (journal first), probe, then commit or roll back. A
    /// journal an earlier apply left (its rollback failed) is restored first: no new change is
    /// made over a node that is not back.
    pub(super) async fn apply(
        &self,
        policy: &DynamicObject,
        started: Started,
    ) -> Result<String, ApplyError> {
        let journal = super::journal_path(&self.opts.state_dir);
        let restore = journal.clone();
        let restored = blocking(move || nmstate_netlink::recover(&restore))
            .await?
            .context("an earlier change could not be undone, nothing more is applied")
            .map_err(ApplyError::RollbackFailed)?;
        if let Some(what) = restored {
            warn!("an earlier change was undone first: {what}");
        }
        let desired = parse(policy).map_err(ApplyError::Refused)?;
        let mut probes = self.opts.probes.clone();
        if started == Started::Again {
            // A node that just booted may not be Ready until its policies are back (its
            // cluster network may need them): that probe would refuse what makes it Ready.
            probes.retain(|p| *p != Probe::NodeReady);
        }
        let plan = probes::before(&probes).await;
        let applied = blocking(move || nmstate_netlink::apply(&desired, &journal))
            .await?
            .map_err(classify)?;
        let summary = applied.summary().replace('\n', "; ");
        // Nothing changed, nothing to probe: a no-op must not fail for an API server that is
        // away for a moment.
        let probed = if applied.changed() {
            plan.run(&self.client, &self.opts.node_name, self.opts.probe_timeout)
                .await
        } else {
            Ok(())
        };
        match probed {
            Ok(()) => {
                blocking(move || applied.commit())
                    .await?
                    .map_err(classify)?;
                Ok(summary)
            }
            Err(probe) => match blocking(move || applied.rollback()).await? {
                Ok(()) => Err(ApplyError::Probe(probe)),
                Err(e) => Err(ApplyError::ProbeRollbackFailed {
                    probe,
                    rollback: e.into(),
                }),
            },
        }
    }
}

/// The policy's desired state, parsed; what we do not apply is refused by name. `capture`
/// (nmpolicy templates) is not implemented: a policy using it is refused rather than applied
/// with its template text.
fn parse(policy: &DynamicObject) -> Result<DesiredState, Error> {
    let capture = &policy.data["spec"]["capture"];
    if capture.as_object().is_some_and(|c| !c.is_empty()) {
        return Err(Error::Unsupported("spec.capture (nmpolicy captures)"));
    }
    Ok(DesiredState::parse(&policy.data["spec"]["desiredState"])?)
}

/// What a failed apply or commit means for the policy: a refusal changed nothing, a failed
/// rollback leaves the node in between, anything else may pass another try.
fn classify(e: nmstate_netlink::Error) -> ApplyError {
    match e {
        nmstate_netlink::Error::Refused(_) => ApplyError::Refused(e.into()),
        nmstate_netlink::Error::RollbackFailed { .. } => ApplyError::RollbackFailed(e.into()),
        e => ApplyError::Failed(e.into()),
    }
}

/// Runs `f` on a blocking thread (netlink and file system calls).
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ApplyError> {
    tokio::task::spawn_blocking(f)
        .await
        .context("the apply did not finish")
        .map_err(ApplyError::Failed)
}
