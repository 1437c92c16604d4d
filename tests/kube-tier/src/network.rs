//! The cluster's networks, each in a network namespace the tier made, so the machine's own network
//! is never touched:
//! - the control plane's namespace (`kube-tier-<pid>`): etcd, the API server, the
//!   controller-manager, the scheduler, the registry and the tests themselves run in it, on its
//!   loopback and on the cluster bridge `cluster0` ([`CONTROL_PLANE_IP`]), which every node's
//!   `eth0` joins;
//! - the secondary switch (`kube-tier-<pid>-switch`): a bridge `switch0` that every node's `eth1`
//!   joins, as the walkthrough's cluster gives each node a second NIC.
//!
//! No default route anywhere: a packet for an address the tier did not give has nowhere to go.

use std::fs::File;
use std::os::fd::AsFd;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result};
use nix::sched::{setns, CloneFlags};

use crate::daemon::run;

/// The control plane's address on the cluster bridge: the API server and the registry listen on
/// it (and on loopback) for the nodes.
pub const CONTROL_PLANE_IP: &str = "172.31.255.1";
/// The API server's port, on loopback and on the control plane's address.
pub const APISERVER_PORT: u16 = 6443;
pub const CLUSTER_PREFIX: u8 = 24;
pub const CLUSTER_BRIDGE: &str = "cluster0";
pub const SWITCH_BRIDGE: &str = "switch0";
pub const SERVICE_SUBNET: &str = "10.96.0.0/24";
pub const KUBERNETES_SERVICE_IP: &str = "10.96.0.1";

/// Node `index`'s (1-based) address on the cluster bridge.
pub fn node_ip(index: usize) -> String {
    format!("172.31.255.{}", 10 + index)
}

/// Node `index`'s pod subnet; its first address is the node's on the pod bridge, the pods'
/// gateway.
pub fn pod_subnet(index: usize) -> String {
    format!("10.244.{index}.0/24")
}

pub fn pod_gateway(index: usize) -> String {
    format!("10.244.{index}.1")
}

pub struct Network {
    control_plane: String,
    switch: String,
    host_ns: File,
    /// `ip netns add` made `/run/netns` (and mounted it on itself): the teardown takes it away.
    made_netns_dir: bool,
}

impl Network {
    /// Creates the control plane's namespace and moves the calling thread into it, and the
    /// switch's. Call it before any other thread exists: threads and processes started later
    /// inherit the namespace.
    pub fn create(prefix: &str) -> Result<Network> {
        let host_ns = File::open("/proc/self/ns/net").context("open the host's namespace")?;
        let network = Network {
            control_plane: prefix.to_string(),
            switch: format!("{prefix}-switch"),
            host_ns,
            made_netns_dir: !Path::new(NETNS_DIR).exists(),
        };
        ip(&["netns", "add", &network.control_plane])?;
        ip(&["netns", "add", &network.switch])?;
        let ns = File::open(Path::new(NETNS_DIR).join(&network.control_plane))?;
        setns(ns.as_fd(), CloneFlags::CLONE_NEWNET)
            .context("enter the control plane's namespace")?;
        ip(&["link", "set", "lo", "up"])?;
        ip(&["link", "add", CLUSTER_BRIDGE, "type", "bridge"])?;
        ip(&[
            "addr",
            "add",
            &format!("{CONTROL_PLANE_IP}/{CLUSTER_PREFIX}"),
            "dev",
            CLUSTER_BRIDGE,
        ])?;
        ip(&["link", "set", CLUSTER_BRIDGE, "up"])?;
        let sw = network.switch.as_str();
        ip(&["-n", sw, "link", "add", SWITCH_BRIDGE, "type", "bridge"])?;
        ip(&["-n", sw, "link", "set", SWITCH_BRIDGE, "up"])?;
        Ok(network)
    }

    /// The control plane's namespace, where the tests run.
    pub fn control_plane(&self) -> &str {
        &self.control_plane
    }

    pub fn switch(&self) -> &str {
        &self.switch
    }

    /// Wires node `index` into both networks: its `eth0` on the cluster bridge, its `eth1` on the
    /// switch, and the route from the control plane to its pods (the API server answers pods
    /// that reach it through the `kubernetes` Service).
    pub fn attach(&self, index: usize, node_netns: &str) -> Result<()> {
        let port = format!("node{index:02}");
        // A node made again (after a reboot) may find its old ports: the kernel frees a deleted
        // namespace's links asynchronously.
        let _ = ip(&["link", "del", &port]);
        let _ = ip(&["-n", &self.switch, "link", "del", &port]);
        ip(&[
            "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns", node_netns,
        ])?;
        ip(&["link", "set", &port, "master", CLUSTER_BRIDGE, "up"])?;
        let sw = self.switch.as_str();
        ip(&[
            "-n", sw, "link", "add", &port, "type", "veth", "peer", "name", "eth1", "netns",
            node_netns,
        ])?;
        ip(&[
            "-n",
            sw,
            "link",
            "set",
            &port,
            "master",
            SWITCH_BRIDGE,
            "up",
        ])?;
        // `replace`: a node made again (after a reboot) finds its route there.
        ip(&[
            "route",
            "replace",
            &pod_subnet(index),
            "via",
            &node_ip(index),
        ])?;
        Ok(())
    }

    /// Deletes both namespaces (with them the bridges and the nodes' peers), after moving the
    /// calling thread back to the host's.
    pub fn teardown(&mut self) -> Vec<String> {
        let mut errors = Vec::new();
        if let Err(e) = setns(self.host_ns.as_fd(), CloneFlags::CLONE_NEWNET) {
            errors.push(format!("return to the host's namespace: {e}"));
        }
        for ns in [&self.switch, &self.control_plane] {
            if Path::new(NETNS_DIR).join(ns).exists() {
                if let Err(e) = ip(&["netns", "del", ns]) {
                    errors.push(format!("{e:#}"));
                }
            }
        }
        let left_empty = std::fs::read_dir(NETNS_DIR).is_ok_and(|mut d| d.next().is_none());
        if self.made_netns_dir && left_empty {
            let _ = nix::mount::umount2(NETNS_DIR, nix::mount::MntFlags::MNT_DETACH);
            if let Err(e) = std::fs::remove_dir(NETNS_DIR) {
                errors.push(format!("remove {NETNS_DIR}: {e}"));
            }
        }
        errors
    }
}

/// Where `ip netns` keeps the namespaces it names.
const NETNS_DIR: &str = "/run/netns";

pub(crate) fn ip(args: &[&str]) -> Result<()> {
    run(Command::new("ip").args(args)).map(drop)
}
