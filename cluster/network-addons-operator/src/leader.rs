//! One reconciler among the replicas: leader election on the Lease [`LEASE`] in the operand
//! namespace. A replica reconciles only while it holds the Lease, renewing it every
//! `DURATION - GRACE` seconds; the others wait and take it over at the latest [`DURATION`]
//! seconds after its last renewal (a replica stopping releases it). A renewal fails `GRACE`
//! seconds before the Lease would expire; a leader whose renewals keep failing for `GRACE`
//! seconds may lose it to another at any moment: it exits, and starts again as a follower.

use std::future::Future;
use std::time::{Duration, Instant};

use kube::Client;
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder};

use crate::apply::FIELD_MANAGER;
use crate::error::{Context, Error, Result};
use crate::manifests::OPERATOR_NAME;
use crate::settings::Settings;

/// The Lease the replicas elect their leader on.
pub const LEASE: &str = OPERATOR_NAME;
/// How long a Lease holds after its last renewal, in seconds: the longest a follower waits
/// for a leader that is gone (client-go's default).
pub const DURATION: u64 = 15;
/// How long before the Lease expires its holder renews it, in seconds: a leader whose renewal
/// is slow (a busy API server, a starved node) keeps the Lease for this long, as client-go's
/// renew deadline of 10 s does. A margin of seconds lost it to the other replica on a busy
/// test cluster, and a lost Lease costs a restart.
const GRACE: u64 = 10;

/// Runs `lead` once this replica holds the Lease, until it ends or the Lease is lost; returns
/// without leading when SIGTERM or Ctrl-C comes first.
pub async fn while_leading(
    client: Client,
    settings: &Settings,
    lead: impl Future<Output = Result<()>>,
) -> Result<()> {
    let identity = if settings.pod_name.is_empty() {
        format!("{OPERATOR_NAME}-{}", std::process::id())
    } else {
        settings.pod_name.clone()
    };
    let lease = LeaseManagerBuilder::new(client, LEASE)
        .with_namespace(&settings.namespace)
        .with_identity(&identity)
        .with_duration(DURATION)
        .with_grace(GRACE)
        .with_field_manager(format!("{FIELD_MANAGER}-{identity}"))
        .build()
        .await
        .with_context(|| format!("use Lease {}/{LEASE}", settings.namespace))?;
    tracing::info!(lease = LEASE, %identity, "waiting to lead");
    tokio::select! {
        acquired = acquire(&lease) => acquired?,
        () = shutdown() => return Ok(()),
    }
    tracing::info!(lease = LEASE, %identity, "leading");
    let outcome = tokio::select! {
        done = lead => done,
        lost = hold(&lease) => lost,
    };
    if let Err(e) = lease.release().await {
        tracing::warn!(error = %e, "Lease not released; the next leader waits for it to expire");
    }
    outcome
}

async fn acquire(lease: &LeaseManager) -> Result<()> {
    loop {
        match lease.changed().await {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the Lease; trying again");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// Keeps renewing the Lease; returns the error to exit with once it is lost, or once its
/// renewals failed for `GRACE` seconds.
async fn hold(lease: &LeaseManager) -> Result<()> {
    let mut renewals = Renewals::default();
    loop {
        let called = Instant::now();
        match lease.changed().await {
            // While it leads, the call returns only when that changes, or on a failure.
            Ok(true) => {}
            Ok(false) => return Err(Error::other("lost the Lease to another replica")),
            Err(e) => {
                if renewals.failed(called, Instant::now()) {
                    return Err(Error::wrap("renew the Lease", e));
                }
                tracing::warn!(error = %e, "cannot renew the Lease; trying again");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// How long a leader has failed to renew.
#[derive(Debug, Default)]
struct Renewals {
    failing_since: Option<Instant>,
}

impl Renewals {
    /// A renewal attempt made at `called` failed at `now`: whether to give the Lease up. An
    /// attempt that lasted a renewal period renewed the Lease in between: the failures start
    /// again from it.
    fn failed(&mut self, called: Instant, now: Instant) -> bool {
        if now.duration_since(called) >= Duration::from_secs(DURATION - GRACE) {
            self.failing_since = None;
        }
        let since = *self.failing_since.get_or_insert(now);
        now.duration_since(since) >= Duration::from_secs(GRACE)
    }
}

/// SIGTERM or Ctrl-C.
async fn shutdown() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(_) => return std::future::pending().await,
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

#[cfg(test)]
mod tests;
