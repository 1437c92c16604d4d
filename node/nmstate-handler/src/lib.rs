//! kubernetes-nmstate's handler, run as `node-agent nmstate` on the node's kernel, with no
//! NetworkManager. It serves the same API (NodeNetworkConfigurationPolicy, its enactments,
//! NodeNetworkState) and applies each policy over netlink as a transaction that the node
//! survives (`nmstate_netlink`): what the node cannot do is refused before anything changes,
//! and a change that fails its verification or its probes is rolled back.
//!
//! At start, before its ready mark: a journal left by a handler killed mid-apply is restored,
//! and the policies enacted on this node are applied again (after a reboot the kernel holds
//! none of them). Then policies are followed with a watch (and listed again every resync), and
//! the NodeNetworkState is refreshed on link notifications and every resync, written only when
//! it changed.
//!
//! Of the node agent it needs only what every long-running command shares (the runtime, the
//! API client, stop signals, the directory lock, link notifications), which is in
//! `agent_runtime`; that crate's error is one variant of the handler's own (`error`), which
//! adds what only the handler meets: the node's network state, policies it cannot use, probes.
//! Nothing here depends on the installer.

pub mod conditions;
pub mod enact;
pub mod error;
pub mod probes;
pub mod resources;
pub mod rollout;
mod slots;
pub mod state_report;
mod status;
mod transaction;
mod transitions;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::StreamExt;
use kube::api::{DynamicObject, WatchEvent, WatchParams};
use tokio::signal::unix::SignalKind;
use tokio::time::MissedTickBehavior;
use tracing::{info, warn};

use agent_runtime::link_events::{next_change, LinkWatch};
use agent_runtime::lock::DirLock;
use agent_runtime::runtime;
pub use enact::Options;
use enact::{Handler, Synced};
use error::Context;
pub use error::{Error, Result};
use state_report::StateReport;

/// Where the DaemonSet mounts the node's directory of the handler.
pub const DEFAULT_STATE_DIR: &str = "/run/kubernetes-nmstate";
/// Policies listed and the state read again at least this often (upstream: every minute).
const RESYNC: Duration = Duration::from_secs(60);
/// Link notifications within this long after the first make one state refresh.
const SETTLE: Duration = Duration::from_millis(500);

/// The apply's journal: what it takes to put the node back, until the change is kept.
pub fn journal_path(state_dir: &Path) -> PathBuf {
    state_dir.join("apply.journal")
}

/// The file whose presence is the handler's readiness.
pub fn ready_mark(state_dir: &Path) -> PathBuf {
    state_dir.join("ready")
}

/// `node-agent nmstate-ready`: the readiness probe.
pub fn ready(state_dir: &Path) -> Result<()> {
    let mark = ready_mark(state_dir);
    if mark.exists() {
        Ok(())
    } else {
        Err(Error::NotReady(mark))
    }
}

pub fn run(opts: &Options) -> Result<()> {
    std::fs::create_dir_all(&opts.state_dir)
        .with_context(|| format!("creating {}", opts.state_dir.display()))?;
    // One handler per node: a second (an old pod still terminating) waits here.
    let _lock = DirLock::acquire(&opts.state_dir)?;
    let mark = ready_mark(&opts.state_dir);
    match std::fs::remove_file(&mark) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        removed => removed.with_context(|| format!("removing {}", mark.display()))?,
    }
    let journal = journal_path(&opts.state_dir);
    if let Some(restored) = nmstate_netlink::recover(&journal)
        .with_context(|| format!("restoring {}", journal.display()))?
    {
        warn!("an apply was interrupted; the node was put back as it was before: {restored}");
    }
    let runtime = runtime::current_thread_runtime()?;
    let result = runtime.block_on(serve(opts, &mark));
    runtime.shutdown_background();
    result
}

async fn serve(opts: &Options, mark: &Path) -> Result<()> {
    let mut term = runtime::catch(SignalKind::terminate(), "handling SIGTERM")?;
    let mut int = runtime::catch(SignalKind::interrupt(), "handling SIGINT")?;
    let client = runtime::api_client().await?;
    let handler = Handler::new(client.clone(), opts.clone()).await?;
    let mut report = StateReport::new(&client, &opts.node_name, handler.node_uid());
    let mut seen = Seen::default();
    let started = async {
        let synced = handler.sync(true).await?;
        seen.took(&synced);
        report.set_named(synced.named);
        // The policies are what readiness means; a state not written now is at the next try.
        if let Err(e) = report.refresh().await {
            warn!("{}", error_context::report(&e));
        }
        Ok::<(), Error>(())
    };
    tokio::select! {
        () = runtime::stop_signal(&mut term, &mut int) => return Ok(()),
        done = started => { done?; }
    }
    std::fs::write(mark, b"").with_context(|| format!("writing {}", mark.display()))?;
    info!(
        "node {}: policies applied; following them, probes {:?} for {:?}",
        opts.node_name, opts.probes, opts.probe_timeout
    );
    let otherwise = format!("the state is read every {RESYNC:?} only");
    let mut links = LinkWatch::open_every()
        .inspect_err(|e| warn!("{}; {otherwise}", error_context::report(e)))
        .ok();
    let policies = resources::policies(&client);
    let mut ticker = tokio::time::interval(RESYNC);
    // After a long apply, one resync, not one per tick missed.
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    ticker.tick().await;
    let mut version = String::from("0");
    loop {
        let params = WatchParams::default().timeout(290);
        let mut events = match policies.watch(&params, &version).await {
            Ok(stream) => stream.boxed(),
            Err(e) => {
                warn!("watching the policies: {}", error_context::report(&e));
                version = "0".to_string();
                futures::stream::empty().boxed()
            }
        };
        loop {
            tokio::select! {
                () = runtime::stop_signal(&mut term, &mut int) => {
                    info!("stopping");
                    return Ok(());
                }
                _ = ticker.tick() => {
                    sync_and_report(&handler, &mut report, &mut seen).await;
                }
                () = next_change(&mut links, SETTLE, &otherwise) => {
                    if let Err(e) = report.refresh().await {
                        warn!("{}", error_context::report(&e));
                    }
                }
                event = events.next() => match event {
                    Some(Ok(WatchEvent::Added(o) | WatchEvent::Modified(o))) => {
                        version = o.metadata.resource_version.clone().unwrap_or_default();
                        if seen.needs_sync(&o) {
                            sync_and_report(&handler, &mut report, &mut seen).await;
                        }
                    }
                    Some(Ok(WatchEvent::Deleted(o))) => {
                        version = o.metadata.resource_version.unwrap_or_default();
                        sync_and_report(&handler, &mut report, &mut seen).await;
                    }
                    Some(Ok(WatchEvent::Bookmark(b))) => version = b.metadata.resource_version,
                    Some(Ok(WatchEvent::Error(e))) => {
                        // Gone: start again from the current list.
                        if e.code == 410 {
                            version = "0".to_string();
                        }
                        break;
                    }
                    Some(Err(e)) => {
                        warn!("watching the policies: {}", error_context::report(&e));
                        break;
                    }
                    None => break,
                },
            }
        }
        // A watch that ended or failed: wait a little so a failing API server is not hammered.
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// What the last sync saw, to tell which watch events need another: a policy's new
/// generation does; another node's write of its status does only while this node waits for a
/// slot (a slot released is such a write).
#[derive(Debug, Default)]
struct Seen {
    generations: BTreeMap<String, i64>,
    pending: bool,
}

impl Seen {
    fn took(&mut self, synced: &Synced) {
        self.generations = synced.generations.clone();
        self.pending = synced.pending;
    }

    fn needs_sync(&self, policy: &DynamicObject) -> bool {
        let name = policy.metadata.name.as_deref().unwrap_or_default();
        self.pending || self.generations.get(name).copied() != policy.metadata.generation
    }
}

async fn sync_and_report(handler: &Handler, report: &mut StateReport, seen: &mut Seen) {
    match handler.sync(false).await {
        Ok(synced) => {
            seen.took(&synced);
            report.set_named(synced.named);
        }
        Err(e) => warn!("{}", error_context::report(&e)),
    }
    if let Err(e) = report.refresh().await {
        warn!("{}", error_context::report(&e));
    }
}
