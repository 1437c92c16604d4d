//! Collection after the runtime lost track: containerd killed mid-pod, and a sandbox deleted
//! behind its back; the node ends holding only what its live pods use.

use super::*;

/// What the node holds for the pod network: the leases of host-local's range (by address) and
/// the bridge's ports.
#[derive(Debug, PartialEq, Eq)]
struct NodeHolds {
    leases: BTreeSet<String>,
    ports: usize,
}

fn node_holds(ctx: &Ctx) -> Result<NodeHolds> {
    Ok(NodeHolds {
        leases: ctx.node01().leases(POD_NETWORK),
        ports: ports(ctx)?.len(),
    })
}

/// What node01 should hold: one lease and port per pod of its on the pod network.
fn live_pods_hold(ctx: &Ctx) -> Result<NodeHolds> {
    let pods = ctx.get(&["get", "pods", "-A"])?;
    let leases: BTreeSet<String> = pods["items"]
        .as_array()
        .context("pods")?
        .iter()
        .filter(|p| p["spec"]["hostNetwork"] != true)
        .filter(|p| p["spec"]["nodeName"] == ctx.node01().name())
        .filter_map(|p| p["status"]["podIP"].as_str().map(str::to_string))
        .collect();
    Ok(NodeHolds {
        ports: leases.len(),
        leases,
    })
}

/// containerd killed while a pod's ADD runs: the plugins finish, nobody reads their result, and
/// the restarted runtime makes the pod a new sandbox. Whatever the first ADD left, the agent
/// (which collects at once when the runtime's socket is made anew) leaves the node holding
/// exactly what its live pods use.
pub fn the_node_agents_collect_after_the_runtime_is_killed_mid_pod(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    ctx.apply_nac(OWN_SPEC)?;
    ctx.wait_rollout("daemonset", LINUX_BRIDGE_DS)?;
    let before = node_holds(ctx)?.leases;
    create_pod(ctx, "gc-crash")?;
    // host-local's lease is written during the ADD; containerd records the sandbox only after
    // the ADD and the sandbox's container are made. Killed in between, it never learns of it.
    let deadline = Instant::now() + Duration::from_secs(60);
    while ctx.node01().leases(POD_NETWORK) == before {
        anyhow::ensure!(
            Instant::now() < deadline,
            "gc-crash's ADD took no lease in 60 s"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    ctx.cluster.crash(0, "containerd")?;
    ctx.cluster.start_again(0, "containerd")?;
    let restarted = Instant::now();
    let left = node_holds(ctx)?;
    println!(
        "    containerd killed as gc-crash's ADD took a lease, and started again: the node holds \
         {} lease(s), {} port(s)",
        left.leases.len(),
        left.ports
    );
    let ip = wait_pod_ip(ctx, "gc-crash")?;
    let holds = node_holds(ctx)?;
    println!(
        "    gc-crash runs with {ip}; the node holds {} lease(s), {} port(s) for {} live pod(s)",
        holds.leases.len(),
        holds.ports,
        live_pods_hold(ctx)?.leases.len()
    );
    wait_for(
        "the node to hold only what its live pods use",
        Duration::from_secs(120),
        || {
            let (holds, live) = (node_holds(ctx)?, live_pods_hold(ctx)?);
            Ok((holds == live).then_some(()))
        },
    )
    .with_context(|| {
        format!(
            "holds {:?}, live pods {:?}",
            node_holds(ctx).ok(),
            live_pods_hold(ctx).ok()
        )
    })?;
    let clean = restarted.elapsed();
    let since = wait_for(
        "the agent to notice the runtime's restart",
        Duration::from_secs(60),
        || Ok(Some(since_the_restart(ctx)?).filter(|l| !l.is_empty())),
    )?;
    println!(
        "    clean {:.1}s after containerd came back; the agent since:\n      {}",
        clean.as_secs_f64(),
        since.join("\n      ")
    );
    reaches_its_gateway(ctx, "gc-crash", "after the runtime's crash")?;
    delete_pod(ctx, "gc-crash")?;
    Ok(())
}

/// The agent's lines about the runtime's last restart and what it collected since.
pub(super) fn since_the_restart(ctx: &Ctx) -> Result<Vec<String>> {
    let log = agent_log(ctx)?;
    let lines: Vec<&str> = log.lines().collect();
    let start = lines
        .iter()
        .rposition(|l| l.contains("restarted"))
        .unwrap_or(lines.len());
    Ok(lines[start..]
        .iter()
        .filter(|l| l.contains("restarted") || l.contains("collected"))
        .map(|l| l.to_string())
        .collect())
}

/// A pod's sandbox deleted behind the runtime's back (a cleanup script's `ctr`, a lost metadata store):
/// once the runtime restarts it knows nothing of it, the kubelet makes the pod a new one, and no
/// DEL ever comes for the old attachment. The agent, collecting at once after the restart,
/// removes its port and lease; the pod's new attachment stays.
pub fn the_node_agents_collect_a_sandbox_deleted_behind_the_runtime(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    ctx.apply_nac(OWN_SPEC)?;
    ctx.wait_rollout("daemonset", LINUX_BRIDGE_DS)?;
    create_pod(ctx, "gc-behind")?;
    let old_ip = wait_pod_ip(ctx, "gc-behind")?;
    let old_ports = ports(ctx)?;
    let sandbox = lose_the_sandbox(ctx, "gc-behind")?;
    let old_lease = leases_dir(ctx).join(&old_ip);
    check(exists(&old_lease), || {
        "the deleted sandbox's lease is gone before any collection".into()
    })?;
    let restarted = restart_the_runtime(ctx)?;
    wait_for(
        "the deleted sandbox's lease to be collected",
        Duration::from_secs(120),
        || {
            ctx.cluster.check_daemons()?;
            Ok((!exists(&old_lease)).then_some(()))
        },
    )?;
    let took = restarted.elapsed();
    let since = since_the_restart(ctx)?;
    println!(
        "    sandbox {} of gc-behind ({old_ip}) deleted behind the runtime; containerd restarted; \
         collected {:.1}s later:\n      {}",
        &sandbox[..12],
        took.as_secs_f64(),
        since.join("\n      ")
    );
    check(since.iter().any(|l| l.contains("collected port")), || {
        "the agent did not say it collected the old port".into()
    })?;
    let new_ip = wait_pod_ip(ctx, "gc-behind")?;
    let now_ports = ports(ctx)?;
    check(now_ports.len() <= old_ports.len(), || {
        format!("ports before: {old_ports:?}, after: {now_ports:?}")
    })?;
    reaches_its_gateway(
        ctx,
        "gc-behind",
        &format!("with its new sandbox ({new_ip})"),
    )?;
    delete_pod(ctx, "gc-behind")?;
    // The next scenarios start from a Ready node whose agents run.
    ctx.kubectl(&[
        "wait",
        "node",
        ctx.node01().name(),
        "--for=condition=Ready",
        "--timeout=120s",
    ])?;
    ctx.wait_rollout("daemonset", LINUX_BRIDGE_DS)
}
