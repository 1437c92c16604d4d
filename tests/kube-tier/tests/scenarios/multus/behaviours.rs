//! What users of Multus rely on, beyond an attachment that works: a NAD that is not there yet, a
//! config that cannot be attached, and a Multus daemon that goes away and comes back.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::json;

use kube_tier::daemon::wait_for;
use kube_tier::node::{Node, POD_BRIDGE};

use super::attach::{
    around, attached_pod, attached_pod_manifest, attachment_config, delete_nads, events_of, nad,
    pings, static_ipam, wait_attached, wait_multus, with_ips, MULTUS_CONF, MULTUS_DS, NET1,
};
use crate::scenarios::operator::{reset, OWN_SPEC};
use crate::scenarios::pods::delete_pod;
use crate::{check, Ctx};

fn deploy_multus(ctx: &Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    reset(ctx)?;
    ctx.apply_nac(&format!("multus: {{}}\n{OWN_SPEC}"))?;
    wait_multus(ctx)
}

/// What a node holds for pods on the pod network: `cni0`'s ports and the pod network's leases.
fn pod_network_holds(node: &Node) -> Result<(usize, usize)> {
    Ok((
        node.bridge_ports(POD_BRIDGE)?.len(),
        node.leases("kube-tier").len(),
    ))
}

/// Whether `node` has a link named `name`.
fn has_link(node: &Node, name: &str) -> Result<bool> {
    Ok(node
        .sh(&format!("ip -o link show {name} 2>/dev/null || true"))?
        .contains(&format!(": {name}:")))
}

/// Waits until an event about pod `name` has a message that `wanted` accepts, while the pod
/// has not started; that message.
fn wait_refusal(ctx: &Ctx, name: &str, wanted: &dyn Fn(&str) -> bool) -> Result<String> {
    let message = wait_for(
        &format!("pod {name}'s event saying why its sandbox failed"),
        Duration::from_secs(90),
        || {
            Ok(events_of(ctx, "default", name)
                .lines()
                .find(|l| wanted(l))
                .map(str::to_string))
        },
    )
    .with_context(|| format!("pod {name}'s events: {}", events_of(ctx, "default", name)))?;
    let phase = ctx.kubectl(&[
        "get",
        "pod",
        "-n",
        "default",
        name,
        "-o",
        "jsonpath={.status.phase}",
    ])?;
    check(phase.trim() == "Pending", || {
        format!("pod {name} is {phase} though its network could not be attached")
    })?;
    Ok(message)
}

/// The config our bridge refuses before it touches the node, and the words it refuses it with.
const REFUSED_BRIDGE: &str = "brrefused";
const REFUSED_WORDS: &str = "vlan 5000 is out of range";

/// A pod naming a NetworkAttachmentDefinition that does not exist yet waits in
/// ContainerCreating with Multus' error, and starts with `net1` once the NAD is created. A NAD
/// naming a plugin the node lacks, and one whose config our bridge refuses, leave their pods
/// waiting with an event that carries the plugin's (or libcni's) own words, and nothing on
/// the node: no bridge, no port or lease of the pod network left once the pods are gone.
pub fn a_missing_nad_waits_and_a_refused_config_says_why(ctx: &mut Ctx) -> Result<()> {
    deploy_multus(ctx)?;
    let node = ctx.cluster.node(0);
    let name = node.name().to_string();
    let before = pod_network_holds(node)?;

    let on = |nad: &str, ip: &str| json!([{"name": nad, "ips": [ip]}]);
    ctx.apply(&attached_pod_manifest(
        "multus-late",
        &name,
        &on("late-net", "192.168.120.11/24"),
    ))?;
    let said = wait_refusal(ctx, "multus-late", &|m| {
        m.contains("late-net") && m.contains("not found")
    })?;
    println!("    a pod naming a NAD not created yet waits:\n      {said}");
    let created = Instant::now();
    let bridge = with_ips(json!({"type": "bridge", "bridge": "brlate"}));
    ctx.apply(&nad(
        "late-net",
        &attachment_config("late-net", bridge, static_ipam()),
    ))?;
    let late = wait_attached(ctx, "multus-late")?;
    println!(
        "    the NAD created: the pod Running with {NET1} {} {:.1}s later",
        late.ip,
        created.elapsed().as_secs_f64()
    );

    let missing = json!({"cniVersion": "0.3.1", "name": "no-plugin", "type": "no-such-plugin"});
    ctx.apply(&nad("no-plugin", &missing))?;
    let refused = json!({"type": "bridge", "bridge": REFUSED_BRIDGE, "vlan": 5000});
    ctx.apply(&nad(
        "refused",
        &attachment_config("refused", refused, static_ipam()),
    ))?;
    // Each pod, its NAD, and words of the refusal its event must carry.
    let cases = [
        ("multus-no-plugin", "no-plugin", "no-such-plugin"),
        ("multus-refused", "refused", REFUSED_WORDS),
    ];
    for (pod, network, words) in cases {
        ctx.apply(&attached_pod_manifest(
            pod,
            &name,
            &on(network, "192.168.120.12/24"),
        ))?;
        let said = wait_refusal(ctx, pod, &|m| m.contains(words))?;
        println!(
            "    a pod on NAD {network} waits, saying:\n      {}",
            around(&said, words)
        );
    }
    check(!has_link(node, REFUSED_BRIDGE)?, || {
        format!("{name} has a bridge {REFUSED_BRIDGE} from a refused config")
    })?;
    for pod in ["multus-late", "multus-no-plugin", "multus-refused"] {
        delete_pod(ctx, pod)?;
    }
    let after = wait_for(
        "the node to hold of the pod network what it held before",
        Duration::from_secs(90),
        || {
            let now = pod_network_holds(ctx.cluster.node(0))?;
            Ok((now == before).then_some(now))
        },
    )
    .with_context(|| format!("before: {before:?} (cni0 ports, leases)"))?;
    println!(
        "    the pods deleted: {name} holds what it held before (cni0 ports, leases: {after:?})"
    );
    delete_nads(ctx, &["late-net", "no-plugin", "refused"])?;
    let _ = ctx
        .cluster
        .node(0)
        .sh("ip link del brlate 2>/dev/null || true");
    Ok(())
}

const RESTART_NAD: &str = "restart-net";
const RESTART_BRIDGE: &str = "brrestart";

/// The Multus daemon's pod on `node`, with whether it is ready.
fn daemon_pod(ctx: &Ctx, node: &str) -> Result<Option<(String, bool)>> {
    Ok(ctx
        .daemonset_pods(MULTUS_DS)?
        .iter()
        .filter(|p| p["spec"]["nodeName"] == node)
        .find_map(|p| {
            let ready = p["status"]["containerStatuses"]
                .as_array()
                .is_some_and(|c| !c.is_empty() && c.iter().all(|c| c["ready"] == true));
            p["metadata"]["name"]
                .as_str()
                .map(|n| (n.to_string(), ready))
        }))
}

/// Deleting the Multus daemon's pod on a node breaks no pod running there: its `net1` keeps
/// carrying traffic. A pod deleted while the daemon is away leaves nothing once the node agents
/// have run (Multus' DEL, or our GC, removes its port), and a pod created once the daemon is
/// back gets its `net1`.
pub fn deleting_a_multus_pod_breaks_no_pod(ctx: &mut Ctx) -> Result<()> {
    deploy_multus(ctx)?;
    let node = ctx.cluster.node(0).name().to_string();
    let bridge = with_ips(json!({"type": "bridge", "bridge": RESTART_BRIDGE}));
    ctx.apply(&nad(
        RESTART_NAD,
        &attachment_config(RESTART_NAD, bridge, static_ipam()),
    ))?;
    let result = restart_under_pods(ctx, &node);
    for pod in ["restart-a", "restart-b", "restart-c"] {
        let _ = delete_pod(ctx, pod);
    }
    let cleaned = wait_for(
        "the pods' ports to leave the bridge",
        Duration::from_secs(120),
        || Ok(ports(ctx)?.is_empty().then_some(())),
    );
    delete_nads(ctx, &[RESTART_NAD])?;
    let _ = ctx
        .cluster
        .node(0)
        .sh(&format!("ip link del {RESTART_BRIDGE} 2>/dev/null || true"));
    result.and(cleaned)
}

fn ports(ctx: &Ctx) -> Result<Vec<(String, String)>> {
    let node = ctx.cluster.node(0);
    if !has_link(node, RESTART_BRIDGE)? {
        return Ok(Vec::new());
    }
    node.bridge_ports(RESTART_BRIDGE)
}

fn restart_under_pods(ctx: &Ctx, node: &str) -> Result<()> {
    let on = |ip: &str| json!([{"name": RESTART_NAD, "ips": [ip]}]);
    let a = attached_pod(ctx, "restart-a", node, &on("192.168.130.11/24"))?;
    let b = attached_pod(ctx, "restart-b", node, &on("192.168.130.12/24"))?;
    check(pings(ctx, "default", "restart-a", &b.ip), || {
        "restart-a does not reach restart-b before the restart".into()
    })?;
    let (old, _) = daemon_pod(ctx, node)?.context("no Multus pod on the node")?;
    let stopped = Instant::now();
    ctx.kubectl(&[
        "delete",
        "pod",
        "-n",
        crate::NAMESPACE,
        &old,
        "--wait=false",
    ])?;
    delete_pod(ctx, "restart-b")?;
    let new = wait_for(
        "a new Multus pod ready on the node, its config back",
        Duration::from_secs(120),
        || {
            let back = daemon_pod(ctx, node)?
                .filter(|(name, ready)| *name != old && *ready)
                .filter(|_| ctx.cluster.node(0).host_path(MULTUS_CONF).exists());
            Ok(back.map(|(name, _)| name))
        },
    )?;
    let back = stopped.elapsed();
    let c = attached_pod(ctx, "restart-c", node, &on("192.168.130.13/24"))?;
    check(
        pings(ctx, "default", "restart-a", &c.ip) && pings(ctx, "default", "restart-c", &a.ip),
        || "restart-a (running through the restart) and restart-c do not reach each other".into(),
    )?;
    let left = wait_for(
        "restart-b's port to leave the bridge",
        Duration::from_secs(120),
        || {
            let ports = ports(ctx)?;
            Ok((ports.len() == 2).then_some(ports))
        },
    )
    .with_context(|| format!("the bridge's ports: {:?}", ports(ctx).ok()))?;
    println!(
        "    Multus' pod {old} deleted, {new} ready {:.1}s later: restart-a ({}) kept its {NET1} \
         and reaches restart-c ({}), made after; restart-b, deleted meanwhile, left nothing \
         (ports now {:?})",
        back.as_secs_f64(),
        a.ip,
        c.ip,
        left.iter().map(|(name, _)| name).collect::<Vec<_>>()
    );
    Ok(())
}
