//! A node's reboot, as a power cycle: its pods' links and `/run` go, but what its disk holds for
//! them stays (host-local's leases under `/var/lib/cni`, the OVS ports in the switch's
//! database). Whoever removes the old sandboxes' leftovers, the node must end up holding only
//! what its live pods use. containerd 1.6 DELs a sandbox it finds dead when the kubelet stops
//! it, but that DEL reaches our plugins only if Multus' daemon is back by then: its shim
//! answers a DEL it cannot pass on with success. Which comes first is a race, so either the
//! DEL or the node agents' collection removes them. The agents' lines are printed, to show
//! who did it.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::json;

use kube_tier::daemon::wait_for;
use kube_tier::node::Node;

use crate::scenarios::multus::{
    attached_pod, attachment_config, delete_nads, nad, wait_attached, wait_multus, NET1,
};
use crate::scenarios::operator::{reset, LINUX_BRIDGE_DS, OVS_DS, OWN_SPEC};
use crate::scenarios::pods::delete_pod;
use crate::{check, Ctx, NAMESPACE, OPERATOR};

const POD: &str = "reboot-a";
const SECONDARY: &str = "ovs-reboot";
const OVS_BRIDGE: &str = "br-reboot";

/// What a node holds for pods: the leases of the pod network and of the secondary network, the
/// OVS access ports, tuning's state files.
#[derive(Debug, PartialEq, Eq)]
struct Holds {
    leases: BTreeSet<String>,
    secondary_leases: usize,
    ovs_ports: usize,
    tuning_states: usize,
}

fn holds(ctx: &Ctx, index: usize) -> Result<Holds> {
    let node = ctx.cluster.node(index);
    let tuning_states = std::fs::read_dir(node.host_path("/run/cni/tuning"))
        .map(|d| d.flatten().count())
        .unwrap_or(0);
    Ok(Holds {
        leases: node.leases("kube-tier"),
        secondary_leases: node.leases(SECONDARY).len(),
        ovs_ports: ctx.cluster.ovs(index).port_tags()?.len(),
        tuning_states,
    })
}

/// What the node should hold for its one pod on both networks.
fn pod_holds(ctx: &Ctx) -> Result<Holds> {
    let pod = ctx.get(&["get", "pod", POD, "-n", "default"])?;
    let ip = pod["status"]["podIP"].as_str().context("the pod's IP")?;
    Ok(Holds {
        leases: BTreeSet::from([ip.to_string()]),
        secondary_leases: 1,
        ovs_ports: 1,
        // tuning keeps state only where it changes something, and the extra network's
        // tuning is given no MAC.
        tuning_states: 0,
    })
}

/// A node with no pod of the pod network on it, not even one still being deleted: the last
/// one that does not run the operator's replica, once the earlier scenarios' pods are gone.
fn quiet_node(ctx: &Ctx) -> Result<usize> {
    wait_for(
        "a node without pods of the pod network",
        Duration::from_secs(120),
        || {
            let pods = ctx.get(&["get", "pods", "-A"])?;
            let busy: BTreeSet<&str> = pods["items"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|p| p["spec"]["hostNetwork"] != true)
                .filter_map(|p| p["spec"]["nodeName"].as_str())
                .collect();
            Ok(ctx
                .cluster
                .nodes()
                .iter()
                .rposition(|n| !busy.contains(n.name())))
        },
    )
}

/// The agents' lines about collections on `node` since their start.
fn agents_said(ctx: &Ctx, node: &Node) -> Vec<String> {
    let mut lines = Vec::new();
    for (ds, container) in [(LINUX_BRIDGE_DS, "cni-plugins"), (OVS_DS, "ovs-cni-plugin")] {
        let Ok(pod) = ctx.daemonset_pod(ds, node.name()) else {
            continue;
        };
        let log = ctx
            .kubectl(&["logs", "-n", NAMESPACE, &pod, "-c", container])
            .unwrap_or_default();
        lines.extend(
            log.lines()
                .filter(|l| l.contains("collected") || l.contains("restarted"))
                .map(|l| format!("{container}: {}", l.trim())),
        );
    }
    lines
}

/// A pod with an interface on the pod network (our bridge) and one on an OVS VLAN (our ovs and
/// tuning, through Multus) runs on a node that is then power-cycled: within the agents' period the
/// node holds exactly what the pod's new sandbox uses, nothing of the old one.
pub fn a_reboot_leaves_the_node_holding_only_what_its_live_pods_use(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    reset(ctx)?;
    ctx.apply_nac(&format!("multus: {{}}\n{OWN_SPEC}"))?;
    ctx.kubectl_wait("Available", "240s")?;
    wait_multus(ctx)?;
    // The operator's replicas are pods of the pod network, one per node: one replica leaves a
    // node to the scenario's pod alone.
    ctx.scale_operator(1)?;
    let result = on_a_quiet_node(ctx);
    // Both replicas back whatever the outcome: the later scenarios count on them.
    let restored = ctx
        .scale_operator(2)
        .and_then(|()| ctx.wait_rollout("deployment", OPERATOR));
    result.and(restored)
}

fn on_a_quiet_node(ctx: &mut Ctx) -> Result<()> {
    let index = quiet_node(ctx)?;
    let name = ctx.cluster.node(index).name().to_string();
    let result = (|| {
        ctx.cluster.ovs(index).add_br(OVS_BRIDGE)?;
        let ovs = json!({"type": "ovs", "bridge": OVS_BRIDGE, "vlan": 100});
        let ipam = json!({"type": "host-local", "subnet": "192.168.210.0/24"});
        ctx.apply(&nad(SECONDARY, &attachment_config(SECONDARY, ovs, ipam)))?;
        reboot_with_a_pod(ctx, index, &name)
    })();
    let _ = delete_pod(ctx, POD);
    let _ = delete_nads(ctx, &[SECONDARY]);
    let _ = ctx.cluster.ovs(index).del_br(OVS_BRIDGE);
    result
}

fn reboot_with_a_pod(ctx: &mut Ctx, index: usize, name: &str) -> Result<()> {
    attached_pod(ctx, POD, name, &json!([{"name": SECONDARY}]))?;
    let before = holds(ctx, index)?;
    check(before == pod_holds(ctx)?, || {
        format!("before the reboot {name} holds {before:?}")
    })?;
    let started = Instant::now();
    ctx.cluster.reboot(index)?;
    let ready = Instant::now();
    let after = holds(ctx, index)?;
    println!(
        "    {name} rebooted with {POD} on it (Ready again {:.1}s later); it held {before:?} \
         before, {after:?} once Ready",
        started.elapsed().as_secs_f64()
    );
    let live = wait_for(
        &format!("{name} to hold only what {POD}'s new sandbox uses"),
        Duration::from_secs(180),
        || {
            let phase = ctx.kubectl(&["get", "pod", POD, "-o", "jsonpath={.status.phase}"])?;
            if phase.trim() != "Running" {
                return Ok(None);
            }
            let (now, live) = (holds(ctx, index)?, pod_holds(ctx)?);
            Ok((now == live).then_some(live))
        },
    )
    .with_context(|| format!("{name} holds {:?}", holds(ctx, index).ok()))?;
    wait_multus(ctx)?;
    let back = wait_attached(ctx, POD)?;
    let node = ctx.cluster.node(index);
    println!(
        "    {:.1}s after it was Ready, {name} holds only what {POD} uses now ({live:?}); Multus \
         back, and the pod's {NET1} with it ({back:?}); the agents said:\n      {}",
        ready.elapsed().as_secs_f64(),
        agents_said(ctx, node).join("\n      ")
    );
    Ok(())
}
