//! The node agent's garbage collection against the node's real runtime and API server: an
//! attachment whose sandbox the runtime does not have (its DEL never came) goes, everything of
//! it; the attachments of live pods, and of pods created while it runs, stay. First
//! `node-agent gc` on the node itself (`--host-root /`), then the operator's DaemonSets,
//! which run it every `GC_INTERVAL` through the node's root.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::Value;

use kube_tier::cluster::{CONTAINERD_SOCK, POD_NETWORK_CONF};
use kube_tier::daemon::{run, run_with_stdin, wait_for};
use kube_tier::node::Enter;

use crate::scenarios::operator::{LINUX_BRIDGE_DS, OWN_SPEC};
use crate::scenarios::pods::{bridge_ports, create_pod, delete_pod, wait_pod_ip};
use crate::{check, Ctx, NAMESPACE};

mod agents;
mod on_node;
mod runtime_lost;
mod through_multus;

pub use agents::{
    the_node_agents_collect_the_networks_of_attachment_definitions,
    the_node_agents_collect_what_lost_dels_left,
};
pub use on_node::{gc_collects_what_lost_dels_left, gc_keeps_pods_created_while_it_runs};
pub use runtime_lost::{
    the_node_agents_collect_a_sandbox_deleted_behind_the_runtime,
    the_node_agents_collect_after_the_runtime_is_killed_mid_pod,
};
pub use through_multus::the_node_agents_collect_both_networks_of_a_lost_sandbox_through_multus;

/// The tier's operator runs its node agents with this `GC_INTERVAL`.
pub const AGENT_GC_INTERVAL: &str = "10s";
/// ... and this `GC_METRICS_PORT` (the linux-bridge agents'; the ovs agents serve on the next).
pub const AGENT_METRICS_PORT: u16 = 9191;

/// An attachment made on node01 as a runtime (or Multus) makes one: each plugin of `network`
/// (a conflist) ADDed in turn with the previous one's result, into a namespace of its own that
/// the runtime never knew. The namespace goes when it is dropped.
struct Attachment {
    node: Enter,
    netns: String,
    ip: String,
    host_veth: String,
}

impl Attachment {
    fn make(ctx: &Ctx, container_id: &str, ifname: &str, network: &Value) -> Result<Attachment> {
        let node = ctx.node01();
        let netns = format!("kube-tier-{container_id}-{ifname}");
        run(node.command("ip").args(["netns", "add", &netns]))?;
        // Made at once, so that a failing ADD still drops the namespace.
        let mut attachment = Attachment {
            node: node.enter(),
            netns,
            ip: String::new(),
            host_veth: String::new(),
        };
        let mut prev: Option<Value> = None;
        for plugin in network["plugins"].as_array().context("plugins")? {
            let mut conf = plugin.clone();
            conf["name"] = network["name"].clone();
            conf["cniVersion"] = network["cniVersion"].clone();
            if let Some(prev) = &prev {
                conf["prevResult"] = prev.clone();
            }
            let kind = conf["type"].as_str().context("type")?.to_string();
            let out = run_with_stdin(
                node.command(Path::new("/opt/cni/bin").join(&kind))
                    .env("CNI_COMMAND", "ADD")
                    .env("CNI_CONTAINERID", container_id)
                    .env("CNI_NETNS", format!("/run/netns/{}", attachment.netns))
                    .env("CNI_IFNAME", ifname)
                    .env("CNI_PATH", "/opt/cni/bin"),
                conf.to_string().as_bytes(),
            )
            .with_context(|| format!("{kind} ADD of {container_id}'s {ifname}"))?;
            prev = Some(serde_json::from_str(&out)?);
        }
        let result = prev.context("no plugin")?;
        let ip = result["ips"][0]["address"]
            .as_str()
            .and_then(|a| a.split('/').next())
            .context("an address")?
            .to_string();
        // The host side: the interface outside the sandbox that is not the bridge itself.
        let bridges: Vec<&str> = network["plugins"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["bridge"].as_str())
            .collect();
        let host_veth = result["interfaces"]
            .as_array()
            .and_then(|ifs| {
                ifs.iter().find(|i| {
                    i["sandbox"].is_null()
                        && i["name"].as_str().is_some_and(|n| !bridges.contains(&n))
                })
            })
            .and_then(|i| i["name"].as_str())
            .context("the host veth")?
            .to_string();
        attachment.ip = ip;
        attachment.host_veth = host_veth;
        Ok(attachment)
    }
}

impl Drop for Attachment {
    fn drop(&mut self) {
        let _ = self
            .node
            .command("ip")
            .args(["netns", "del", &self.netns])
            .status();
    }
}

/// One attachment of the pod network (the node's config, our bridge) whose sandbox the runtime
/// lost. Its bridge also had `ipMasq` and `macspoofchk` on (the network's
/// config has changed since, as configs do), so it holds nftables chains too: GC finds our
/// chains by the network's name, whatever the config says today.
struct Leak {
    att: Attachment,
    /// The attachment chains of node01's nftables tables before the leak.
    chains_before: Chains,
}

/// The number of attachment chains (`att-…`) in our bridge's two nftables tables on node01.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Chains {
    spoof_check: usize,
    masquerade: usize,
}

impl Chains {
    fn on_node01(ctx: &Ctx) -> Result<Chains> {
        let count = |family: &str, table: &str| -> Result<usize> {
            let out = ctx
                .node01()
                .command("nft")
                .args(["list", "table", family, table])
                .output()
                .context("running nft")?;
            // No table: no attachment has made it yet.
            Ok(String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|l| l.trim_start().starts_with("chain att-"))
                .count())
        };
        Ok(Chains {
            spoof_check: count("bridge", "cni_bridge_spoofchk")?,
            masquerade: count("inet", "cni_bridge_masquerade")?,
        })
    }
}

impl Leak {
    fn make(ctx: &Ctx, container_id: &str) -> Result<Leak> {
        let chains_before = Chains::on_node01(ctx)?;
        let mut bridge: Value = serde_json::from_slice(
            &std::fs::read(ctx.node01().host_path(POD_NETWORK_CONF))
                .context("the node's network config")?,
        )?;
        bridge["ipMasq"] = Value::Bool(true);
        bridge["macspoofchk"] = Value::Bool(true);
        let network = serde_json::json!({
            "cniVersion": bridge["cniVersion"],
            "name": bridge["name"],
            "plugins": [bridge],
        });
        let att = Attachment::make(ctx, container_id, "eth0", &network)?;
        let chains = Chains::on_node01(ctx)?;
        check(
            chains.spoof_check == chains_before.spoof_check + 1
                && chains.masquerade == chains_before.masquerade + 1,
            || {
                format!("the leaked attachment made no chains: {chains_before:?} before, {chains:?} after")
            },
        )?;
        Ok(Leak { att, chains_before })
    }

    fn lease(&self, ctx: &Ctx) -> PathBuf {
        leases_dir(ctx).join(&self.att.ip)
    }
}

/// Node01's kubelet stopped and pod `pod`'s sandbox deleted behind the runtime's back (a
/// cleanup script's `ctr`): no DEL will ever come for it. The sandbox's ID.
fn lose_the_sandbox(ctx: &mut Ctx, pod: &str) -> Result<String> {
    ctx.cluster.crash(0, "kubelet")?;
    ctx.cluster.delete_pod_behind_the_runtime(0, "default", pod)
}

/// containerd killed and started again on node01, then its kubelet: the runtime knows nothing
/// of a sandbox [`lose_the_sandbox`] deleted. When it was back.
fn restart_the_runtime(ctx: &mut Ctx) -> Result<Instant> {
    ctx.cluster.crash(0, "containerd")?;
    ctx.cluster.start_again(0, "containerd")?;
    ctx.cluster.start_again(0, "kubelet")?;
    Ok(Instant::now())
}

/// The pod network's name (in the nodes' config).
const POD_NETWORK: &str = "kube-tier";

/// Where host-local keeps node01's leases of the pod network, seen from the machine.
fn leases_dir(ctx: &Ctx) -> PathBuf {
    ctx.node01()
        .host_path(Path::new("/var/lib/cni/networks").join(POD_NETWORK))
}

/// `node-agent gc` once, on node01: what it logged.
fn collect(ctx: &Ctx) -> Result<String> {
    let node = ctx.node01();
    let out = node
        .command(ctx.repo.join("target/node-agent/node-agent"))
        .args([
            "gc",
            "--to",
            "/opt/cni/bin",
            "--cni-conf-dir",
            "/etc/cni/net.d",
        ])
        .args(["--cri-socket", CONTAINERD_SOCK, "--host-root", "/"])
        .env("NODE_NAME", node.name())
        .env("KUBECONFIG", ctx.cluster.node_kubeconfig())
        .output()
        .context("running node-agent gc")?;
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    anyhow::ensure!(out.status.success(), "node-agent gc failed:\n{log}");
    Ok(log)
}

/// One ping from `pod` to the node's address on the pod bridge, its gateway.
fn reaches_its_gateway(ctx: &Ctx, pod: &str, when: &str) -> Result<()> {
    let out = ctx.kubectl(&[
        "exec",
        "-n",
        "default",
        pod,
        "--",
        "ping",
        "-c",
        "1",
        "-W",
        "2",
        &ctx.node01().pod_gateway(),
    ])?;
    check(out.contains(" 0% packet loss"), || {
        format!("{pod} lost its network {when}:\n{out}")
    })
}

fn exists(path: &Path) -> bool {
    path.exists()
}

/// The names of the pod bridge's ports.
fn ports(ctx: &Ctx) -> Result<Vec<String>> {
    Ok(bridge_ports(ctx)?
        .into_iter()
        .map(|(name, _)| name)
        .collect())
}

impl Leak {
    /// Whether nothing of it is left: its port, its lease, its nftables chains.
    fn is_gone(&self, ctx: &Ctx) -> Result<bool> {
        Ok(!ports(ctx)?.contains(&self.att.host_veth)
            && !exists(&self.lease(ctx))
            && Chains::on_node01(ctx)? == self.chains_before)
    }
}

/// The log of the linux-bridge DaemonSet's agent on node01.
fn agent_log(ctx: &Ctx) -> Result<String> {
    let pod = ctx.daemonset_pod(LINUX_BRIDGE_DS, ctx.node01().name())?;
    ctx.kubectl(&["logs", "-n", NAMESPACE, &pod, "-c", "cni-plugins"])
}
