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

use crate::bridges::Source;
use crate::cli::{MarkOptions, RunOptions};
use crate::error::{Context, Result};
use crate::install;
use crate::marker::Published;
use crate::node::NodeStatus;

/// The node is read again at least this often, to undo what others changed (as upstream).
const RESYNC: Duration = Duration::from_secs(10 * 60);

/// A round that has not finished by then (an API server that does not answer: the client's own
/// read timeout is minutes) is given up, logged, and tried again at the next tick.
const ROUND_TIMEOUT: Duration = Duration::from_secs(20);

pub fn run(opts: &RunOptions, log: &dyn Fn(&str)) -> Result<()> {
    // Before any runtime thread exists: nothing forks while a file is open for writing.
    let report = install::install(&opts.install)?;
    crate::print_install_report(&report, log);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let result = runtime.block_on(serve(opts.mark.as_ref(), log));
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

async fn serve(mark: Option<&MarkOptions>, log: &dyn Fn(&str)) -> Result<()> {
    let mut term = signal(SignalKind::terminate()).context("handling SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("handling SIGINT")?;
    let Some(mark) = mark else {
        log("installed; waiting for SIGTERM");
        stop_signal(&mut term, &mut int).await;
        log("stopping");
        return Ok(());
    };

    let client = kube::Client::try_default()
        .await
        .context("connecting to the API server")?;
    let node = NodeStatus::new(client, &mark.node_name);
    let source = Arc::new(Source::open(mark.mark, &mark.ovsdb)?);
    let mut published = Published::new(RESYNC);
    let mut ticker = tokio::time::interval(mark.interval);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    log(&format!(
        "publishing {} bridges of node {} every {:?}",
        mark.mark.as_str(),
        node.name(),
        mark.interval
    ));
    loop {
        tokio::select! {
            () = stop_signal(&mut term, &mut int) => break,
            _ = ticker.tick() => {}
        }
        // A round that fails or takes too long is logged and tried again at the next tick; a
        // listing that fails never publishes "no bridges". A signal ends it where it is.
        let this_round = tokio::time::timeout(
            ROUND_TIMEOUT,
            round(&node, mark, &source, &mut published, log),
        );
        tokio::select! {
            () = stop_signal(&mut term, &mut int) => break,
            outcome = this_round => match outcome {
                Ok(Ok(())) => {}
                Ok(Err(e)) => log(&format!("marking bridges: {e}")),
                Err(_) => log(&format!(
                    "marking bridges: not done in {}s, given up until the next tick",
                    ROUND_TIMEOUT.as_secs()
                )),
            },
        }
    }
    log("stopping");
    Ok(())
}

async fn round(
    node: &NodeStatus,
    mark: &MarkOptions,
    source: &Arc<Source>,
    published: &mut Published,
    log: &dyn Fn(&str),
) -> Result<()> {
    let listing = Arc::clone(source);
    let bridges = tokio::task::spawn_blocking(move || listing.list())
        .await
        .context("listing bridges")??;
    let now = Instant::now();
    if !published.needs_sync(&bridges, now) {
        return Ok(());
    }
    let plan = node.publish(mark.mark, &bridges).await?;
    for bridge in &plan.added {
        log(&format!("published {}", mark.mark.resource(bridge)));
    }
    for bridge in &plan.removed {
        log(&format!("withdrew {}", mark.mark.resource(bridge)));
    }
    for bridge in &plan.skipped {
        log(&format!(
            "bridge {bridge:?} is not published: not a valid resource name"
        ));
    }
    published.synced(bridges, now);
    Ok(())
}
