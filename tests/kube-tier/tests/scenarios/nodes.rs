//! What only happens between nodes: the walkthrough's secondary network, br0 with each node's
//! `eth1` as its port, carrying pods' traffic from node01 to node02 over the secondary switch;
//! and the VLAN part on Open vSwitch (this kernel cannot filter bridge VLANs), where VLAN 100
//! reaches across the nodes and VLAN 200 does not reach it.
//!
//! The secondary networks reach the pods as users attach them: a NetworkAttachmentDefinition
//! and the pod's `k8s.v1.cni.cncf.io/networks` annotation, through Multus.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::{json, Value};

use kube_tier::daemon::wait_for;
use kube_tier::node::Node;

use crate::scenarios::multus::{
    attached_pod, attachment_config, delete_nads, nad, pings, static_ipam, wait_multus, with_ips,
    NET1,
};
use crate::scenarios::nmstate::{
    apply_and_wait_available, delete_policy, deploy_handler, policy, wait_available, BR0_ABSENT,
    WALKTHROUGH_POLICY,
};
use crate::scenarios::operator::{reset, LINUX_BRIDGE_DS, OVS_DS, OWN_SPEC};
use crate::scenarios::pods::delete_pod;
use crate::{check, Ctx};

/// The packets `eth1` sent (`tx`) or received (`rx`) on the node.
fn eth1_packets(node: &Node, direction: &str) -> Result<u64> {
    let text = node.sh(&format!(
        "cat /sys/class/net/eth1/statistics/{direction}_packets"
    ))?;
    text.trim().parse().context("eth1's packet counter")
}

/// Deletes the pods and waits until they are gone and each node holds nothing of them on the
/// secondary network:
/// no port left on `bridge_ports`' bridge, no tuning state of `net1` (the pods asked for MACs,
/// so tuning kept one for each). Their addresses came from the annotation (`static`): there is
/// no lease to count.
fn delete_and_wait_clean(
    ctx: &Ctx,
    pods: &[&str],
    ports: &dyn Fn(&Node) -> Result<usize>,
) -> Result<()> {
    for pod in pods {
        delete_pod(ctx, pod)?;
    }
    let started = Instant::now();
    wait_for(
        "the pods to be gone and every node to hold nothing of them",
        Duration::from_secs(120),
        || {
            // The pod objects gone too: the NetworkAttachmentDefinition deleted next is what
            // Multus reads for the DEL of a pod still terminating.
            for pod in pods {
                let left = ctx.kubectl(&[
                    "get",
                    "pod",
                    "-n",
                    "default",
                    pod,
                    "--ignore-not-found",
                    "-o",
                    "name",
                ])?;
                if !left.trim().is_empty() {
                    return Ok(None);
                }
            }
            for node in ctx.cluster.nodes() {
                let states = std::fs::read_dir(node.host_path("/run/cni/tuning"))
                    .map(|d| {
                        d.flatten()
                            .filter(|e| {
                                e.file_name()
                                    .to_string_lossy()
                                    .ends_with(&format!("_{NET1}.json"))
                            })
                            .count()
                    })
                    .unwrap_or(0);
                if states + ports(node)? > 0 {
                    return Ok(None);
                }
            }
            Ok(Some(()))
        },
    )?;
    println!(
        "    pods deleted: both nodes clean (ports, tuning state) {:.1}s later",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Each Node's `key` capacity, by node name.
fn capacities(ctx: &Ctx, key: &str) -> Result<BTreeMap<String, Option<String>>> {
    ctx.cluster
        .nodes()
        .iter()
        .map(|n| {
            let node = ctx.get(&["get", "node", n.name()])?;
            let cap = node["status"]["capacity"][key].as_str().map(str::to_string);
            Ok((n.name().to_string(), cap))
        })
        .collect()
}

/// The walkthrough across two nodes, from its first step: `nmstate: {}` deploys the handler,
/// the walkthrough's policy (as written there, `v1alpha1` and `description` included) makes br0
/// with `eth1` as its port on every node, and the walkthrough's commands print what it shows;
/// every Node's capacity then shows br0, and pods pinned to node01 and node02 that ask for the
/// walkthrough's NetworkAttachmentDefinition get `net1` on br0 through Multus, from our bridge
/// and tuning, and reach each other across the nodes, through both nodes' `eth1`. Deleting them leaves nothing on either node; a policy with br0 `absent` gives every
/// node's `eth1` back and withdraws the capacity.
pub fn the_walkthrough_crosses_the_nodes_over_br0(ctx: &mut Ctx) -> Result<()> {
    deploy_handler(ctx)?;
    wait_multus(ctx)?;
    let nodes = ctx.cluster.nodes();
    check(nodes.len() >= 2, || {
        format!(
            "the walkthrough needs two nodes; the tier has {}",
            nodes.len()
        )
    })?;
    let key = "bridge.network.kubevirt.io/br0";
    let applied = Instant::now();
    println!(
        "    $ kubectl apply -f br0-eth1.yaml\n    {}",
        ctx.apply(WALKTHROUGH_POLICY)?.trim()
    );
    let waited = wait_available(ctx, "br0-eth1")?;
    println!(
        "    $ kubectl wait nncp br0-eth1 --for condition=Available --timeout 2m\n    {} ({:.2}s after the apply)",
        waited.trim(),
        applied.elapsed().as_secs_f64()
    );
    let nncp = ctx.kubectl(&["get", "nncp"])?;
    println!("    $ kubectl get nncp\n{}", indent(&nncp));
    check(
        nncp.lines().any(|l| {
            l.split_whitespace().collect::<Vec<_>>() == ["br0-eth1", "SuccessfullyConfigured"]
        }),
        || format!("kubectl get nncp:\n{nncp}"),
    )?;
    let nnce = ctx.kubectl(&["get", "nnce"])?;
    println!("    $ kubectl get nnce\n{}", indent(&nnce));
    for node in nodes {
        let row = [
            format!("{}.br0-eth1", node.name()),
            "SuccessfullyConfigured".to_string(),
        ];
        check(
            nnce.lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>() == row),
            || format!("no row {row:?} in kubectl get nnce:\n{nnce}"),
        )?;
    }
    let jsonpath = r#"jsonpath={.status.currentState.interfaces[?(@.name=="br0")].state}"#;
    let state = ctx.kubectl(&["get", "nns", nodes[0].name(), "-o", jsonpath])?;
    println!(
        "    $ kubectl get nns {} -o jsonpath='{{.status.currentState.interfaces[?(@.name==\"br0\")].state}}'\n    {state}",
        nodes[0].name()
    );
    check(state.trim() == "up", || {
        format!("br0's state in the NodeNetworkState: {state:?}")
    })?;
    let caps = wait_for(
        "br0 in every Node's capacity",
        Duration::from_secs(30),
        || {
            let caps = capacities(ctx, key)?;
            Ok(caps.values().all(Option::is_some).then_some(caps))
        },
    )?;
    println!(
        "    br0 (with eth1) on {} nodes: in every Node's capacity {:.2}s after the apply: {caps:?}",
        nodes.len(),
        applied.elapsed().as_secs_f64()
    );
    let result = pods_cross_over_br0(ctx);
    delete_nads(ctx, &[BR0_NAD])?;
    let gone = Instant::now();
    apply_and_wait_available(ctx, "br0-eth1", &policy("br0-eth1", None, BR0_ABSENT, ""))?;
    result?;
    for node in ctx.cluster.nodes() {
        let eth1 = node.sh("ip -o link show eth1")?;
        check(!eth1.contains(" master "), || {
            format!("{}: eth1 still a port: {eth1}", node.name())
        })?;
    }
    wait_for(
        "br0 gone from every Node's capacity",
        Duration::from_secs(30),
        || {
            Ok(capacities(ctx, key)?
                .values()
                .all(Option::is_none)
                .then_some(()))
        },
    )?;
    println!(
        "    br0 absent: eth1 back on every node and br0 withdrawn from every Node's capacity {:.2}s later",
        gone.elapsed().as_secs_f64()
    );
    delete_policy(ctx, "br0-eth1")
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}\n"))
        .collect::<String>()
        .trim_end()
        .to_string()
}

/// Pod `pod` on `node` asking for `nad` with the address `ip` and the MAC `mac` (what Multus
/// hands our plugins as `runtimeConfig`); its `net1` address, once the pod shows that MAC.
fn attach(ctx: &Ctx, pod: &str, node: &Node, nad: &str, ip: &str, mac: &str) -> Result<String> {
    let networks = json!([{"name": nad, "ips": [ip], "mac": mac}]);
    let at = attached_pod(ctx, pod, node.name(), &networks)?;
    check(at.mac == mac, || {
        format!("{pod} asked for {mac} and its net1 has {}", at.mac)
    })?;
    Ok(at.ip)
}

/// The walkthrough's NetworkAttachmentDefinition for br0, addressed by the pods' annotations.
const BR0_NAD: &str = "bridge-network";

fn pods_cross_over_br0(ctx: &Ctx) -> Result<()> {
    let network = "br0-l2";
    let bridge = with_ips(json!({"type": "bridge", "bridge": "br0"}));
    ctx.apply(&nad(
        BR0_NAD,
        &attachment_config(network, bridge, static_ipam()),
    ))?;
    let (n1, n2) = (ctx.cluster.node(0), ctx.cluster.node(1));
    let a = attach(
        ctx,
        "xnode-a",
        n1,
        BR0_NAD,
        "192.168.100.11/24",
        "02:00:00:64:00:0b",
    )?;
    let b = attach(
        ctx,
        "xnode-b",
        n2,
        BR0_NAD,
        "192.168.100.21/24",
        "02:00:00:64:00:15",
    )?;
    let before = (eth1_packets(n1, "tx")?, eth1_packets(n2, "rx")?);
    let reached = pings(ctx, "default", "xnode-a", &b) && pings(ctx, "default", "xnode-b", &a);
    let after = (eth1_packets(n1, "tx")?, eth1_packets(n2, "rx")?);
    check(reached, || {
        format!(
            "xnode-a ({a}, {}) and xnode-b ({b}, {}) do not reach each other over br0",
            n1.name(),
            n2.name()
        )
    })?;
    check(after.0 >= before.0 + 2 && after.1 >= before.1 + 2, || {
        format!("the pings did not cross the nodes' eth1: tx {before:?} -> {after:?}")
    })?;
    println!(
        "    xnode-a on {} (net1 {a}) and xnode-b on {} (net1 {b}) ping each other over br0: \
         {}'s eth1 sent {} packets, {}'s received {}",
        n1.name(),
        n2.name(),
        n1.name(),
        after.0 - before.0,
        n2.name(),
        after.1 - before.1
    );
    delete_and_wait_clean(ctx, &["xnode-a", "xnode-b"], &|node| {
        Ok(node
            .bridge_ports("br0")?
            .iter()
            .filter(|(name, _)| name != "eth1")
            .count())
    })
}

/// The walkthrough's VLAN part on Open vSwitch: every node's OVS bridge `br1` with `eth1` as a
/// trunk port, a NetworkAttachmentDefinition of our `ovs` plugin with `vlan: 100` for pods on
/// node01 and node02, which reach each other across the nodes, and one with `vlan: 200` for a
/// third pod on node02, which reaches neither.
pub fn ovs_vlan_100_crosses_the_nodes_and_vlan_200_is_cut_off(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    reset(ctx)?;
    ctx.apply_nac(&format!("multus: {{}}\n{OWN_SPEC}"))?;
    ctx.wait_rollout("daemonset", OVS_DS)?;
    wait_multus(ctx)?;
    check(ctx.cluster.nodes().len() >= 2, || {
        "the VLAN part needs two nodes".into()
    })?;
    for i in 0..ctx.cluster.nodes().len() {
        ctx.cluster.ovs(i).add_br("br1")?;
        ctx.cluster.ovs(i).add_port("br1", "eth1")?;
    }
    let result = vlans_across_ovs(ctx);
    delete_nads(ctx, &[VLAN100_NAD, VLAN200_NAD])?;
    for i in 0..ctx.cluster.nodes().len() {
        ctx.cluster.ovs(i).del_br("br1")?;
    }
    result
}

const VLAN100_NAD: &str = "ovs-vlan100";
const VLAN200_NAD: &str = "ovs-vlan200";

fn vlans_across_ovs(ctx: &Ctx) -> Result<()> {
    let network = "ovs-vlan";
    for (name, vlan) in [(VLAN100_NAD, 100), (VLAN200_NAD, 200)] {
        let ovs = with_ips(json!({"type": "ovs", "bridge": "br1", "vlan": vlan}));
        ctx.apply(&nad(name, &attachment_config(network, ovs, static_ipam())))?;
    }
    let (n1, n2) = (ctx.cluster.node(0), ctx.cluster.node(1));
    let mut ips = Vec::new();
    for (pod, node, nad, ip, mac) in [
        (
            "vlan100-a",
            n1,
            VLAN100_NAD,
            "192.168.200.11/24",
            "02:00:00:c8:00:0b",
        ),
        (
            "vlan100-b",
            n2,
            VLAN100_NAD,
            "192.168.200.21/24",
            "02:00:00:c8:00:15",
        ),
        (
            "vlan200-c",
            n2,
            VLAN200_NAD,
            "192.168.200.22/24",
            "02:00:00:c8:00:16",
        ),
    ] {
        ips.push(attach(ctx, pod, node, nad, ip, mac)?);
    }
    let [a, b, c] = [&ips[0], &ips[1], &ips[2]];
    let tags = ctx.cluster.ovs(1).port_tags()?;
    check(
        tags.values().filter(|t| **t == 100).count() == 1
            && tags.values().filter(|t| **t == 200).count() == 1,
        || format!("{}'s OVS ports and their tags: {tags:?}", n2.name()),
    )?;
    let same_vlan = pings(ctx, "default", "vlan100-a", b) && pings(ctx, "default", "vlan100-b", a);
    check(same_vlan, || {
        format!("vlan100-a ({a}) and vlan100-b ({b}) do not reach each other on VLAN 100")
    })?;
    let cut_off = !pings(ctx, "default", "vlan200-c", a) && !pings(ctx, "default", "vlan200-c", b);
    check(cut_off, || {
        format!("vlan200-c ({c}) on VLAN 200 reaches a pod on VLAN 100")
    })?;
    println!(
        "    VLAN 100: vlan100-a on {} ({a}) <-> vlan100-b on {} ({b}) reach each other; \
         VLAN 200: vlan200-c on {} ({c}) reaches neither; {}'s OVS port tags {tags:?}",
        n1.name(),
        n2.name(),
        n2.name(),
        n2.name()
    );
    delete_and_wait_clean(ctx, &["vlan100-a", "vlan100-b", "vlan200-c"], &|node| {
        let i = ctx
            .cluster
            .nodes()
            .iter()
            .position(|n| n.name() == node.name())
            .unwrap_or_default();
        Ok(ctx.cluster.ovs(i).port_tags()?.len())
    })
}

/// The progress timeout the node-loss scenario gives the operator: a rollout that makes no
/// progress for this long would be Degraded, so staying Progressing past it is the proof.
const SHORT_PROGRESS_TIMEOUT: Duration = Duration::from_secs(20);

fn set_progress_timeout(ctx: &Ctx, value: &str) -> Result<()> {
    ctx.kubectl(&[
        "set",
        "env",
        &format!("deployment/{}", crate::OPERATOR),
        "-n",
        crate::NAMESPACE,
        &format!("PROGRESS_TIMEOUT={value}"),
    ])?;
    ctx.wait_rollout("deployment", crate::OPERATOR)
}

/// The node agents on every node, tainted ones included, as clusters that run them everywhere
/// place them. (Without a toleration of the `unreachable` taint, Kubernetes drops a lost node
/// from a DaemonSet's desired pods and nothing waits for it.)
const EVERY_NODE_SPEC: &str =
    "linuxBridge: {}\novs: {}\nplacementConfiguration:\n  workloads:\n    \
                               tolerations:\n    - operator: Exists\n";

/// The last node goes away (its kubelet and containerd stopped, as when a node is powered off):
/// the NetworkAddonsConfig says which node each node agent waits for and stays Progressing, not
/// Degraded, well past the progress timeout; when the node returns, Available again.
pub fn a_lost_node_keeps_the_config_progressing_not_degraded(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    check(ctx.cluster.nodes().len() >= 2, || {
        "node loss needs two nodes".into()
    })?;
    let preparing = Instant::now();
    set_progress_timeout(ctx, &format!("{}s", SHORT_PROGRESS_TIMEOUT.as_secs()))?;
    ctx.apply_nac(EVERY_NODE_SPEC)?;
    // Available for this spec (the status's generation), not the Available of the one before:
    // a node lost while the DaemonSets still roll out makes the config wait for other reasons.
    ctx.wait_nac("Available", "True", Duration::from_secs(240))?;
    println!(
        "    the short progress timeout and the placement on every node: Available in {:.1}s",
        preparing.elapsed().as_secs_f64()
    );
    let last = ctx.cluster.nodes().len() - 1;
    let name = ctx.cluster.node(last).name().to_string();
    let result = lose_node(ctx, last, &name);
    let back = ctx
        .cluster
        .start_again(last, "containerd")
        .and_then(|()| ctx.cluster.start_again(last, "kubelet"));
    let returned = Instant::now();
    result?;
    back?;
    ctx.kubectl(&[
        "wait",
        "node",
        &name,
        "--for=condition=Ready",
        "--timeout=120s",
    ])?;
    ctx.kubectl_wait("Available", "240s")?;
    println!(
        "    {name} back: Ready, and the config Available {:.1}s after its kubelet restarted",
        returned.elapsed().as_secs_f64()
    );
    let restoring = Instant::now();
    set_progress_timeout(ctx, "10m")?;
    let mut steps = vec![format!(
        "the operator {:.1}s",
        restoring.elapsed().as_secs_f64()
    )];
    // The next scenarios start from the default placement, rolled out: `rollout status` alone
    // could see the DaemonSets before the operator has re-rendered them.
    ctx.apply_nac(OWN_SPEC)?;
    for ds in [LINUX_BRIDGE_DS, OVS_DS] {
        ctx.wait_toleration(ds, &json!({"operator": "Exists"}), false)?;
        ctx.wait_rollout("daemonset", ds)?;
        steps.push(format!("{ds} at {:.1}s", restoring.elapsed().as_secs_f64()));
    }
    println!(
        "    the default placement and progress timeout rolled out in {:.1}s ({})",
        restoring.elapsed().as_secs_f64(),
        steps.join(", ")
    );
    Ok(())
}

fn lose_node(ctx: &mut Ctx, index: usize, name: &str) -> Result<()> {
    ctx.cluster.crash(index, "kubelet")?;
    ctx.cluster.crash(index, "containerd")?;
    let lost = Instant::now();
    let waiting = format!("waiting for node {name}");
    let progressing = |nac: &Value| -> Option<String> {
        crate::nac_condition(nac, "Progressing")
            .filter(|c| c["status"] == "True")
            .and_then(|c| c["message"].as_str().map(str::to_string))
    };
    let message = wait_for(
        &format!("the config to say its agents wait for {name}"),
        Duration::from_secs(120),
        || Ok(progressing(&ctx.nac()?).filter(|m| m.contains(&waiting))),
    )?;
    let said = lost.elapsed();
    // Sampled until twice the progress timeout has passed since the message: never Degraded,
    // always saying why.
    let until = Instant::now() + SHORT_PROGRESS_TIMEOUT * 2;
    while Instant::now() < until {
        let nac = ctx.nac()?;
        let degraded = crate::nac_condition(&nac, "Degraded");
        check(
            degraded.as_ref().is_some_and(|c| c["status"] != "True"),
            || format!("Degraded while {name} is away: {degraded:?}"),
        )?;
        check(
            progressing(&nac).is_some_and(|m| m.contains(&waiting)),
            || format!("the config no longer says it waits for {name}: {nac}"),
        )?;
        std::thread::sleep(Duration::from_secs(2));
    }
    println!(
        "    {name} stopped; {:.1}s later the config said (Progressing, not Degraded, still so \
         {:.0}s later with PROGRESS_TIMEOUT={}s):\n      {}",
        said.as_secs_f64(),
        lost.elapsed().as_secs_f64(),
        SHORT_PROGRESS_TIMEOUT.as_secs(),
        message.replace('\n', "\n      ")
    );
    Ok(())
}
