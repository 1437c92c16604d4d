//! A single-node cluster: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
//! containerd and the kubelet, plus the image registry, all in the node's namespace, with private
//! directories under one base directory. Started by [`Cluster::start`], torn down on drop: every
//! pid it started, every mount under its directory, the sandboxes' namespaces, the cgroups, the
//! Node object.
//!
//! `control_plane` starts etcd, the API server, the controller-manager and the scheduler;
//! `cni` provisions the pod network; `containerd` and `kubelet` start the node's runtime and
//! agent (`containerd` also acts on the runtime behind the kubelet's back); `teardown` stops
//! and removes it all.

mod cni;
mod containerd;
mod control_plane;
mod kubelet;
mod teardown;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::daemon::{run, run_with_stdin, wait_for, Daemon};
use crate::host;
use crate::image::{self, Builder};
use crate::node::Node;
use crate::ovs::Ovs;
use crate::pki;

pub const APISERVER_PORT: u16 = 6443;
const ETCD_CLIENT: &str = "http://127.0.0.1:2379";
/// The Node's name: the API server reaches the kubelet (logs, exec) by it.
pub const NODE_NAME: &str = "localhost";

pub struct Cluster {
    base: PathBuf,
    bin: PathBuf,
    kubeconfig: PathBuf,
    cni_bin: PathBuf,
    cni_conf: PathBuf,
    daemons: Vec<Daemon>,
    builder: Builder,
    node: Node,
    ovs: Option<Ovs>,
    started: Instant,
    torn_down: bool,
    /// The watched paths outside `base` as they were before the start.
    host_before: host::Snapshot,
}

impl Cluster {
    /// Starts the cluster and waits until the Node is Ready. `bin` holds the Kubernetes binaries
    /// (scripts/kube-build), `repo` is the workspace (for the Containerfile and its binaries).
    pub fn start(bin: &Path, repo: &Path) -> Result<Cluster> {
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
        let base = std::env::temp_dir().join(format!("kube-tier-{}", std::process::id()));
        let host_before = host::Snapshot::take();
        let node = Node::create(&format!("kube-tier-{}", std::process::id()), APISERVER_PORT)?;
        let mut cluster = Cluster {
            kubeconfig: base.join("admin.kubeconfig"),
            cni_bin: base.join("cni/bin"),
            cni_conf: base.join("cni/net.d"),
            builder: Builder::new(&base.join("buildah")),
            bin: bin.to_path_buf(),
            base,
            daemons: Vec::new(),
            node,
            ovs: None,
            started,
            torn_down: false,
            host_before,
        };
        // From here on, a failure drops the cluster: teardown undoes what was started.
        std::fs::create_dir_all(cluster.base.join("logs"))?;
        cluster.boot(repo)?;
        Ok(cluster)
    }

    fn boot(&mut self, repo: &Path) -> Result<()> {
        let logs = self.base.join("logs");
        let pki = pki::create(&self.base.join("pki"))?;
        std::fs::write(
            &self.kubeconfig,
            pki::kubeconfig(&pki, &format!("https://127.0.0.1:{APISERVER_PORT}")),
        )?;

        self.start_control_plane(&pki, &logs)?;

        let registry = image::start_registry(&self.base.join("registry"), &logs)?;
        self.daemons.push(registry);
        self.builder.busybox(&self.base)?;
        self.build_plugins_image(repo, &plugins_image_default(repo)?)?;

        self.ovs = Some(Ovs::start(&self.base.join("ovs"), &logs)?);
        self.provision_cni(repo)?;
        self.start_containerd(&logs)?;
        self.start_kubelet(&logs)?;
        wait_for("the Node to be Ready", Duration::from_secs(120), || {
            self.check_daemons()?;
            let node = self.get_json(&["get", "node", NODE_NAME])?;
            Ok(condition_status(&node, "Ready")
                .filter(|s| s == "True")
                .map(drop))
        })?;
        eprintln!(
            "kube-tier: node {NODE_NAME} Ready {:.1} s after start ({})",
            self.started.elapsed().as_secs_f64(),
            self.base.display()
        );
        Ok(())
    }

    /// Kills `name` (`containerd` or `kubelet`) with SIGKILL, as a crash does: containerd's
    /// shims, and the plugins it runs, go on.
    pub fn crash(&mut self, name: &str) -> Result<()> {
        let at = self
            .daemons
            .iter()
            .position(|d| d.name() == name)
            .with_context(|| format!("{name} is not running"))?;
        self.daemons.remove(at).crash();
        Ok(())
    }

    /// Starts `name` (`containerd` or `kubelet`) again after [`Cluster::crash`], as its service
    /// manager would; containerd once its socket is back.
    pub fn start_again(&mut self, name: &str) -> Result<()> {
        let logs = self.base.join("logs");
        match name {
            "containerd" => {
                let _ = std::fs::remove_file(self.containerd_socket());
                self.start_containerd(&logs)
            }
            "kubelet" => self.start_kubelet(&logs),
            _ => bail!("{name} cannot be started again"),
        }
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

    pub fn containerd_socket(&self) -> PathBuf {
        self.base.join("containerd/containerd.sock")
    }

    pub fn base(&self) -> &Path {
        &self.base
    }

    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The node's CNI plugin directory (containerd's `bin_dir`).
    pub fn cni_bin_dir(&self) -> &Path {
        &self.cni_bin
    }

    pub fn cni_conf_dir(&self) -> &Path {
        &self.cni_conf
    }

    pub fn node(&self) -> &Node {
        &self.node
    }

    /// Open vSwitch on the node (userspace datapath).
    pub fn ovs(&self) -> &Ovs {
        self.ovs.as_ref().expect("started with the cluster")
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

    /// The log of one of the cluster's processes (`kubelet`, `containerd`, ...), its last lines.
    pub fn log_tail(&self, name: &str, lines: usize) -> String {
        crate::daemon::tail(&self.base.join("logs").join(format!("{name}.log")), lines)
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
