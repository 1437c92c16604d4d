//! The node: a network namespace of its own that the whole cluster runs in (etcd, the API server,
//! containerd, the kubelet, the registry, the tests' kubectl), so "loopback" is the namespace's
//! loopback and the machine's own network is never touched. In it: the pod bridge `cni0` whose
//! address is the node IP, and a DNAT from the `kubernetes` Service's address to the API server
//! on 127.0.0.1 (what kube-proxy would do), so pods such as the operator reach the API.
//!
//! Also what the kubelet changes outside any namespace, put back on drop: three global sysctls
//! and the `/kubepods` cgroups.

use std::fs::File;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use nix::sched::{setns, CloneFlags};

use crate::daemon::run;

/// The pod bridge and the node's address on it (also the pods' gateway).
pub const POD_BRIDGE: &str = "cni0";
pub const NODE_IP: &str = "10.244.0.1";
pub const POD_SUBNET: &str = "10.244.0.0/24";
pub const SERVICE_SUBNET: &str = "10.96.0.0/24";
pub const KUBERNETES_SERVICE_IP: &str = "10.96.0.1";

/// Sysctls the kubelet rewrites on start (they are not per namespace).
const KUBELET_SYSCTLS: &[&str] = &[
    "vm/overcommit_memory",
    "kernel/panic",
    "kernel/panic_on_oops",
];

pub struct Node {
    netns: String,
    host_ns: File,
    saved_sysctls: Vec<(PathBuf, String)>,
    netns_before: Vec<String>,
}

impl Node {
    /// Creates the namespace `name` and moves the calling thread into it. Call it before any other
    /// thread exists: threads and processes started later inherit the namespace.
    pub fn create(name: &str, apiserver_port: u16) -> Result<Node> {
        for cgroup in kubepods_cgroups() {
            if cgroup.exists() {
                bail!(
                    "{} exists: another kubelet runs on this machine, or an earlier run was killed \
                     before it cleaned up (remove the empty cgroups with rmdir, deepest first)",
                    cgroup.display()
                );
            }
        }
        let host_ns = File::open("/proc/self/ns/net").context("open the host's namespace")?;
        let netns_before = list_netns();
        run(Command::new("ip").args(["netns", "add", name]))?;
        let mut node = Node {
            netns: name.to_string(),
            host_ns,
            saved_sysctls: Vec::new(),
            netns_before,
        };
        for s in KUBELET_SYSCTLS {
            let path = Path::new("/proc/sys").join(s);
            let value = std::fs::read_to_string(&path)?;
            node.saved_sysctls.push((path, value));
        }
        let ns = File::open(Path::new("/run/netns").join(name))?;
        setns(ns.as_fd(), CloneFlags::CLONE_NEWNET).context("enter the node's namespace")?;
        node.configure(apiserver_port)?;
        Ok(node)
    }

    pub fn netns(&self) -> &str {
        &self.netns
    }

    fn configure(&self, apiserver_port: u16) -> Result<()> {
        let ip = |args: &[&str]| run(Command::new("ip").args(args)).map(drop);
        ip(&["link", "set", "lo", "up"])?;
        ip(&["link", "add", POD_BRIDGE, "type", "bridge"])?;
        ip(&["addr", "add", &format!("{NODE_IP}/24"), "dev", POD_BRIDGE])?;
        ip(&["link", "set", POD_BRIDGE, "up"])?;
        ip(&["route", "add", SERVICE_SUBNET, "dev", POD_BRIDGE])?;
        // Per namespace: forwarding between pods, and 127.0.0.1 as a DNAT target for traffic
        // that enters on the pod bridge.
        write_sysctl("net/ipv4/ip_forward", "1")?;
        write_sysctl("net/ipv4/conf/all/route_localnet", "1")?;
        write_sysctl(&format!("net/ipv4/conf/{POD_BRIDGE}/route_localnet"), "1")?;
        let rules = format!(
            "table ip kube_tier {{\n\
             chain prerouting {{ type nat hook prerouting priority -100; ip daddr \
             {KUBERNETES_SERVICE_IP} tcp dport 443 dnat to 127.0.0.1:{apiserver_port}; }}\n\
             chain output {{ type nat hook output priority -100; ip daddr \
             {KUBERNETES_SERVICE_IP} tcp dport 443 dnat to 127.0.0.1:{apiserver_port}; }}\n}}\n"
        );
        let mut nft = Command::new("nft");
        nft.args(["-f", "-"]);
        crate::daemon::run_with_stdin(&mut nft, rules.as_bytes())?;
        Ok(())
    }

    /// What the cluster left outside its directory: the sandboxes' namespaces, the cgroups, the
    /// sysctls; then the namespace itself. Every step runs; the errors are returned together.
    pub fn teardown(&mut self) -> Vec<String> {
        let mut errors = Vec::new();
        if let Err(e) = setns(self.host_ns.as_fd(), CloneFlags::CLONE_NEWNET) {
            errors.push(format!("return to the host's namespace: {e}"));
        }
        for name in list_netns() {
            if name.starts_with("cni-") && !self.netns_before.contains(&name) {
                if let Err(e) = run(Command::new("ip").args(["netns", "del", &name])) {
                    errors.push(format!("{e:#}"));
                }
            }
        }
        if let Err(e) = run(Command::new("ip").args(["netns", "del", &self.netns])) {
            errors.push(format!("{e:#}"));
        }
        for cgroup in kubepods_cgroups() {
            if let Err(e) = remove_cgroup_tree(&cgroup) {
                errors.push(format!("remove {}: {e:#}", cgroup.display()));
            }
        }
        for (path, value) in &self.saved_sysctls {
            if let Err(e) = std::fs::write(path, value) {
                errors.push(format!("restore {}: {e}", path.display()));
            }
        }
        errors
    }
}

fn write_sysctl(key: &str, value: &str) -> Result<()> {
    let path = Path::new("/proc/sys").join(key);
    std::fs::write(&path, value).with_context(|| format!("write {}", path.display()))
}

fn list_netns() -> Vec<String> {
    std::fs::read_dir("/run/netns")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// `/sys/fs/cgroup/<controller>/kubepods` for every cgroup v1 controller (or the v2 one).
fn kubepods_cgroups() -> Vec<PathBuf> {
    let root = Path::new("/sys/fs/cgroup");
    let mut out = Vec::new();
    if root.join("cgroup.controllers").exists() {
        out.push(root.join("kubepods"));
        return out;
    }
    if let Ok(dir) = std::fs::read_dir(root) {
        for e in dir.flatten() {
            let p = e.path();
            if p.is_dir() && !e.file_type().map(|t| t.is_symlink()).unwrap_or(true) {
                out.push(p.join("kubepods"));
            }
        }
    }
    out
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
