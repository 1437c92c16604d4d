//! `cni-installer run`: the DaemonSet's long-running container. Installs (a failure exits
//! non-zero, so the kubelet restarts the pod with backoff), then stays up without writing to
//! the binaries again, so that the DaemonSet's readiness means "installed". With `--mark`, it
//! publishes the node's bridges every `--interval`. SIGTERM (or SIGINT) ends it cleanly.

use std::time::{Duration, Instant};

use tokio::signal::unix::{signal, SignalKind};
use tokio::time::MissedTickBehavior;

use crate::bridges::Source;
use crate::cli::{MarkOptions, RunOptions};
use crate::error::{Context, Result};
use crate::install;
use crate::marker::Published;
use crate::node::NodeStatus;

/// The node is read again at least this often, to undo what others changed (as upstream).
const RESYNC: Duration = Duration::from_secs(10 * 60);

pub fn run(opts: &RunOptions, log: &dyn Fn(&str)) -> Result<()> {
    // Before any runtime thread exists: nothing forks while a file is open for writing.
    let report = install::install(&opts.install)?;
    crate::print_install_report(&report, log);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(serve(opts.mark.as_ref(), log))
}

async fn serve(mark: Option<&MarkOptions>, log: &dyn Fn(&str)) -> Result<()> {
    let mut term = signal(SignalKind::terminate()).context("handling SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("handling SIGINT")?;
    let Some(mark) = mark else {
        log("installed; waiting for SIGTERM");
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        log("stopping");
        return Ok(());
    };

    let client = kube::Client::try_default()
        .await
        .context("connecting to the API server")?;
    let node = NodeStatus::new(client, &mark.node_name);
    let source = Source::open(mark.mark, &mark.ovsdb)?;
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
            _ = term.recv() => break,
            _ = int.recv() => break,
            _ = ticker.tick() => {
                // A round that fails is logged and tried again at the next tick; a listing that
                // fails never publishes "no bridges".
                if let Err(e) = round(&node, mark, &source, &mut published, log).await {
                    log(&format!("marking bridges: {e}"));
                }
            }
        }
    }
    log("stopping");
    Ok(())
}

async fn round(
    node: &NodeStatus,
    mark: &MarkOptions,
    source: &Source,
    published: &mut Published,
    log: &dyn Fn(&str),
) -> Result<()> {
    let bridges = source.list()?;
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
