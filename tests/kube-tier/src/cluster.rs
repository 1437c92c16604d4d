//! A cluster of N nodes (two by default): etcd, kube-apiserver, kube-controller-manager,
//! kube-scheduler and the image registry in the control plane's namespace, and on each node its
//! containerd, kubelet and Open vSwitch in the node's own namespaces ([`crate::node`]), with
//! private directories under one base directory. Started by [`Cluster::start`], torn down on
//! drop: every pid it started, every node's processes and cgroups, the namespaces, the Node
//! objects, the sysctls the kubelets rewrite.
//!
//! `control_plane` starts etcd, the API server, the controller-manager and the scheduler;
//! `cni` provisions each node's pod network; `containerd` and `kubelet` start a node's runtime
//! and agent (`containerd` also acts on the runtime behind the kubelet's back); `teardown` stops
//! and removes it all.

mod cni;
mod containerd;
mod control_plane;
mod kubelet;
mod teardown;

pub use cni::POD_NETWORK_CONF;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::daemon::{run, run_with_stdin, wait_for, Daemon};
use crate::host::{self, Sysctls};
use crate::image::{self, Builder};
use crate::network::{Network, APISERVER_PORT, CONTROL_PLANE_IP};
use crate::node::Node;
use crate::ovs::Ovs;
use crate::pki;

const ETCD_CLIENT: &str = "http://127.0.0.1:2379";
/// containerd's socket on every node, in the node's view (containerd's default).
pub const CONTAINERD_SOCK: &str = "/run/containerd/containerd.sock";
/// How many nodes a cluster has unless `KUBE_TIER_NODES` says otherwise.
pub const DEFAULT_NODES: usize = 2;

pub struct Cluster {
    base: PathBuf,
    bin: PathBuf,
    /// For the tests and the control plane, on loopback.
    kubeconfig: PathBuf,
    /// For the kubelets, on the cluster bridge.
    node_kubeconfig: PathBuf,
    daemons: Vec<Daemon>,
    builder: Builder,
    network: Network,
    nodes: Vec<Node>,
    ovs: Vec<Ovs>,
    sysctls: Sysctls,
    started: Instant,
    torn_down: bool,
    /// The watched paths outside `base` as they were before the start.
    host_before: host::Snapshot,
}

/// `KUBE_TIER_NODES`, or [`DEFAULT_NODES`].
pub fn node_count_from_env() -> Result<usize> {
    match std::env::var("KUBE_TIER_NODES") {
        Ok(v) => v
            .parse()
            .ok()
            .filter(|n| (1..=9).contains(n))
            .with_context(|| format!("KUBE_TIER_NODES={v}: a number of nodes from 1 to 9")),
        Err(_) => Ok(DEFAULT_NODES),
    }
}

impl Cluster {
    /// Starts a cluster of `nodes` nodes and waits until every Node is Ready. `bin` holds the
    /// Kubernetes binaries (scripts/kube-build), `repo` is the workspace (for the Containerfile
    /// and its binaries). Call it before any other thread exists (see [`Network::create`]).
    pub fn start(bin: &Path, repo: &Path, nodes: usize) -> Result<Cluster> {
        let started = Instant::now();
        for b in [
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "kubelet",
            "kubectl",
        ] {
            if !bin.join(b).is_file() {
                bail!(
                    "{} is missing: run scripts/kube-build",
                    bin.join(b).display()
                );
            }
        }
        let prefix = format!("kube-tier-{}", std::process::id());
        let base = std::env::temp_dir().join(&prefix);
        let host_before = host::Snapshot::take();
        let sysctls = Sysctls::save()?;
        // Before the network: nothing to undo yet if it fails.
        let builder = Builder::new(&base.join("buildah"))?;
        let multus_bin = image::multus_bin_dir(repo)?;
        let network = Network::create(&prefix)?;
        let mut cluster = Cluster {
            kubeconfig: base.join("admin.kubeconfig"),
            node_kubeconfig: base.join("node.kubeconfig"),
            builder,
            bin: bin.to_path_buf(),
            base,
            daemons: Vec::new(),
            network,
            nodes: Vec::new(),
            ovs: Vec::new(),
            sysctls,
            started,
            torn_down: false,
            host_before,
        };
        // From here on, a failure drops the cluster: teardown undoes what was started.
        std::fs::create_dir_all(cluster.base.join("logs"))?;
        for index in 1..=nodes {
            let dir = cluster.base.join(format!("node{index:02}"));
            std::fs::create_dir_all(&dir)?;
            let node = Node::create(&cluster.network, &prefix, index, nodes, &dir)?;
            cluster.nodes.push(node);
        }
        cluster.boot(repo, &multus_bin)?;
        Ok(cluster)
    }

    fn boot(&mut self, repo: &Path, multus_bin: &Path) -> Result<()> {
        let logs = self.base.join("logs");
        let pki = pki::create(&self.base.join("pki"))?;
        std::fs::write(
            &self.kubeconfig,
            pki::kubeconfig(&pki, &format!("https://127.0.0.1:{APISERVER_PORT}")),
        )?;
        std::fs::write(
            &self.node_kubeconfig,
            pki::kubeconfig(
                &pki,
                &format!("https://{CONTROL_PLANE_IP}:{APISERVER_PORT}"),
            ),
        )?;

        self.start_control_plane(&pki, &logs)?;

        let registry = image::start_registry(&self.base.join("registry"), &logs)?;
        self.daemons.push(registry);
        self.builder.busybox(&self.base)?;
        self.builder.multus(&self.base, multus_bin)?;
        self.build_plugins_image(repo, &plugins_image_default(repo)?)?;

        for i in 0..self.nodes.len() {
            let ovs = Ovs::start(&self.nodes[i], &self.nodes[i].dir().join("ovs"), &logs)?;
            self.ovs.push(ovs);
            self.provision_cni(i, repo)?;
            self.start_containerd(i, &logs)?;
            self.start_kubelet(i, &logs)?;
        }
        for i in 0..self.nodes.len() {
            let name = self.nodes[i].name().to_string();
            self.wait_ready(&name, "")?;
        }
        eprintln!(
            "kube-tier: {} nodes Ready {:.1} s after start ({})",
            self.nodes.len(),
            self.started.elapsed().as_secs_f64(),
            self.base.display()
        );
        Ok(())
    }

    /// Kills node `node`'s `daemon` (`containerd` or `kubelet`) with SIGKILL, as a crash does:
    /// containerd's shims, and the plugins it runs, go on.
    pub fn crash(&mut self, node: usize, daemon: &str) -> Result<()> {
        let name = self.daemon_name(node, daemon);
        let at = self
            .daemons
            .iter()
            .position(|d| d.name() == name)
            .with_context(|| format!("{name} is not running"))?;
        self.daemons.remove(at).crash();
        Ok(())
    }

    /// Starts node `node`'s `daemon` (`containerd` or `kubelet`) again after [`Cluster::crash`],
    /// as its service manager would; containerd once its socket is back.
    pub fn start_again(&mut self, node: usize, daemon: &str) -> Result<()> {
        let logs = self.base.join("logs");
        match daemon {
            "containerd" => {
                let _ = std::fs::remove_file(self.nodes[node].host_path(CONTAINERD_SOCK));
                self.start_containerd(node, &logs)
            }
            "kubelet" => self.start_kubelet(node, &logs),
            _ => bail!("{daemon} cannot be started again"),
        }
    }

    /// Reboots node `node` as a power cycle would: every process of it killed at once (its
    /// kubelet, containerd, Open vSwitch, the shims and the pods), its network namespace gone
    /// with every link the pods had, its `/run` emptied; what is on its disk (`/var/lib/cni`,
    /// containerd's and Open vSwitch's databases, `/etc/cni/net.d`, `/opt/cni/bin`) kept. Then
    /// the node starts again: namespaces, Open vSwitch, containerd and the kubelet, until Ready.
    pub fn reboot(&mut self, node: usize) -> Result<()> {
        let name = self.nodes[node].name().to_string();
        let before = self.ready_heartbeat(&name)?;
        for daemon in ["kubelet", "containerd"] {
            let _ = self.crash(node, daemon);
        }
        self.ovs[node].crash();
        let errors = self.nodes[node].teardown();
        if !errors.is_empty() {
            bail!(
                "power off {}: {}",
                self.nodes[node].name(),
                errors.join("; ")
            );
        }
        self.nodes[node].wipe_run()?;
        let prefix = format!("kube-tier-{}", std::process::id());
        let dir = self.nodes[node].dir().to_path_buf();
        let count = self.nodes.len();
        self.nodes[node] = Node::create(&self.network, &prefix, node + 1, count, &dir)?;
        let logs = self.base.join("logs");
        self.ovs[node] = Ovs::start(&self.nodes[node], &dir.join("ovs"), &logs)?;
        self.start_containerd(node, &logs)?;
        self.start_kubelet(node, &logs)?;
        self.wait_ready(&name, &before)
    }

    /// Node `name`'s Ready heartbeat.
    fn ready_heartbeat(&self, name: &str) -> Result<String> {
        Ok(ready_heartbeat(&self.get_json(&["get", "node", name])?))
    }

    /// Waits until Node `name` is Ready with a heartbeat later than `after`: after a restart,
    /// one of the new kubelet's (the Node stays Ready for the controller-manager's grace period
    /// whatever happens to it).
    fn wait_ready(&mut self, name: &str, after: &str) -> Result<()> {
        wait_for(
            &format!("node {name} to be Ready"),
            Duration::from_secs(120),
            || {
                self.check_daemons()?;
                let node = self.get_json(&["get", "node", name])?;
                let fresh = ready_heartbeat(&node).as_str() > after;
                let ready = condition_status(&node, "Ready").as_deref() == Some("True");
                Ok((fresh && ready).then_some(()))
            },
        )
    }

    /// The name of node `node`'s `daemon`, as [`Cluster::log_tail`] takes it.
    pub fn daemon_name(&self, node: usize, daemon: &str) -> String {
        format!("{}-{daemon}", self.nodes[node].name())
    }

    fn spawn(&mut self, name: &str, cmd: Command, logs: &Path) -> Result<()> {
        self.daemons.push(Daemon::spawn(name, cmd, logs)?);
        Ok(())
    }

    /// Fails when any of the cluster's processes has exited.
    pub fn check_daemons(&mut self) -> Result<()> {
        for d in &mut self.daemons {
            d.check_running()?;
        }
        Ok(())
    }

    pub fn base(&self) -> &Path {
        &self.base
    }

    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The kubeconfig a node's own processes use (the API server on the cluster bridge).
    pub fn node_kubeconfig(&self) -> &Path {
        &self.node_kubeconfig
    }

    pub fn kubectl_path(&self) -> PathBuf {
        self.bin.join("kubectl")
    }

    pub fn network(&self) -> &Network {
        &self.network
    }

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Node `index` (0-based: `node(0)` is node01).
    pub fn node(&self, index: usize) -> &Node {
        &self.nodes[index]
    }

    /// Open vSwitch on node `index` (userspace datapath).
    pub fn ovs(&self, index: usize) -> &Ovs {
        &self.ovs[index]
    }

    pub fn builder(&self) -> &Builder {
        &self.builder
    }

    /// Builds the project's image from its Containerfile and pushes it as `tag`: an index of
    /// its amd64 and arm64 images when scripts/build-plugins staged both.
    pub fn build_plugins_image(&self, repo: &Path, tag: &str) -> Result<()> {
        let containerfile = repo.join("Containerfile");
        if repo.join("target/image/arm64").is_dir() {
            self.builder.build_index_and_push(
                &containerfile,
                repo,
                tag,
                &["linux/amd64", "linux/arm64"],
            )
        } else {
            self.builder.build_and_push(&containerfile, repo, tag)
        }
    }

    fn kubectl_command(&self) -> Command {
        let mut cmd = Command::new(self.bin.join("kubectl"));
        // The discovery and HTTP caches, by default under ~/.kube/cache.
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.base.join("kubectl-cache"));
        cmd
    }

    /// `kubectl ARGS`: its stdout, or an error with its stderr.
    pub fn kubectl(&self, args: &[&str]) -> Result<String> {
        run(self.kubectl_command().args(args))
    }

    /// `kubectl ARGS` left running (a watch) with its stdout piped; the caller ends it.
    pub fn kubectl_spawn(&self, args: &[&str]) -> Result<std::process::Child> {
        self.kubectl_command()
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .with_context(|| format!("starting kubectl {}", args.join(" ")))
    }

    /// `kubectl ARGS` with `input` on stdin (`apply -f -`).
    pub fn kubectl_stdin(&self, args: &[&str], input: &str) -> Result<String> {
        run_with_stdin(self.kubectl_command().args(args), input.as_bytes())
    }

    /// `kubectl ARGS -o json`, parsed.
    pub fn get_json(&self, args: &[&str]) -> Result<Value> {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        let text = self.kubectl(&all)?;
        serde_json::from_str(&text).context("parse kubectl's JSON")
    }

    /// The log of one of the cluster's processes (`etcd`, `node01-kubelet`, ...).
    pub fn log_path(&self, name: &str) -> PathBuf {
        self.base.join("logs").join(format!("{name}.log"))
    }

    /// The last lines of [`Cluster::log_path`].
    pub fn log_tail(&self, name: &str, lines: usize) -> String {
        crate::daemon::tail(&self.log_path(name), lines)
    }
}

/// `PLUGINS_IMAGE`'s default in deploy/operator.yaml: the image the manifests name as they are.
pub fn plugins_image_default(repo: &Path) -> Result<String> {
    let text = std::fs::read_to_string(repo.join("deploy/operator.yaml"))?;
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() == "- name: PLUGINS_IMAGE" {
            if let Some(value) = lines.next().and_then(|l| l.trim().strip_prefix("value: ")) {
                return Ok(value.trim_matches('"').to_string());
            }
        }
    }
    bail!("deploy/operator.yaml sets no PLUGINS_IMAGE")
}

/// A Node's Ready heartbeat (`lastHeartbeatTime`, RFC 3339 in UTC, so its strings order as its
/// times), empty without one.
fn ready_heartbeat(node: &Value) -> String {
    condition(node, "Ready")
        .and_then(|c| c["lastHeartbeatTime"].as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The `status` of condition `type_` of an object with `status.conditions`.
pub fn condition_status(obj: &Value, type_: &str) -> Option<String> {
    condition(obj, type_).and_then(|c| c["status"].as_str().map(str::to_string))
}

pub fn condition<'a>(obj: &'a Value, type_: &str) -> Option<&'a Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

fn kubectl_clone(cmd: &Command) -> Command {
    let mut c = Command::new(cmd.get_program());
    c.args(cmd.get_args());
    c
}
