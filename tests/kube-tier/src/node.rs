//! A node: a network, mount and UTS namespace of its own (hostname `node01`, `node02`, ...), in
//! which its containerd, kubelet and Open vSwitch run, so a DaemonSet's hostPath lands in that
//! node's own view as on a real node.
//!
//! - Network: `eth0` on the cluster bridge (the node's address, [`network::node_ip`]), `eth1` on
//!   the secondary switch, the pod bridge `cni0` with the node's pod subnet, routes to the other
//!   nodes' pods, and a DNAT from the `kubernetes` Service's address to the API server (what
//!   kube-proxy would do).
//! - Mounts: a holder process (`unshare --mount --uts --propagation private`) binds a directory of
//!   the node's own over each of [`NODE_DIRS`] (in an overlay of its parent when the machine lacks
//!   the path) in an overlay of the machine's `/run` that is the node's own, mounts a sysfs of
//!   the node's network namespace and a fresh `/run/netns`, and
//!   makes `/` shared inside the node (as systemd does on a real node; `HostToContainer` mounts
//!   need it). Nothing propagates back to the machine, and nothing is created on it. Every
//!   process of the node enters the holder's namespaces ([`Node::command`]).
//! - cgroups: the kubelet's `cgroupRoot`, `/<node's namespace name>` in every hierarchy.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{bail, Context, Result};

use crate::daemon::{run, run_with_stdin, ENV};
use crate::network::{
    self, ip, node_ip, pod_gateway, pod_subnet, CONTROL_PLANE_IP, KUBERNETES_SERVICE_IP,
    SERVICE_SUBNET,
};

/// The pod bridge on every node.
pub const POD_BRIDGE: &str = "cni0";

/// The node paths each node has of its own (a directory under the node's, bound over them):
/// where the kubelet, containerd, libcni, the CNI plugins and Open vSwitch keep their files, and
/// what the DaemonSets mount from the node.
pub const NODE_DIRS: &[&str] = &[
    "/opt/cni/bin",
    "/etc/cni/net.d",
    "/var/lib/cni",
    "/run/cni",
    "/var/lib/kubelet",
    "/var/log/pods",
    "/var/log/containers",
    "/var/lib/containerd",
    "/run/containerd",
    "/run/openvswitch",
    // kubernetes-nmstate's handler: its journal, lock and ready mark.
    "/run/kubernetes-nmstate",
];

/// What the holder runs: `$1` is the hostname, `$2` the node's directory, then pairs of (node's
/// own directory, node path).
const HOLDER: &str = r#"set -e
hostname "$1"
dir=$2
shift 2
# sysfs shows the network devices of the namespace that mounted it: a sysfs of the node's own
# (as `ip netns exec` mounts), with the machine's cgroup hierarchies moved over to it.
mkdir -p "$dir/cgroup-move"
mount --move /sys/fs/cgroup "$dir/cgroup-move"
mount -t sysfs -o nosuid,nodev,noexec kube-tier-sysfs /sys
mount --move "$dir/cgroup-move" /sys/fs/cgroup
# The node's /run is its own, as a node's tmpfs is: an overlay of the machine's, so that what
# the node's daemons make or remove there stays in the node. Multus removes /run/multus and
# makes it again at every start, which a directory bound there (a mount point) would refuse.
mkdir -p "$dir/overlay_run/upper" "$dir/overlay_run/work"
mount -t overlay kube-tier-overlay -o "lowerdir=/run,upperdir=$dir/overlay_run/upper,workdir=$dir/overlay_run/work" /run
overlaid=" /run"
# Paths the machine lacks (/opt/cni/bin) are made in an overlay of their nearest existing
# directory, so the machine's own stays untouched; all of them before any bind, which a later
# overlay of a parent would hide.
own=
for path in "$@"; do
  if [ -z "$own" ]; then own=$path; continue; fi
  own=
  [ -d "$path" ] && continue
  top=$path
  while [ ! -d "$top" ]; do top=$(dirname "$top"); done
  case " $overlaid " in
    *" $top "*) ;;
    *)
      layer="$dir/overlay$(echo "$top" | tr / _)"
      mkdir -p "$layer/upper" "$layer/work"
      mount -t overlay kube-tier-overlay -o "lowerdir=$top,upperdir=$layer/upper,workdir=$layer/work" "$top"
      overlaid="$overlaid $top"
      ;;
  esac
  mkdir -p "$path"
done
while [ $# -gt 0 ]; do mount --bind "$1" "$2"; shift 2; done
# The copy of the machine's /run/netns would pin the machine's namespaces, and the node's
# sandboxes need a shared one of their own.
umount -l /run/netns 2>/dev/null || true
mount -t tmpfs -o mode=0755 kube-tier-netns /run/netns
mount --make-shared /run/netns
mount --make-rshared /
echo ready
exec sleep infinity
"#;

pub struct Node {
    name: String,
    index: usize,
    netns: String,
    dir: PathBuf,
    holder: Child,
    cgroup_root: String,
}

impl Node {
    /// Creates node `index` (1-based) of `count` and attaches it to `network`. `dir` becomes the
    /// node's own directory; `prefix` names its namespace and cgroup root.
    pub fn create(
        network: &network::Network,
        prefix: &str,
        index: usize,
        count: usize,
        dir: &Path,
    ) -> Result<Node> {
        let name = format!("node{index:02}");
        let netns = format!("{prefix}-{name}");
        ip(&["netns", "add", &netns])?;
        let cgroup_root = netns.clone();
        let holder = (|| {
            for h in cgroup_hierarchies() {
                std::fs::create_dir_all(h.join(&cgroup_root))
                    .with_context(|| format!("create the node's cgroup root in {}", h.display()))?;
            }
            spawn_holder(&name, &netns, dir)
        })();
        let holder = match holder {
            Ok(holder) => holder,
            Err(e) => {
                // Nothing of the node's runs yet: its cgroup roots are empty.
                for h in cgroup_hierarchies() {
                    let _ = std::fs::remove_dir(h.join(&cgroup_root));
                }
                let _ = ip(&["netns", "del", &netns]);
                return Err(e);
            }
        };
        let mut node = Node {
            name,
            index,
            netns,
            dir: dir.to_path_buf(),
            holder,
            cgroup_root,
        };
        if let Err(e) = network
            .attach(index, &node.netns)
            .and_then(|()| node.configure(count))
        {
            node.teardown();
            return Err(e);
        }
        Ok(node)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The node's network namespace (`ip -n <it>` from the machine).
    pub fn netns(&self) -> &str {
        &self.netns
    }

    pub fn ip(&self) -> String {
        node_ip(self.index)
    }

    pub fn pod_subnet(&self) -> String {
        pod_subnet(self.index)
    }

    pub fn pod_gateway(&self) -> String {
        pod_gateway(self.index)
    }

    /// The kubelet's `cgroupRoot`.
    pub fn cgroup_root(&self) -> String {
        format!("/{}", self.cgroup_root)
    }

    /// The node's own directory (its daemons' configuration, and what is bound over
    /// [`NODE_DIRS`]).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `program` in the node's network, mount and UTS namespaces.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        self.enter().command(program)
    }

    /// The process holding the node's namespaces (`nsenter -t <it> -n -m -u`).
    pub fn holder_pid(&self) -> u32 {
        self.holder.id()
    }

    /// How to run programs in the node, for what outlives a borrow of it.
    pub fn enter(&self) -> Enter {
        Enter(self.holder.id())
    }

    /// `sh -c SCRIPT` on the node; its stdout.
    pub fn sh(&self, script: &str) -> Result<String> {
        run(self.command("sh").args(["-c", script]))
    }

    /// Where the machine sees the node's `path` (one of [`NODE_DIRS`] or below; any other path
    /// is the machine's own).
    pub fn host_path(&self, path: impl AsRef<Path>) -> PathBuf {
        let path = path.as_ref();
        let path = path
            .strip_prefix("/var/run")
            .map_or_else(|_| path.to_path_buf(), |rest| Path::new("/run").join(rest));
        if NODE_DIRS.iter().any(|d| path.starts_with(d)) {
            self.dir
                .join("root")
                .join(path.strip_prefix("/").unwrap_or(&path))
        } else {
            path
        }
    }

    /// The ports of Linux bridge `bridge` on the node: (name, alias).
    pub fn bridge_ports(&self, bridge: &str) -> Result<Vec<(String, String)>> {
        let out = self.sh(&format!("ip -j -d link show master {bridge}"))?;
        let links: Vec<serde_json::Value> =
            serde_json::from_str(if out.trim().is_empty() { "[]" } else { &out })?;
        Ok(links
            .iter()
            .map(|l| {
                let field = |key: &str| l[key].as_str().unwrap_or_default().to_string();
                (field("ifname"), field("ifalias"))
            })
            .collect())
    }

    /// The addresses host-local has leased on the node for `network` (in its default data
    /// directory); none when it has no directory for it.
    pub fn leases(&self, network: &str) -> std::collections::BTreeSet<String> {
        let dir = self.host_path(Path::new("/var/lib/cni/networks").join(network));
        std::fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.parse::<std::net::IpAddr>().is_ok())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// [`Node::host_path`] of what the node's `path` names, its last component's symlinks
    /// followed as the node would follow them (an absolute target is a path of the node's).
    pub fn resolve(&self, path: impl AsRef<Path>) -> PathBuf {
        let mut path = path.as_ref().to_path_buf();
        // As the kernel, give up after 40 links.
        for _ in 0..40 {
            match std::fs::read_link(self.host_path(&path)) {
                Ok(target) if target.is_absolute() => path = target,
                Ok(target) => path = path.parent().unwrap_or(Path::new("/")).join(target),
                Err(_) => break,
            }
        }
        self.host_path(&path)
    }

    fn configure(&self, count: usize) -> Result<()> {
        let n = self.netns.as_str();
        let ipn = |args: &[&str]| {
            let mut all = vec!["-n", n];
            all.extend_from_slice(args);
            ip(&all)
        };
        ipn(&["link", "set", "lo", "up"])?;
        // With its broadcast address, as a node's network manager gives it.
        ipn(&[
            "addr",
            "add",
            &format!("{}/{}", self.ip(), network::CLUSTER_PREFIX),
            "brd",
            "+",
            "dev",
            "eth0",
        ])?;
        ipn(&["link", "set", "eth0", "up"])?;
        ipn(&["link", "set", "eth1", "up"])?;
        ipn(&["link", "add", POD_BRIDGE, "type", "bridge"])?;
        ipn(&[
            "addr",
            "add",
            &format!("{}/24", self.pod_gateway()),
            "dev",
            POD_BRIDGE,
        ])?;
        ipn(&["link", "set", POD_BRIDGE, "up"])?;
        ipn(&["route", "add", SERVICE_SUBNET, "via", CONTROL_PLANE_IP])?;
        for other in (1..=count).filter(|&i| i != self.index) {
            ipn(&["route", "add", &pod_subnet(other), "via", &node_ip(other)])?;
        }
        run(Command::new("nsenter")
            .arg(format!("--net=/run/netns/{n}"))
            .args(["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"]))?;
        // Pods (prerouting) and the node's own processes (output) reach the API server through
        // the Service address.
        let dnat = format!(
            "ip daddr {KUBERNETES_SERVICE_IP} tcp dport 443 dnat to {CONTROL_PLANE_IP}:{}",
            crate::network::APISERVER_PORT
        );
        let rules = format!(
            "table ip kube_tier {{\n\
             chain prerouting {{ type nat hook prerouting priority -100; {dnat}; }}\n\
             chain output {{ type nat hook output priority -100; {dnat}; }}\n}}\n"
        );
        run_with_stdin(
            Command::new("nsenter")
                .arg(format!("--net=/run/netns/{n}"))
                .args(["nft", "-f", "-"]),
            rules.as_bytes(),
        )?;
        Ok(())
    }

    /// Empties the node's own `/run` (its directories there and what its overlay of the
    /// machine's holds), as a reboot does to its tmpfs; what is under `/var` and `/etc` stays,
    /// as on a disk. Only while the node is down.
    pub fn wipe_run(&self) -> Result<()> {
        for d in NODE_DIRS.iter().filter(|d| d.starts_with("/run/")) {
            let dir = self.host_path(d);
            std::fs::remove_dir_all(&dir).with_context(|| format!("wipe {}", dir.display()))?;
            std::fs::create_dir_all(&dir)?;
        }
        let overlay = self.dir.join("overlay_run");
        std::fs::remove_dir_all(&overlay).with_context(|| format!("wipe {}", overlay.display()))
    }

    /// Ends every process left in the node (the holder, pods' processes in its cgroups, shims),
    /// which frees its mount namespace and with it every mount made in it; then removes its
    /// cgroups and its network namespace. Every step runs; the errors are returned together.
    pub fn teardown(&mut self) -> Vec<String> {
        let mut errors = Vec::new();
        for h in cgroup_hierarchies() {
            if let Err(e) = remove_cgroup_tree(&h.join(&self.cgroup_root)) {
                errors.push(format!(
                    "remove the node's cgroups in {}: {e:#}",
                    h.display()
                ));
            }
        }
        if let Ok(mnt) = std::fs::read_link(format!("/proc/{}/ns/mnt", self.holder.id())) {
            for pid in pids_in_mount_namespace(&mnt) {
                if pid != self.holder.id() as i32 {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
            }
        }
        let _ = self.holder.kill();
        let _ = self.holder.wait();
        if let Err(e) = ip(&["netns", "del", &self.netns]) {
            errors.push(format!("{e:#}"));
        }
        errors
    }
}

/// Runs programs in a node's namespaces (those of its holder process).
#[derive(Debug, Clone, Copy)]
pub struct Enter(u32);

impl Enter {
    /// The namespaces of process `holder`.
    pub fn of(holder: u32) -> Enter {
        Enter(holder)
    }

    /// `nsenter -t <holder> -n -m -u -- program`: nsenter execs the program (no fork without a
    /// PID namespace), so the child's pid is the program's.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new("nsenter");
        cmd.arg("-t")
            .arg(self.0.to_string())
            .args(["-n", "-m", "-u", "--"])
            .arg(program);
        cmd
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.holder.kill();
        let _ = self.holder.wait();
    }
}

fn spawn_holder(name: &str, netns: &str, dir: &Path) -> Result<Child> {
    let mut cmd = Command::new("nsenter");
    cmd.arg(format!("--net=/run/netns/{netns}"))
        .args([
            "--",
            "unshare",
            "--mount",
            "--uts",
            "--propagation",
            "private",
            "--",
            "sh",
            "-c",
            HOLDER,
            "sh",
            name,
        ])
        .arg(dir)
        .envs(ENV.iter().copied());
    for d in NODE_DIRS {
        let own = dir.join("root").join(d.trim_start_matches('/'));
        std::fs::create_dir_all(&own)?;
        cmd.arg(own).arg(d);
    }
    let log = std::fs::File::create(dir.join("holder.log"))?;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .context("start the node's namespace holder")?;
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        BufReader::new(out).read_line(&mut line)?;
    }
    if line.trim() != "ready" {
        let _ = child.kill();
        let _ = child.wait();
        bail!(
            "node {name}'s namespaces: {}",
            std::fs::read_to_string(dir.join("holder.log")).unwrap_or_default()
        );
    }
    Ok(child)
}

fn pids_in_mount_namespace(mnt: &Path) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/ns/mnt")).is_ok_and(|m| m.as_path() == mnt)
        })
        .collect()
}

/// `/sys/fs/cgroup/<controller>` for every cgroup v1 hierarchy, or the v2 root.
fn cgroup_hierarchies() -> Vec<PathBuf> {
    let root = Path::new("/sys/fs/cgroup");
    if root.join("cgroup.controllers").exists() {
        return vec![root.to_path_buf()];
    }
    let Ok(dir) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    dir.flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect()
}

/// Kills what is still in the tree (processes of pods whose shims died with the cluster) and
/// removes the cgroups, deepest first.
fn remove_cgroup_tree(dir: &Path) -> Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            remove_cgroup_tree(&entry.path())?;
        }
    }
    for file in ["cgroup.procs", "tasks"] {
        if let Ok(pids) = std::fs::read_to_string(dir.join(file)) {
            for pid in pids.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }
    crate::daemon::wait_for(
        &format!("rmdir {}", dir.display()),
        std::time::Duration::from_secs(10),
        || match std::fs::remove_dir(dir) {
            Ok(()) => Ok(Some(())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Some(())),
            Err(e) => Err(e.into()),
        },
    )
}
