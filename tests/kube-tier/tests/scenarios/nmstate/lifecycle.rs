//! The handler over time: an idle cluster writes nothing, removing `nmstate` keeps the CRDs
//! and the policies, and the walkthrough's policy is available in seconds.

use kube_tier::cluster::condition_status;

use super::*;

/// An idle cluster writes nothing but the operator's Lease renewals: the operator writes no
/// object and no status, not even after a change of leader (the new leader finds in the
/// applied record that the last one completed this very render), and an idle
/// node's state is never written again (the handler reads it every minute and on link
/// notifications, and writes only a change). A link added shows in the node's state within
/// seconds.
pub fn an_idle_cluster_writes_nothing(ctx: &mut Ctx) -> Result<()> {
    deploy_handler(ctx)?;
    ctx.apply_nac(SETTLED_SPEC)?;
    ctx.wait_nac("Available", "True", Duration::from_secs(240))?;
    let node = ctx.node01();
    let version = |ctx: &Ctx| -> Result<String> {
        Ok(
            ctx.get(&["get", "nns", node.name()])?["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        )
    };
    // Settled: the operator has written what this spec asks for (the removed Multus' pods gone,
    // every handler Ready) and reports it.
    let quiet = wait_operator_quiet(ctx, Duration::from_secs(10))?;
    let nac = ctx.nac()?;
    check(
        condition_status(&nac, "Available").as_deref() == Some("True")
            && condition_status(&nac, "Progressing").as_deref() == Some("False"),
        || {
            format!(
                "the operator went quiet without reporting Available: {}",
                nac["status"]
            )
        },
    )?;
    // The operator's leader goes first: its pod's going and its successor's coming change the
    // links of the nodes they run on, which the node's state rightly shows. The operator's
    // writes are counted from before it went, so the new leader's first reconcile counts.
    let operator_mark = operator_writes(ctx)?.len();
    let (leader, transitions) = lease(ctx)?;
    check(!leader.is_empty(), || {
        "nobody holds the operator's Lease".into()
    })?;
    ctx.kubectl(&["delete", "pod", "-n", NAMESPACE, &leader, "--wait=false"])?;
    let changed_hands = Instant::now();
    wait_for("another replica to lead", Duration::from_secs(60), || {
        let (now, _) = lease(ctx)?;
        Ok((!now.is_empty() && now != leader).then_some(()))
    })?;
    ctx.wait_rollout("deployment", OPERATOR)?;
    let replaced = changed_hands.elapsed();
    // Settled again: nothing changes on the node from here.
    std::thread::sleep(Duration::from_secs(5));
    let first = version(ctx)?;
    // A minute and some: the handler reads the node every minute, so the window holds one read.
    let window = Duration::from_secs(65);
    let handler = *handler_pids(node)?
        .first()
        .context("no handler on node01")?;
    let ticks_before = cpu_ticks(handler)?;
    let started = Instant::now();
    let mut writes = 0;
    let mut last = first.clone();
    while started.elapsed() < window {
        std::thread::sleep(Duration::from_secs(5));
        let now = version(ctx)?;
        if now != last {
            writes += 1;
            last = now;
        }
    }
    let (operator_idle, idle_leases) = without_leases(&operator_writes(ctx)?[operator_mark..]);
    let (new_leader, transitions_after) = lease(ctx)?;
    println!(
        "    the operator quiet {:.1}s after the change; idle for {}s after its leader {leader} was \
         deleted and {new_leader} took over ({:.1}s to a new replica rolled out): {} writes \
         ({idle_leases} Lease writes besides){}",
        quiet.as_secs_f64(),
        window.as_secs(),
        replaced.as_secs_f64(),
        operator_idle.len(),
        operator_idle
            .iter()
            .map(|w| format!("\n      {w}"))
            .collect::<String>()
    );
    check(
        transitions_after == transitions + 1 && !new_leader.is_empty() && new_leader != leader,
        || {
            format!(
                "the Lease went from {leader} to {new_leader:?} in {} transitions",
                transitions_after - transitions
            )
        },
    )?;
    check(operator_idle.is_empty(), || {
        format!("the operator's writes while idle: {operator_idle:?}")
    })?;
    let ticks = cpu_ticks(handler)? - ticks_before;
    // USER_HZ is 100 on Linux.
    let cpu = ticks as f64 / 100.0 / started.elapsed().as_secs_f64() * 100.0;
    println!(
        "    {} idle for {}s (past a resync): {writes} state writes, {} per hour; the handler used {cpu:.2}% of a CPU",
        node.name(),
        window.as_secs(),
        writes * 3600 / window.as_secs()
    );
    check(writes == 0, || {
        format!("{writes} writes of an idle node's state")
    })?;
    node.sh("ip link add nnsprobe0 type bridge")?;
    let added = Instant::now();
    let seen = wait_for(
        "the new link in the node's state",
        Duration::from_secs(30),
        || {
            let nns = ctx.get(&["get", "nns", node.name()])?;
            let found = nns["status"]["currentState"]["interfaces"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|i| i["name"] == "nnsprobe0");
            Ok(found.then_some(()))
        },
    );
    node.sh("ip link del nnsprobe0")?;
    seen?;
    println!(
        "    a link added on {}: in its NodeNetworkState {:.2}s later",
        node.name(),
        added.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `nmstate` removed from the config: the handler goes, the CRDs and the users' policies stay,
/// and so does what the policies made on the nodes.
pub fn removing_nmstate_keeps_the_crds_and_the_policies(ctx: &mut Ctx) -> Result<()> {
    deploy_handler(ctx)?;
    let name = "kept-bridge";
    let desired = "interfaces:\n- name: kept0\n  type: linux-bridge\n  state: up\n";
    ctx.apply(&policy(name, None, desired, ""))?;
    wait_available(ctx, name)?;
    ctx.apply_nac("multus: {}\nlinuxBridge: {}\nimagePullPolicy: Always\n")?;
    let result = wait_for("the handler to go", Duration::from_secs(120), || {
        Ok((!ctx.exists("daemonset", HANDLER_DS, Some(NAMESPACE))?).then_some(()))
    })
    .and_then(|()| {
        for crd in NMSTATE_CRDS {
            check(ctx.exists("crd", crd, None)?, || format!("CRD {crd} removed"))?;
        }
        check(ctx.exists("nncp", name, None)?, || format!("policy {name} removed"))?;
        for node in ctx.cluster.nodes() {
            check(node.sh("ip -o link show kept0").is_ok(), || {
                format!("{}: kept0 removed", node.name())
            })?;
        }
        println!("    nmstate removed: the handler went; the CRDs, policy {name} and kept0 on every node stayed");
        Ok(())
    });
    for node in ctx.cluster.nodes() {
        let _ = node.sh("ip link del kept0");
    }
    delete_policy(ctx, name)?;
    let _ = ctx.kubectl(&["delete", "nnce", "-l", &format!("nmstate.io/policy={name}")]);
    result
}

/// How long the walkthrough's policy takes from `kubectl apply` to `Available` on every node,
/// ten times (each followed by br0 `absent` and the policy deleted): the median and the worst.
pub fn the_walkthroughs_policy_is_available_in_seconds(ctx: &mut Ctx) -> Result<()> {
    deploy_handler(ctx)?;
    let mut took = Vec::new();
    for _ in 0..10 {
        let applied = Instant::now();
        ctx.apply(WALKTHROUGH_POLICY)?;
        wait_available(ctx, "br0-eth1")?;
        took.push(applied.elapsed());
        apply_and_wait_available(ctx, "br0-eth1", &policy("br0-eth1", None, BR0_ABSENT, ""))?;
        delete_policy(ctx, "br0-eth1")?;
    }
    took.sort();
    println!(
        "    the walkthrough's policy, kubectl apply to Available on {} nodes, 10 times: median {:.2}s, worst {:.2}s ({took:.2?})",
        ctx.cluster.nodes().len(),
        took[took.len() / 2].as_secs_f64(),
        took[took.len() - 1].as_secs_f64()
    );
    Ok(())
}
