//! What a node must survive: a policy it cannot apply leaves it untouched and says why, a
//! policy that cuts it off the API server is rolled back, a handler killed mid-apply leaves it
//! as before, and a node whose network was wiped gets its policies back.

use super::*;

/// A policy naming a port that does not exist, and one asking for a kind this kernel lacks:
/// each is refused on every node before anything changes, and the enactment names the
/// interface and why.
pub fn what_the_node_cannot_apply_leaves_it_untouched(ctx: &mut Ctx) -> Result<()> {
    deploy_handler(ctx)?;
    let cases = [
        (
            "missing-port",
            "interfaces:\n- name: br9\n  type: linux-bridge\n  state: up\n  bridge:\n    port:\n    - name: nosuchnic\n",
            "nosuchnic",
        ),
        (
            "vlan-on-eth1",
            "interfaces:\n- name: eth1.100\n  type: vlan\n  state: up\n  vlan:\n    base-iface: eth1\n    id: 100\n",
            "eth1.100",
        ),
        (
            "unknown-field",
            "interfaces:\n- name: br9\n  type: linux-bridge\n  state: up\n  bridge:\n    options:\n      no-such-option: 1\n",
            "no-such-option",
        ),
    ];
    for (name, desired, named) in cases {
        let before: Vec<Vec<String>> = ctx
            .cluster
            .nodes()
            .iter()
            .map(links_of)
            .collect::<Result<_>>()?;
        ctx.apply(&policy(name, None, desired, ""))?;
        for node in ctx.cluster.nodes() {
            let (kind, reason, message) =
                wait_enacted(ctx, node.name(), name, Duration::from_secs(60))?;
            check(kind == "Failing" || kind == "Aborted", || {
                format!("{}.{name}: {kind} {reason}: {message}", node.name())
            })?;
            if kind == "Failing" {
                check(
                    reason == "FailedToConfigure" && message.contains(named),
                    || {
                        format!(
                            "{}.{name}: {reason}: {message:?} does not name {named}",
                            node.name()
                        )
                    },
                )?;
            }
            println!("    {}.{name}: {kind} {reason}: {message}", node.name());
        }
        let after: Vec<Vec<String>> = ctx
            .cluster
            .nodes()
            .iter()
            .map(links_of)
            .collect::<Result<_>>()?;
        check(before == after, || {
            format!("{name} changed a node: {before:#?} -> {after:#?}")
        })?;
        let nncp = ctx.get(&["get", "nncp", name])?;
        println!("    nncp {name}: {:?}", true_condition(&nncp));
        delete_policy(ctx, name)?;
    }
    Ok(())
}

/// A policy that moves node02's `eth0` (its only way to the API server) into a new bridge
/// without its address: the API server probe fails, the change is rolled back within the
/// probe timeout, the node is as before, and the enactment names the probe.
pub fn a_policy_cutting_the_node_off_is_rolled_back(ctx: &mut Ctx) -> Result<()> {
    deploy_handler(ctx)?;
    let node = ctx.cluster.nodes().last().context("no node")?;
    let name = "cut-off";
    let before = links_of(node)?;
    let applied = Instant::now();
    ctx.apply(&policy(name, Some(node.name()), CUT_OFF, ""))?;
    let (kind, reason, message) = wait_enacted(ctx, node.name(), name, PROBE_TIMEOUT * 6)?;
    let took = applied.elapsed();
    // Either probe may see the cut first: the gateway is behind eth0 too.
    let named =
        message.contains("probe api-server failed") || message.contains("probe gateway failed");
    check(
        kind == "Failing" && named && message.contains("rolled back"),
        || format!("{kind} {reason}: {message}"),
    )?;
    wait_as_before(node, &before, "the node rolled back")?;
    println!(
        "    {}: {kind} {reason} {:.1}s after the apply: {message}",
        node.name(),
        took.as_secs_f64()
    );
    delete_policy(ctx, name)
}

/// `eth0` into a bridge of its own, its address staying behind on a port that no longer
/// receives for it.
const CUT_OFF: &str = "interfaces:\n- name: brcut\n  type: linux-bridge\n  state: up\n  bridge:\n    options:\n      stp:\n        enabled: false\n    port:\n    - name: eth0\n";

/// The handler's process on `node`, killed: SIGKILL, as an OOM kill or a node crash does.
fn kill_handler(node: &Node) -> Result<()> {
    let handler = handler_pids(node)?;
    check(!handler.is_empty(), || {
        format!("no handler process on {}", node.name())
    })?;
    for pid in handler {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        )?;
    }
    Ok(())
}

/// The handler killed while the node is cut off and its probes wait: the next handler finds
/// the journal, puts the node back, applies again and rolls back again. Never between.
pub fn a_handler_killed_mid_apply_leaves_the_node_as_before(ctx: &mut Ctx) -> Result<()> {
    deploy_handler(ctx)?;
    let node = ctx.cluster.nodes().last().context("no node")?;
    let name = "cut-off-killed";
    let before = links_of(node)?;
    ctx.apply(&policy(name, Some(node.name()), CUT_OFF, ""))?;
    // Mid-apply: the bridge is there and the probes are waiting for the API server.
    wait_for("brcut to hold eth0", PROBE_TIMEOUT, || {
        Ok(node
            .sh("ip -o link show eth0")?
            .contains("master brcut")
            .then_some(()))
    })?;
    kill_handler(node)?;
    let killed = Instant::now();
    println!("    {}: handler killed with eth0 in brcut", node.name());
    let (kind, reason, message) = wait_enacted(ctx, node.name(), name, PROBE_TIMEOUT * 10)?;
    wait_as_before(node, &before, "the node as before the kill")?;
    check(kind == "Failing", || format!("{kind} {reason}: {message}"))?;
    println!(
        "    {}: as before {:.1}s after the kill; the enactment says {kind} {reason}: {message}",
        node.name(),
        killed.elapsed().as_secs_f64()
    );
    delete_policy(ctx, name)
}

/// A node whose network the kernel forgot (a reboot): the restarted handler applies the
/// policies enacted on it before it reports ready.
pub fn a_rebooted_node_gets_its_policies_back(ctx: &mut Ctx) -> Result<()> {
    deploy_handler(ctx)?;
    let last = ctx.cluster.nodes().len() - 1;
    let name = ctx.cluster.node(last).name().to_string();
    ctx.apply(&policy("br0-eth1", None, WALKTHROUGH_DESIRED, ""))?;
    wait_available(ctx, "br0-eth1")?;
    ctx.cluster.reboot(last)?;
    let rebooted = Instant::now();
    let node = ctx.cluster.node(last);
    let result = wait_for(
        "br0 with eth1 back on the rebooted node",
        Duration::from_secs(180),
        || {
            Ok(node
                .sh("ip -o link show eth1")
                .is_ok_and(|l| l.contains("master br0"))
                .then_some(()))
        },
    );
    if result.is_ok() {
        println!(
            "    {name} rebooted: br0 with eth1 back {:.1}s after it was Ready",
            rebooted.elapsed().as_secs_f64()
        );
    }
    apply_and_wait_available(ctx, "br0-eth1", &policy("br0-eth1", None, BR0_ABSENT, ""))?;
    delete_policy(ctx, "br0-eth1")?;
    result
}
