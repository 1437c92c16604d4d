//! `maxUnavailable`: a policy rolled out node by node, and a failure on one node aborting the
//! rest.

use super::*;

/// `maxUnavailable: 1` on every node: the nodes enact the policy one after the other (the
/// waiting ones `Pending`), never two at once, and all end `Available`. The same policy with
/// `maxUnavailable: 100%` is printed beside it: there the nodes may configure together.
pub fn max_unavailable_one_applies_node_by_node(ctx: &mut Ctx) -> Result<()> {
    deploy_handler(ctx)?;
    let nodes = ctx.cluster.nodes().len();
    let in_turn = enact_watched(ctx, "in-turn", "maxUnavailable: 1")?;
    let together = enact_watched(ctx, "together", "maxUnavailable: 100%")?;
    for (limit, seen) in [("1", &in_turn), ("100%", &together)] {
        println!(
            "    maxUnavailable {limit} on {nodes} nodes: at most {} configuring at once; the enactments' conditions in the order the API server recorded them:",
            most_configuring(seen)
        );
        for (at, node, condition) in seen {
            println!("      {:>6.2}s  {node}: {condition}", at.as_secs_f64());
        }
    }
    // The watch must have seen every node's whole enactment, else "never two at once" would
    // hold of a watch that saw little.
    for (limit, seen) in [("1", &in_turn), ("100%", &together)] {
        for node in ctx.cluster.nodes() {
            let last = seen.iter().rev().find(|(_, n, _)| n == node.name());
            check(
                last.is_some_and(|(_, _, c)| c.starts_with("Available")),
                || {
                    format!(
                        "maxUnavailable {limit}: the watch did not see {} finish: {seen:?}",
                        node.name()
                    )
                },
            )?;
            check(
                seen.iter()
                    .any(|(_, n, c)| n == node.name() && c.starts_with("Progressing")),
                || {
                    format!(
                        "maxUnavailable {limit}: the watch did not see {} configure: {seen:?}",
                        node.name()
                    )
                },
            )?;
        }
    }
    check(most_configuring(&in_turn) == 1, || {
        format!("maxUnavailable 1: two nodes configured at once: {in_turn:?}")
    })
}

/// Applies a policy making the bridge `brturn` with `spec` on every node, watching its
/// enactments until each is Available; then removes the bridge and the policy. Returns every
/// condition change seen, in the API server's order: (time after the apply, node, `Type
/// Reason`).
fn enact_watched(ctx: &Ctx, name: &str, spec: &str) -> Result<Vec<(Duration, String, String)>> {
    let selector = format!("nmstate.io/policy={name}");
    // Right after the CRDs are made, kubectl's discovery may not know `nnce` yet, and a watch
    // would end at once: wait until it lists them.
    wait_for(
        "kubectl to list enactments",
        Duration::from_secs(60),
        || Ok(ctx.kubectl(&["get", "nnce"]).ok().map(drop)),
    )?;
    let mut watch = ctx.cluster.kubectl_spawn(&[
        "get",
        "nnce",
        "-l",
        &selector,
        "--watch",
        "--output-watch-events",
        "-o",
        "json",
    ])?;
    let stdout = watch.stdout.take().context("the watch's stdout")?;
    let started = Instant::now();
    let reader = std::thread::spawn(move || {
        let mut seen: Vec<(Duration, String, String)> = Vec::new();
        let mut last: std::collections::BTreeMap<String, String> = Default::default();
        for event in serde_json::Deserializer::from_reader(stdout).into_iter::<Value>() {
            let Ok(event) = event else { break };
            let object = &event["object"];
            let node = object["metadata"]["labels"]["nmstate.io/node"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let Some((kind, reason, _)) = true_condition(object) else {
                continue;
            };
            let condition = format!("{kind} {reason}");
            if last.get(&node) != Some(&condition) {
                last.insert(node.clone(), condition.clone());
                seen.push((started.elapsed(), node, condition));
            }
        }
        seen
    });
    // The watch lists first: give it that moment, so no early change is missed.
    std::thread::sleep(Duration::from_secs(2));
    let applied = Instant::now();
    let desired = "interfaces:\n- name: brturn\n  type: linux-bridge\n  state: up\n";
    let outcome = ctx
        .apply(&policy(name, None, desired, spec))
        .and_then(|_| wait_enacted_everywhere(ctx, name));
    // Our own kubectl, ended by its pid.
    let _ = watch.kill();
    let _ = watch.wait();
    let offset = applied - started;
    let seen = reader
        .join()
        .map_err(|_| anyhow::anyhow!("the watch reader panicked"))?
        .into_iter()
        .map(|(at, node, condition)| (at.saturating_sub(offset), node, condition))
        .collect();
    let absent = "interfaces:\n- name: brturn\n  type: linux-bridge\n  state: absent\n";
    apply_and_wait_available(ctx, name, &policy(name, None, absent, spec))?;
    delete_policy(ctx, name)?;
    outcome.map(|()| seen)
}

/// The most enactments `Progressing` at the same moment of a sequence of condition changes.
fn most_configuring(seen: &[(Duration, String, String)]) -> usize {
    let mut now: std::collections::BTreeMap<&str, bool> = Default::default();
    let mut most = 0;
    for (_, node, condition) in seen {
        now.insert(node, condition.starts_with("Progressing"));
        most = most.max(now.values().filter(|p| **p).count());
    }
    most
}

/// `maxUnavailable: 1` and a policy that fails: the first node to try it fails, and the
/// other is aborted without trying.
pub fn a_policy_failing_on_one_node_aborts_the_rest(ctx: &mut Ctx) -> Result<()> {
    deploy_handler(ctx)?;
    let name = "fails-everywhere";
    let desired = "interfaces:\n- name: br8\n  type: linux-bridge\n  state: up\n  bridge:\n    port:\n    - name: nosuchnic\n";
    ctx.apply(&policy(name, None, desired, "maxUnavailable: 1"))?;
    let mut kinds = Vec::new();
    for node in ctx.cluster.nodes() {
        let (kind, reason, message) =
            wait_enacted(ctx, node.name(), name, Duration::from_secs(90))?;
        println!("    {}.{name}: {kind} {reason}: {message}", node.name());
        kinds.push(kind);
    }
    kinds.sort();
    let expected: Vec<String> = std::iter::repeat_n("Aborted".to_string(), kinds.len() - 1)
        .chain(["Failing".to_string()])
        .collect();
    check(kinds == expected, || {
        format!("enactments: {kinds:?}, expected {expected:?}")
    })?;
    let nncp = ctx.get(&["get", "nncp", name])?;
    check(
        true_condition(&nncp).is_some_and(|(t, r, _)| t == "Degraded" && r == "FailedToConfigure"),
        || format!("policy: {:?}", true_condition(&nncp)),
    )?;
    delete_policy(ctx, name)
}
