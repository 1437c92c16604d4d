//! `node-agent run`: the DaemonSet's long-running container. Installs (a failure exits
//! non-zero, so the kubelet restarts the pod with backoff), then stays up without writing to
//! the binaries again, so that the DaemonSet's readiness means "installed". With `--mark`, it
//! publishes the node's bridges when the kernel reports a link appearing, going or moving
//! (`link_events`), within a second, and lists them every `--interval` as well, a resync for
//! notifications lost; with `--gc-interval`, it collects what lost DELs left (`gc::round`)
//! that often and when the runtime restarts. SIGTERM (or SIGINT) ends it cleanly and at
//! once, even in the middle of a round: each round races the signals, so a request the API
//! server does not answer never holds the container past its grace period. The listing itself
//! (a synchronous netlink dump, or an OVSDB request of up to seconds) runs on a blocking
//! thread, so it never stalls the runtime's one thread.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::signal::unix::SignalKind;
use tokio::time::MissedTickBehavior;
use tracing::{info, info_span, warn, Instrument};

use crate::bridges::Source;
use crate::cli::{GcLoop, MarkOptions, RunOptions};
use crate::error::{Context, Result};
use crate::gc::round;
use crate::install;
use crate::marker::Published;
use crate::metrics::Metrics;
use crate::node::NodeStatus;
use agent_runtime::link_events::{next_change, LinkWatch};
use agent_runtime::runtime::{api_client, catch, current_thread_runtime, stop_signal};

/// The node is read again at least this often, to undo what others changed (as upstream).
const RESYNC: Duration = Duration::from_secs(10 * 60);

/// A round that has not finished by then (an API server that does not answer: the client's own
/// read timeout is minutes) is given up, logged, and tried again at the next tick.
const ROUND_TIMEOUT: Duration = Duration::from_secs(20);

/// Link notifications within this long after the first make one round: creating a bridge and
/// its ports, or a pod's veth coming up, is a burst of them.
const SETTLE: Duration = Duration::from_millis(100);

/// A collection runs each plugin's GC, a minute at most each; a round past this is given up.
const GC_ROUND_TIMEOUT: Duration = Duration::from_secs(5 * 60);
/// How often the runtime's socket is looked at, to collect right after a restart.
const RUNTIME_POLL: Duration = Duration::from_secs(5);

pub fn run(opts: &RunOptions) -> Result<()> {
    // Before any runtime thread exists: nothing forks while a file is open for writing.
    install::install(&opts.install)?;
    let runtime = current_thread_runtime()?;
    let result = runtime.block_on(serve(opts));
    // A listing still running on a blocking thread when the signal came must not hold up the
    // exit: dropping the runtime would wait for it.
    runtime.shutdown_background();
    result
}

/// Marks bridges and collects garbage, as asked, until a signal: each races the signals, so a
/// request the API server does not answer never holds the container past its grace period.
async fn serve(opts: &RunOptions) -> Result<()> {
    let mut term = catch(SignalKind::terminate(), "handling SIGTERM")?;
    let mut int = catch(SignalKind::interrupt(), "handling SIGINT")?;
    if opts.mark.is_none() && opts.gc.is_none() {
        info!("installed; waiting for SIGTERM");
        stop_signal(&mut term, &mut int).await;
        info!("stopping");
        return Ok(());
    }
    let client = api_client().await?;
    let marking = async {
        match &opts.mark {
            Some(mark) => mark_every(&client, mark).await,
            None => std::future::pending().await,
        }
    };
    let metrics = Arc::new(Metrics::default());
    if let Some(address) = opts.metrics_address {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .context("listening for the metrics")?;
        let tls = http_endpoint::self_signed(&http_endpoint::tls::local_names())?;
        info!("serving the collection's metrics at https://{address}/metrics, to tokens allowed to get /metrics");
        let metrics = Arc::clone(&metrics);
        let authorizer = Arc::new(http_endpoint::Authorizer::new(client.clone()));
        tokio::spawn(http_endpoint::serve(
            listener,
            tls.config,
            authorizer,
            move |path: &str| metrics.answer(path),
        ));
    }
    let collecting = async {
        match &opts.gc {
            Some(gc) => collect_every(&client, gc, &metrics).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        () = stop_signal(&mut term, &mut int) => {}
        failed = marking => failed?,
        () = collecting => {}
    }
    info!("stopping");
    Ok(())
}

/// Publishes the node's bridges when its links change and every `--interval`; returns only if
/// it cannot start.
async fn mark_every(client: &kube::Client, mark: &MarkOptions) -> Result<()> {
    let node = NodeStatus::new(client.clone(), &mark.node_name);
    let source = Arc::new(Source::open(mark.mark, &mark.ovsdb)?);
    let mut published = Published::new(RESYNC);
    // Subscribed before the first listing, so that no change in between goes unseen. Without
    // notifications the ticks still publish everything, later.
    let otherwise = format!("listing every {:?} only", mark.interval);
    let mut links = LinkWatch::open()
        .inspect_err(|e| warn!("{}; {otherwise}", e.report()))
        .ok();
    let mut ticker = tokio::time::interval(mark.interval);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    info!(
        "publishing {} bridges of node {} when its links change, and every {:?}",
        mark.mark.as_str(),
        node.name(),
        mark.interval
    );
    for n in 1u64.. {
        tokio::select! {
            _ = ticker.tick() => {}
            // A round lists everything: the next resync is due a whole interval after it.
            () = next_change(&mut links, SETTLE, &otherwise) => ticker.reset(),
        }
        // A round that fails or takes too long is logged and tried again at the next tick or
        // link change; a listing that fails never publishes "no bridges".
        let span = info_span!("mark", round = n);
        let this_round = tokio::time::timeout(
            ROUND_TIMEOUT,
            round(&node, mark, &source, &mut published).instrument(span.clone()),
        );
        let outcome = this_round.await;
        span.in_scope(|| match outcome {
            Ok(Ok(())) => {}
            Ok(Err(e)) => warn!("marking bridges: {}", e.report()),
            Err(_) => warn!(
                "marking bridges: not done in {}s, given up until the next tick",
                ROUND_TIMEOUT.as_secs()
            ),
        });
    }
    Ok(())
}

/// Collects garbage every `--gc-interval`, and at once when the runtime restarts (its socket is
/// made anew): a restart is when sandboxes are most likely to have gone without their DEL.
async fn collect_every(client: &kube::Client, gc: &GcLoop, metrics: &Metrics) {
    info!(
        "collecting what lost DELs left on node {} every {:?}",
        gc.round.node_name, gc.interval
    );
    let mut runtime = socket_identity(&gc.round.cri_socket);
    let mut patience = round::Patience::new(round::PATIENCE);
    let mut due = Instant::now();
    for n in 1u64.. {
        let now_runtime = socket_identity(&gc.round.cri_socket);
        let restarted = now_runtime.is_some() && now_runtime != runtime;
        if restarted || Instant::now() >= due {
            if restarted {
                info!("the runtime at {} restarted", gc.round.cri_socket.display());
            }
            runtime = now_runtime;
            due = Instant::now() + gc.interval;
            let span = info_span!("gc", round = n);
            let this_round = tokio::time::timeout(
                GC_ROUND_TIMEOUT,
                round::collect_garbage(client, &gc.round, &mut patience),
            );
            match this_round.instrument(span.clone()).await {
                Ok(Ok(report)) => {
                    metrics.round(&report);
                    span.in_scope(|| report.log())
                }
                // Nothing was collected: a runtime or API server that cannot be asked never
                // means "nothing is alive".
                Ok(Err(e)) => {
                    metrics.failed_round();
                    span.in_scope(|| warn!("not collected: {}", e.report()))
                }
                Err(_) => {
                    metrics.failed_round();
                    span.in_scope(|| {
                        warn!("not collected: not done in {}s", GC_ROUND_TIMEOUT.as_secs())
                    })
                }
            }
        }
        tokio::time::sleep(RUNTIME_POLL.min(gc.interval)).await;
    }
}

/// The socket file's device, inode and change time: a runtime that restarts makes its socket
/// anew, often under the inode number the old one freed, never at the same nanosecond.
fn socket_identity(socket: &std::path::Path) -> Option<(u64, u64, i64, i64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(socket)
        .ok()
        .map(|m| (m.dev(), m.ino(), m.ctime(), m.ctime_nsec()))
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
        .context("listing bridges")??;
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
