//! One collection round: what the runtime and the API say is alive, and our plugins' GC for
//! every network they serve, with everything else of that network to go.
//!
//! The round holds the node's GC lock (`cni_common::gc_lock`) exclusively from before it lists
//! anything until its last GC has run, so no ADD runs meanwhile; sandboxes are listed before
//! pods, so a pod whose sandbox is still being made is seen as such and the round waits for a
//! later tick (see `attachments`).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use kube::Client;
use tracing::{info, warn};

use crate::cri;
use crate::error::{Context, Result};
use crate::gc::attachments::{self, LiveSandbox, Plan, PodInfo};
use crate::gc::collect::{self, Node, GC_TIMEOUT};
use crate::gc::networks::{self, Network, Source};
use crate::record::Record;

/// How long a round waits for the ADDs running to end before it gives up until the next tick.
const LOCK_WAIT: Duration = Duration::from_secs(30);
/// How long the runtime may take to list its sandboxes.
const CRI_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a pod without a ready sandbox holds the collection back. The runtime makes a sandbox in
/// seconds; one that still has none after this keeps failing (the kubelet retries with
/// backoff, and the runtime undoes each failed attempt).
pub const PATIENCE: Duration = Duration::from_secs(10 * 60);

/// Since when each pod has been seen without a ready sandbox, across rounds.
#[derive(Debug)]
pub struct Patience {
    limit: Duration,
    since: HashMap<String, Instant>,
}

impl Patience {
    pub fn new(limit: Duration) -> Patience {
        Patience {
            limit,
            since: HashMap::new(),
        }
    }

    /// `waiting` are the pods without a ready sandbox now: their clocks start or go on, every other
    /// pod's stops. Then the pods that have waited for the whole limit are marked stuck.
    fn observe(&mut self, pods: &mut [PodInfo], waiting: &BTreeSet<String>, now: Instant) {
        self.since.retain(|uid, _| waiting.contains(uid));
        for uid in waiting {
            self.since.entry(uid.clone()).or_insert(now);
        }
        for pod in pods {
            pod.stuck = self
                .since
                .get(&pod.uid)
                .is_some_and(|since| now.duration_since(*since) >= self.limit);
        }
    }
}

/// Where a round looks, as this process sees the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The node's `/` (`/host` in the DaemonSet, `/` on the node itself).
    pub host_root: PathBuf,
    /// The CNI binary directory, as this process sees it (`--to`).
    pub bin_dir: PathBuf,
    /// The CNI config directory, as this process sees it.
    pub conf_dir: PathBuf,
    /// The runtime's CRI socket, as this process sees it.
    pub cri_socket: PathBuf,
    /// How many of the node's conflists the runtime loads (the first ones, in file-name order).
    pub node_networks: usize,
    pub node_name: String,
    /// Only these of our plugins (the names `run --plugins` installs, so each DaemonSet
    /// collects for its own); None: every plugin the record names.
    pub plugins: Option<BTreeSet<String>>,
}

/// What a round did.
#[derive(Debug, Default)]
pub struct Report {
    /// None when the round waited for a later tick, with the reason.
    pub deferred: Option<String>,
    pub networks: usize,
    pub collected: Vec<String>,
    pub failures: Vec<String>,
}

impl Report {
    /// One line for the round, after the lines of what was collected.
    pub fn log(&self) {
        match &self.deferred {
            Some(why) => info!("deferred to the next round: {why}"),
            None => info!(
                "collected {} thing(s) of {} network(s) our plugins serve; {} GC(s) failed",
                self.collected.len(),
                self.networks,
                self.failures.len()
            ),
        }
    }
}

/// `node-agent gc`: one round, then the report.
pub fn collect_once(opts: &Options) -> Result<Report> {
    agent_runtime::runtime::current_thread_runtime()?.block_on(async {
        let client = agent_runtime::runtime::api_client().await?;
        let report = collect_garbage(&client, opts, &mut Patience::new(PATIENCE)).await?;
        report.log();
        Ok(report)
    })
}

/// One round (see the module's description).
pub async fn collect_garbage(
    client: &Client,
    opts: &Options,
    patience: &mut Patience,
) -> Result<Report> {
    let lock_path = opts.host_root.join(
        Path::new(cni_common::gc_lock::GC_LOCK_FILE)
            .strip_prefix("/")
            .unwrap_or(Path::new(cni_common::gc_lock::GC_LOCK_FILE)),
    );
    let _lock = cni_common::gc_lock::exclusive(&lock_path, LOCK_WAIT)
        .with_context(|| format!("locking {}", lock_path.display()))?;
    let sandboxes = cri::list_pod_sandboxes(&opts.cri_socket, CRI_TIMEOUT).await?;
    let mut pods = node_pods(client, &opts.node_name).await?;
    let live: Vec<LiveSandbox> = sandboxes
        .into_iter()
        .map(|s| LiveSandbox {
            id: s.id,
            uid: s.uid,
            name: s.name,
            namespace: s.namespace,
            ready: s.ready,
        })
        .collect();
    let waiting = attachments::without_sandbox(&live, &pods);
    patience.observe(&mut pods, &waiting, Instant::now());
    for pod in pods.iter().filter(|p| p.stuck) {
        warn!(
            "pod {}/{} has had no ready sandbox for over {:?}: not waiting for it",
            pod.namespace, pod.name, patience.limit
        );
    }
    let ours = our_plugins(&opts.bin_dir, opts.plugins.as_ref())?;
    let networks = served_networks(client, opts, &ours).await?;
    let mut report = Report {
        networks: networks.len(),
        ..Report::default()
    };
    let keep = match attachments::plan(&live, &pods, &networks) {
        Plan::Defer { why, .. } => {
            report.deferred = Some(why);
            return Ok(report);
        }
        Plan::Collect(keep) => keep,
    };
    let node = Node {
        bin_dir: as_node_sees(&opts.host_root, &opts.bin_dir),
        host_root: opts.host_root.clone(),
    };
    let empty = BTreeSet::new();
    for network in &networks {
        let valid = keep.get(&network.name).unwrap_or(&empty);
        for (plugin, conf) in &network.plugins {
            let request = collect::gc_request(conf, valid);
            let (node, plugin) = (node.clone(), plugin.clone());
            let outcome = tokio::task::spawn_blocking(move || {
                collect::run_gc(&node, &plugin, &request, GC_TIMEOUT)
            })
            .await
            .context("running GC")?;
            for what in outcome.collected {
                info!(network = %network.name, "collected {what}");
                report.collected.push(format!("{}: {what}", network.name));
            }
            if let Some(e) = outcome.error {
                warn!(network = %network.name, "{e}");
                report.failures.push(format!("{}: {e}", network.name));
            }
        }
    }
    Ok(report)
}

/// The plugins this agent installed (of `only`, if given): the only ones whose GC it runs.
fn our_plugins(bin_dir: &Path, only: Option<&BTreeSet<String>>) -> Result<BTreeSet<String>> {
    Ok(Record::load(bin_dir)?
        .plugins
        .into_keys()
        .filter(|name| only.is_none_or(|only| only.contains(name)))
        .collect())
}

/// `path` (as this process sees it) as the node sees it, below `host_root`.
fn as_node_sees(host_root: &Path, path: &Path) -> PathBuf {
    match path.strip_prefix(host_root) {
        Ok(rest) => Path::new("/").join(rest),
        Err(_) => path.to_path_buf(),
    }
}

/// This node's pods (`list` on pods, by field selector).
async fn node_pods(client: &Client, node: &str) -> Result<Vec<PodInfo>> {
    let api: Api<Pod> = Api::all(client.clone());
    let params = ListParams::default().fields(&format!("spec.nodeName={node}"));
    let pods = api
        .list(&params)
        .await
        .with_context(|| format!("listing the pods of node {node}"))?;
    Ok(pods.items.iter().map(pod_info).collect())
}

fn pod_info(pod: &Pod) -> PodInfo {
    let meta = &pod.metadata;
    let annotation = |key: &str| meta.annotations.as_ref().and_then(|a| a.get(key)).cloned();
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    PodInfo {
        uid: meta.uid.clone().unwrap_or_default(),
        name: meta.name.clone().unwrap_or_default(),
        namespace: meta.namespace.clone().unwrap_or_default(),
        host_network: pod
            .spec
            .as_ref()
            .and_then(|s| s.host_network)
            .unwrap_or(false),
        terminal: matches!(phase, Some("Succeeded" | "Failed")),
        deleting: meta.deletion_timestamp.is_some(),
        networks: annotation("k8s.v1.cni.cncf.io/networks"),
        network_status: annotation("k8s.v1.cni.cncf.io/network-status"),
        stuck: false,
    }
}

/// The node's conflists and the NetworkAttachmentDefinitions that name our plugins. What cannot
/// be read is logged and left out: never collected.
async fn served_networks(
    client: &Client,
    opts: &Options,
    ours: &BTreeSet<String>,
) -> Result<Vec<Network>> {
    let (mut served, unreadable) = networks::node_networks(&opts.conf_dir, ours);
    // Only what the runtime loads: a later conflist's attachments are not the runtime's sandboxes.
    served.retain(|n| match n.source {
        Source::NodeConflist { index, .. } => index < opts.node_networks,
        Source::Nad { .. } => true,
    });
    for u in unreadable {
        warn!("not collected: {}: {}", u.source, u.why);
    }
    for (namespace, name, config) in network_attachment_definitions(client).await? {
        match networks::nad_network(&namespace, &name, &config, ours) {
            Ok(Some(network)) => served.push(network),
            Ok(None) => {}
            Err(u) => warn!("not collected: {}: {}", u.source, u.why),
        }
    }
    Ok(served)
}

/// Every NetworkAttachmentDefinition: namespace, name and `spec.config`. None where the
/// resource is not served (no Multus).
async fn network_attachment_definitions(client: &Client) -> Result<Vec<(String, String, String)>> {
    let gvk = GroupVersionKind::gvk("k8s.cni.cncf.io", "v1", "NetworkAttachmentDefinition");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "network-attachment-definitions");
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let list = match api.list(&ListParams::default()).await {
        Err(kube::Error::Api(status)) if status.code == 404 => return Ok(Vec::new()),
        list => list.context("listing the NetworkAttachmentDefinitions")?,
    };
    Ok(list
        .items
        .into_iter()
        .map(|nad| {
            let config = nad.data["spec"]["config"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            (
                nad.metadata.namespace.unwrap_or_default(),
                nad.metadata.name.unwrap_or_default(),
                config,
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(uid: &str) -> PodInfo {
        PodInfo {
            uid: uid.to_string(),
            ..PodInfo::default()
        }
    }

    #[test]
    fn a_pod_is_stuck_once_it_has_had_no_sandbox_for_the_whole_limit() {
        let mut patience = Patience::new(Duration::from_secs(600));
        let start = Instant::now();
        let mut pods = vec![pod("a"), pod("b")];
        let a = BTreeSet::from(["a".to_string()]);
        patience.observe(&mut pods, &a, start);
        patience.observe(&mut pods, &a, start + Duration::from_secs(599));
        assert!(!pods[0].stuck);
        patience.observe(&mut pods, &a, start + Duration::from_secs(600));
        assert!(pods[0].stuck && !pods[1].stuck);
    }

    /// A pod that got its sandbox starts from scratch when it is without one again (its sandbox
    /// made anew after a crash): that is a start, worth waiting for.
    #[test]
    fn a_sandbox_resets_the_clock() {
        let mut patience = Patience::new(Duration::from_secs(600));
        let start = Instant::now();
        let mut pods = vec![pod("a")];
        let a = BTreeSet::from(["a".to_string()]);
        patience.observe(&mut pods, &a, start);
        patience.observe(
            &mut pods,
            &BTreeSet::new(),
            start + Duration::from_secs(300),
        );
        patience.observe(&mut pods, &a, start + Duration::from_secs(700));
        assert!(!pods[0].stuck);
    }

    fn pod_from(value: serde_json::Value) -> Pod {
        serde_json::from_value(value).expect("a pod")
    }

    #[test]
    fn a_pod_with_a_deletion_timestamp_is_deleting_whatever_its_phase() {
        let leaving = pod_from(serde_json::json!({
            "metadata": {"name": "web", "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"phase": "Running"}
        }));
        assert!(pod_info(&leaving).deleting);
        let running = pod_from(serde_json::json!({
            "metadata": {"name": "web"},
            "status": {"phase": "Running"}
        }));
        assert!(!pod_info(&running).deleting);
    }

    #[test]
    fn a_path_below_the_host_root_is_what_the_node_sees() {
        assert_eq!(
            as_node_sees(Path::new("/host"), Path::new("/host/opt/cni/bin")),
            Path::new("/opt/cni/bin")
        );
        assert_eq!(
            as_node_sees(Path::new("/"), Path::new("/opt/cni/bin")),
            Path::new("/opt/cni/bin")
        );
    }
}
