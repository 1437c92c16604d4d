//! The bridge walkthrough as a user runs it, every step through what the operator deploys:
//! kubernetes-nmstate's policy makes `br1` with `eth1` on both nodes, a NetworkAttachmentDefinition
//! of our bridge and tuning, KubeMacPool gives each pod a MAC from its range by rewriting the
//! annotation, Multus hands that MAC to tuning, and the pods reach each other across the nodes.
//!
//! The walkthrough's `"vlan": 100` on a Linux bridge needs a kernel that filters bridge traffic
//! by VLAN, which the tier's kernel (the machine's) does not: our bridge refuses such an ADD
//! with words that say so, and the scenario checks that it does. VLAN 100 crossing the nodes and
//! VLAN 200 cut off, through Multus, run on Open vSwitch (`scenarios::nodes`), and on a Linux
//! bridge under Debian's 6.1 kernel in `scripts/demo`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::json;

use kube_tier::daemon::wait_for;
use kube_tier::node::Node;

use crate::scenarios::kubemacpool::{
    in_range, manager_metrics, opted_in_namespace, SPEC as RANGE_SPEC,
};
use crate::scenarios::multus::{
    around, attached_pod_manifest_in, attachment_config, events_of, nad_in, pings, static_ipam,
    wait_attached_in, wait_multus, with_ips,
};
use crate::scenarios::nmstate::{
    apply_and_wait_available, delete_policy, deploy_handler, policy, WALKTHROUGH_SPEC,
};
use crate::scenarios::operator::reset;
use crate::{check, Ctx};

const NAMESPACE: &str = "walkthrough";
const POLICY: &str = "br1-eth1";
const NAD: &str = "br1-l2";
const BR1: &str = "interfaces:\n- name: br1\n  type: linux-bridge\n  state: up\n  bridge:\n    \
                   options:\n      stp:\n        enabled: false\n    port:\n    - name: eth1\n";
const BR1_ABSENT: &str = "interfaces:\n- name: br1\n  type: linux-bridge\n  state: absent\n";

/// One pod of the walkthrough: its name, node and address on `br1`.
struct Pod {
    name: &'static str,
    node: usize,
    ip: &'static str,
}

const PODS: [Pod; 2] = [
    Pod {
        name: "walk-a",
        node: 0,
        ip: "10.200.0.11/24",
    },
    Pod {
        name: "walk-b",
        node: 1,
        ip: "10.200.0.12/24",
    },
];

/// What a node holds of the walkthrough's pods: `br1`'s ports but `eth1`, tuning's states of
/// `net1`, and the network namespaces of sandboxes.
fn holds(node: &Node) -> Result<(usize, usize, usize)> {
    let ports = node
        .bridge_ports("br1")?
        .iter()
        .filter(|(name, _)| name != "eth1")
        .count();
    let states = std::fs::read_dir(node.host_path("/run/cni/tuning"))
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with("_net1.json"))
                .count()
        })
        .unwrap_or(0);
    let netns = std::fs::read_dir(node.host_path("/run/netns"))
        .map(|d| d.count())
        .unwrap_or(0);
    Ok((ports, states, netns))
}

/// The MACs every live KubeMacPool replica holds (`kubemacpool_macs_held`).
fn macs_held(ctx: &Ctx) -> Result<Vec<u64>> {
    manager_metrics(ctx)?
        .iter()
        .map(|(name, body)| {
            body.lines()
                .find_map(|l| l.strip_prefix("kubemacpool_macs_held "))
                .and_then(|v| v.trim().parse().ok())
                .with_context(|| format!("{name} has no kubemacpool_macs_held"))
        })
        .collect()
}

/// The walkthrough on both nodes: the policy, the NAD, pods with MACs from KubeMacPool's range
/// on `net1` (the annotation, `network-status`, the pod's link and the bridge's FDB all name the
/// MAC the pool gave), pinging each other across the nodes; a `vlan: 100` NAD refused for want
/// of the kernel's VLAN filtering; after deletion, nothing left on either node and no MAC held.
pub fn the_walkthrough_runs_through_multus_with_macs_from_the_pool(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    reset(ctx)?;
    ctx.apply_nac(&format!("{WALKTHROUGH_SPEC}{RANGE_SPEC}"))?;
    deploy_handler(ctx)?;
    wait_multus(ctx)?;
    ctx.kubectl_wait("KubeMacPoolAvailable", "180s")?;
    ctx.kubectl_wait("Available", "240s")?;
    check(ctx.cluster.nodes().len() >= 2, || {
        "the walkthrough needs two nodes".into()
    })?;
    // The pool's count is compared with what it was before: the pods of earlier scenarios
    // that are still terminating (a Multus DEL retried) would leave it while the walkthrough
    // runs.
    wait_for(
        "the pods of earlier scenarios to be gone",
        Duration::from_secs(180),
        || Ok(terminating_pods(ctx)?.is_empty().then_some(())),
    )
    .with_context(|| format!("still terminating: {:?}", terminating_pods(ctx).ok()))?;
    let started = Instant::now();
    println!("    1. the policy: br1 with eth1 on every node");
    apply_and_wait_available(ctx, POLICY, &policy(POLICY, None, BR1, ""))?;
    let result = walk_on_br1(ctx, started);
    // br1 goes whatever happened: the nmstate scenarios that follow need eth1 free.
    let withdrawn = apply_and_wait_available(ctx, POLICY, &policy(POLICY, None, BR1_ABSENT, ""))
        .and_then(|()| delete_policy(ctx, POLICY));
    result.and(withdrawn)?;
    ctx.kubectl(&["delete", "namespace", NAMESPACE, "--wait=false"])?;
    // The nmstate scenarios that follow run the walkthrough's own components.
    ctx.apply_nac(WALKTHROUGH_SPEC).map(drop)
}

/// Steps 2 to 5 on the policy's br1: the pods attached and pinging, then deleted, leaving
/// nothing on either node and no MAC of theirs in the pool.
fn walk_on_br1(ctx: &Ctx, started: Instant) -> Result<()> {
    let nodes_hold = || -> Result<Vec<_>> { ctx.cluster.nodes().iter().map(holds).collect() };
    let before = nodes_hold()?;
    let held_before = macs_held(ctx)?;
    let result = pods_on_br1(ctx);
    for pod in PODS.iter().map(|p| p.name).chain(["walk-vlan"]) {
        let _ = ctx.kubectl(&["delete", "pod", "-n", NAMESPACE, pod, "--wait=false"]);
    }
    result?;
    println!("    5. the pods deleted");
    let after = wait_for(
        "both nodes to hold nothing of the pods and the pool no MAC of theirs",
        Duration::from_secs(120),
        || {
            let now = nodes_hold()?;
            let held = macs_held(ctx)?;
            Ok((now == before && held == held_before).then_some((now, held)))
        },
    )
    .with_context(|| {
        let now = (nodes_hold().ok(), macs_held(ctx).ok());
        format!(
            "before: {before:?} (br1 ports, tuning states, netns), MACs held {held_before:?}; \
             now {now:?}"
        )
    })?;
    println!(
        "       both nodes hold what they held before (br1 ports, tuning states, netns: {:?}), \
         the pool holds {:?} MACs as before; the walkthrough took {:.1}s",
        after.0,
        after.1,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The pods, in any namespace, that are being deleted.
fn terminating_pods(ctx: &Ctx) -> Result<Vec<String>> {
    let pods = ctx.get(&["get", "pods", "-A"])?;
    Ok(pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| !p["metadata"]["deletionTimestamp"].is_null())
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
        .collect())
}

fn pods_on_br1(ctx: &Ctx) -> Result<()> {
    opted_in_namespace(ctx, NAMESPACE)?;
    let bridge = with_ips(json!({"type": "bridge", "bridge": "br1"}));
    ctx.apply(&nad_in(
        NAMESPACE,
        NAD,
        &attachment_config(NAD, bridge, static_ipam()),
    ))?;
    println!("    2. the NetworkAttachmentDefinition {NAD}: our bridge on br1, then tuning");
    let mut attached = BTreeMap::new();
    let mut rows = Vec::new();
    for pod in &PODS {
        let node = ctx.cluster.node(pod.node).name();
        let networks = json!([{"name": NAD, "ips": [pod.ip]}]);
        ctx.apply(&attached_pod_manifest_in(
            NAMESPACE, pod.name, node, &networks,
        ))?;
    }
    for pod in &PODS {
        let node = ctx.cluster.node(pod.node);
        let at = wait_attached_in(ctx, NAMESPACE, pod.name)?;
        let given = given_mac(ctx, pod.name)?;
        check(in_range(&given), || {
            format!("{}: KubeMacPool gave {given}, outside its range", pod.name)
        })?;
        check(at.mac == given, || {
            format!(
                "{}: net1 has {} but KubeMacPool gave {given}",
                pod.name, at.mac
            )
        })?;
        let fdb = node.sh("bridge fdb show br br1")?;
        check(fdb.contains(&given), || {
            format!(
                "{}: br1's FDB on {} has no {given}:\n{fdb}",
                pod.name,
                node.name()
            )
        })?;
        println!(
            "    3. {} on {}: KubeMacPool gave {given}; net1 has it ({}), and so do its \
             network-status and br1's FDB",
            pod.name,
            node.name(),
            at.ip
        );
        rows.push([
            pod.name.to_string(),
            node.name().to_string(),
            "none (br1, L2)".to_string(),
            given,
            at.ip.clone(),
        ]);
        attached.insert(pod.name, at);
    }
    let (a, b) = (&attached["walk-a"], &attached["walk-b"]);
    check(
        pings(ctx, NAMESPACE, "walk-a", &b.ip) && pings(ctx, NAMESPACE, "walk-b", &a.ip),
        || "walk-a and walk-b do not reach each other across the nodes".into(),
    )?;
    println!(
        "    4. walk-a ({}) and walk-b ({}) ping each other across the nodes",
        a.ip, b.ip
    );
    vlan_refused_for_want_of_filtering(ctx)?;
    println!("    | pod | node | VLAN | MAC from the pool | IP | reaches |");
    println!("    |---|---|---|---|---|---|");
    for (row, reaches) in rows.iter().zip(["walk-b", "walk-a"]) {
        println!("    | {} | {reaches} |", row.join(" | "));
    }
    let vlan_mac = given_mac(ctx, "walk-vlan")?;
    println!(
        "    | walk-vlan | {} | 100 | {vlan_mac} | - | nothing: not attached, this kernel cannot filter by VLAN |",
        ctx.cluster.node(0).name()
    );
    Ok(())
}

/// The MAC KubeMacPool wrote into pod `name`'s annotation.
fn given_mac(ctx: &Ctx, name: &str) -> Result<String> {
    let pod = ctx.get(&["get", "pod", name, "-n", NAMESPACE])?;
    let text = pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"]
        .as_str()
        .unwrap_or_default();
    let list: Vec<serde_json::Value> = serde_json::from_str(text)
        .with_context(|| format!("{name}'s networks annotation: {text}"))?;
    list.first()
        .and_then(|e| e["mac"].as_str())
        .map(str::to_string)
        .with_context(|| format!("KubeMacPool gave {name} no MAC: {text}"))
}

/// The walkthrough's `vlan: 100` NAD on br1: refused, the pod's event saying the kernel cannot
/// filter by VLAN.
fn vlan_refused_for_want_of_filtering(ctx: &Ctx) -> Result<()> {
    let vlan = json!({"type": "bridge", "bridge": "br1", "vlan": 100});
    ctx.apply(&nad_in(
        NAMESPACE,
        "br1-100-l2",
        &attachment_config("br1-100-l2", vlan, json!({})),
    ))?;
    let node = ctx.cluster.node(0).name();
    ctx.apply(&attached_pod_manifest_in(
        NAMESPACE,
        "walk-vlan",
        node,
        &json!([{"name": "br1-100-l2"}]),
    ))?;
    let words = "cannot filter bridge traffic by VLAN";
    let said = wait_for(
        "walk-vlan's event saying why VLAN 100 cannot be attached",
        Duration::from_secs(90),
        || {
            Ok(events_of(ctx, NAMESPACE, "walk-vlan")
                .lines()
                .find(|l| l.contains(words))
                .map(str::to_string))
        },
    )?;
    println!(
        "    VLAN 100 on br1: this kernel cannot filter by VLAN, and the pod says so:\n      {}",
        around(&said, words)
    );
    Ok(())
}
