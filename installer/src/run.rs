//! `cni-installer run`: the DaemonSet's long-running container. Installs (a failure exits
//! non-zero, so the kubelet restarts the pod with backoff), then stays up without writing to
//! the binaries again, so that the DaemonSet's readiness means "installed". With `--mark`, it
//! publishes the node's bridges every `--interval`. SIGTERM (or SIGINT) ends it cleanly and at
//! once, even in the middle of a round: each round races the signals, so a request the API
//! server does not answer never holds the container past its grace period. The listing itself
//! (a synchronous netlink dump, or an OVSDB request of up to seconds) runs on a blocking
//! thread, so it never stalls the runtime's one thread.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::time::MissedTickBehavior;
use tracing::{info, info_span, warn, Instrument};

use crate::bridges::Source;
use crate::cli::{MarkOptions, RunOptions};
use crate::error::{Error, Result};
use crate::install;
use crate::marker::Published;
use crate::node::NodeStatus;

/// The node is read again at least this often, to undo what others changed (as upstream).
const RESYNC: Duration = Duration::from_secs(10 * 60);

/// A round that has not finished by then (an API server that does not answer: the client's own
/// read timeout is minutes) is given up, logged, and tried again at the next tick.
const ROUND_TIMEOUT: Duration = Duration::from_secs(20);

pub fn run(opts: &RunOptions) -> Result<()> {
    // Before any runtime thread exists: nothing forks while a file is open for writing.
    install::install(&opts.install)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| Error::System {
            action: "starting the runtime",
            source,
        })?;
    let result = runtime.block_on(serve(opts.mark.as_ref()));
    // A listing still running on a blocking thread when the signal came must not hold up the
    // exit: dropping the runtime would wait for it.
    runtime.shutdown_background();
    result
}

/// Returns when SIGTERM or SIGINT arrives (or arrived since the last call).
async fn stop_signal(term: &mut Signal, int: &mut Signal) {
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

/// Starts catching the signal `kind`.
fn catch(kind: SignalKind, action: &'static str) -> Result<Signal> {
    signal(kind).map_err(|source| Error::System { action, source })
}

async fn serve(mark: Option<&MarkOptions>) -> Result<()> {
    let mut term = catch(SignalKind::terminate(), "handling SIGTERM")?;
    let mut int = catch(SignalKind::interrupt(), "handling SIGINT")?;
    let Some(mark) = mark else {
        info!("installed; waiting for SIGTERM");
        stop_signal(&mut term, &mut int).await;
        info!("stopping");
        return Ok(());
    };

    let client = kube::Client::try_default()
        .await
        .map_err(|e| Error::kube("connecting to the API server", e))?;
    let node = NodeStatus::new(client, &mark.node_name);
    let source = Arc::new(Source::open(mark.mark, &mark.ovsdb)?);
    let mut published = Published::new(RESYNC);
    let mut ticker = tokio::time::interval(mark.interval);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    info!(
        "publishing {} bridges of node {} every {:?}",
        mark.mark.as_str(),
        node.name(),
        mark.interval
    );
    for n in 1u64.. {
        tokio::select! {
            () = stop_signal(&mut term, &mut int) => break,
            _ = ticker.tick() => {}
        }
        // A round that fails or takes too long is logged and tried again at the next tick; a
        // listing that fails never publishes "no bridges". A signal ends it where it is.
        let span = info_span!("mark", round = n);
        let this_round = tokio::time::timeout(
            ROUND_TIMEOUT,
            round(&node, mark, &source, &mut published).instrument(span.clone()),
        );
        tokio::select! {
            () = stop_signal(&mut term, &mut int) => break,
            outcome = this_round => span.in_scope(|| match outcome {
                Ok(Ok(())) => {}
                Ok(Err(e)) => warn!("marking bridges: {}", e.report()),
                Err(_) => warn!(
                    "marking bridges: not done in {}s, given up until the next tick",
                    ROUND_TIMEOUT.as_secs()
                ),
            }),
        }
    }
    info!("stopping");
    Ok(())
}

async fn round(
    node: &NodeStatus,
    mark: &MarkOptions,
    source: &Arc<Source>,
    published: &mut Published,
) -> Result<()> {
    let listing = Arc::clone(source);
    let bridges = tokio::task::spawn_blocking(move || listing.list())
        .await
        .map_err(|e| Error::msg(format!("listing bridges: {e}")))??;
    let now = Instant::now();
    if !published.needs_sync(&bridges, now) {
        return Ok(());
    }
    let plan = node.publish(mark.mark, &bridges).await?;
    for bridge in &plan.added {
        info!("published {}", mark.mark.resource(bridge));
    }
    for bridge in &plan.removed {
        info!("withdrew {}", mark.mark.resource(bridge));
    }
    for bridge in &plan.skipped {
        warn!("bridge {bridge:?} is not published: not a valid resource name");
    }
    published.synced(bridges, now);
    Ok(())
}
