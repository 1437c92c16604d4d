//! kubernetes-nmstate's API served by our handler (`nmstate: {}`): the walkthrough's policy on
//! every node (in nodes.rs, where its pods then cross the nodes over br0), and here what the
//! node must survive: a policy the node cannot apply leaves it untouched and says why, a policy
//! that cuts the node off the API server is rolled back, a handler killed mid-apply leaves the
//! node as before or as desired, a node whose network was wiped gets its policies back,
//! `maxUnavailable` rolls a policy out node by node (and a failure aborts the rest), and an
//! idle node's state costs the API server no writes.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::{json, Value};

use kube_tier::daemon::wait_for;
use kube_tier::node::Node;

use crate::scenarios::control_loop::{lease, operator_writes, without_leases};
use crate::scenarios::operator::reset;
use crate::{check, Ctx, NAMESPACE, OPERATOR};

pub const HANDLER_DS: &str = "nmstate-handler";
/// The walkthrough's NetworkAddonsConfig.
pub const WALKTHROUGH_SPEC: &str =
    "multus: {}\nlinuxBridge: {}\nnmstate: {}\nimagePullPolicy: Always\n";
/// The walkthrough's components that run here: its multus image cannot be pulled on this
/// machine, which keeps a config with it Progressing, never settled.
const SETTLED_SPEC: &str = "linuxBridge: {}\nnmstate: {}\nimagePullPolicy: Always\n";
/// The probe timeout the scenarios give the handler (upstream's 120 s would make a rollback
/// take two minutes).
const PROBE_TIMEOUT: Duration = Duration::from_secs(15);

/// The walkthrough's policy, exactly as it is written there.
pub const WALKTHROUGH_POLICY: &str = "apiVersion: nmstate.io/v1alpha1
kind: NodeNetworkConfigurationPolicy
metadata:
  name: br0-eth1
spec:
  desiredState:
    interfaces:
    - name: br0
      description: Linux bridge with eth1 as a port
      type: linux-bridge
      state: up
      bridge:
        options:
          stp:
            enabled: false
        port:
        - name: eth1
";

/// The walkthrough's config with the handler's probe timeout shortened; waits for the
/// handler on every node.
pub fn deploy_handler(ctx: &Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    let timeout = format!("NMSTATE_PROBE_TIMEOUT={}s", PROBE_TIMEOUT.as_secs());
    let current = ctx.kubectl(&[
        "get", "deployment", OPERATOR, "-n", NAMESPACE, "-o",
        "jsonpath={.spec.template.spec.containers[0].env[?(@.name==\"NMSTATE_PROBE_TIMEOUT\")].value}",
    ])?;
    if current.trim() != format!("{}s", PROBE_TIMEOUT.as_secs()) {
        ctx.kubectl(&[
            "set",
            "env",
            &format!("deployment/{OPERATOR}"),
            "-n",
            NAMESPACE,
            &timeout,
        ])?;
        ctx.wait_rollout("deployment", OPERATOR)?;
    }
    let nac = ctx.nac().ok();
    let spec_is_walkthrough = nac
        .as_ref()
        .is_some_and(|n| n["spec"]["nmstate"].is_object() && n["spec"]["linuxBridge"].is_object());
    if !spec_is_walkthrough {
        reset(ctx)?;
        ctx.apply_nac(WALKTHROUGH_SPEC)?;
    }
    // The operator may update the handlers for the new probe timeout only now: wait for the
    // DaemonSet to carry it (the arguments the operator renders for a non-default timeout)
    // before its rollout counts.
    let args = json!(["--probe-timeout", format!("{}s", PROBE_TIMEOUT.as_secs())]);
    wait_for(
        "the handler DaemonSet to carry the probe timeout",
        Duration::from_secs(90),
        || {
            let ds = ctx.get(&["get", "daemonset", HANDLER_DS, "-n", NAMESPACE])?;
            Ok((ds["spec"]["template"]["spec"]["containers"][0]["args"] == args).then_some(()))
        },
    )
    .with_context(|| format!("wanted the handler's args {args}"))?;
    ctx.wait_rollout("daemonset", HANDLER_DS)?;
    wait_for(
        "a handler ready on every node",
        Duration::from_secs(120),
        || {
            let ready = ctx
                .daemonset_pods(HANDLER_DS)?
                .iter()
                .filter(|p| {
                    p["status"]["conditions"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
                })
                .count();
            Ok((ready == ctx.cluster.nodes().len()).then_some(()))
        },
    )
}

/// A policy named `name` for the nodes labelled `kubernetes.io/hostname: <node>` (all nodes
/// when None), with `desired` (YAML lines under `desiredState:`) and more `spec` lines.
pub fn policy(name: &str, node: Option<&str>, desired: &str, spec: &str) -> String {
    let selector = node
        .map(|n| format!("  nodeSelector:\n    kubernetes.io/hostname: {n}\n"))
        .unwrap_or_default();
    let desired: String = desired.lines().map(|l| format!("    {l}\n")).collect();
    let spec: String = spec.lines().map(|l| format!("  {l}\n")).collect();
    format!(
        "apiVersion: nmstate.io/v1\nkind: NodeNetworkConfigurationPolicy\nmetadata:\n  name: {name}\n\
         spec:\n{selector}{spec}  desiredState:\n{desired}"
    )
}

/// The enactment of `policy` on `node`.
pub fn enactment(ctx: &Ctx, node: &str, policy: &str) -> Result<Value> {
    ctx.get(&["get", "nnce", &format!("{node}.{policy}")])
}

/// The type, reason and message of the condition that is True.
pub fn true_condition(object: &Value) -> Option<(String, String, String)> {
    let c = object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["status"] == "True")?;
    let text = |k: &str| c[k].as_str().unwrap_or_default().to_string();
    Some((text("type"), text("reason"), text("message")))
}

/// Waits until the enactment of `policy` on `node` has finished (Available, Failing or
/// Aborted) for the policy's current generation; its True condition.
pub fn wait_enacted(
    ctx: &Ctx,
    node: &str,
    policy: &str,
    timeout: Duration,
) -> Result<(String, String, String)> {
    wait_for(
        &format!("enactment {node}.{policy} to finish"),
        timeout,
        || {
            let generation = ctx.get(&["get", "nncp", policy])?["metadata"]["generation"].as_i64();
            let Ok(e) = enactment(ctx, node, policy) else {
                return Ok(None);
            };
            if e["status"]["policyGeneration"].as_i64() != generation {
                return Ok(None);
            }
            Ok(true_condition(&e)
                .filter(|(t, _, _)| ["Available", "Failing", "Aborted"].contains(&t.as_str())))
        },
    )
}

/// Applies `manifest` (a policy already enacted, changed) and waits until every node enacted
/// its new generation and the policy is Available again. (Right after the change the policy
/// still says Available for the previous generation: `kubectl wait` alone would not wait.)
pub fn apply_and_wait_available(ctx: &Ctx, name: &str, manifest: &str) -> Result<()> {
    ctx.apply(manifest)?;
    wait_enacted_everywhere(ctx, name)?;
    wait_available(ctx, name).map(drop)
}

/// Waits until every node has enacted the policy's current generation, which must be
/// Available everywhere.
fn wait_enacted_everywhere(ctx: &Ctx, name: &str) -> Result<()> {
    for node in ctx.cluster.nodes() {
        let (kind, reason, message) =
            wait_enacted(ctx, node.name(), name, Duration::from_secs(120))?;
        check(kind == "Available", || {
            format!("{}.{name}: {kind} {reason}: {message}", node.name())
        })?;
    }
    Ok(())
}

/// `kubectl wait nncp NAME --for condition=Available --timeout 2m`, the walkthrough's command;
/// what it printed.
pub fn wait_available(ctx: &Ctx, name: &str) -> Result<String> {
    ctx.kubectl(&[
        "wait",
        "nncp",
        name,
        "--for",
        "condition=Available",
        "--timeout",
        "2m",
    ])
}

/// br0 removed: every node's `eth1` given back.
pub const BR0_ABSENT: &str = "interfaces:\n- name: br0\n  type: linux-bridge\n  state: absent\n";

/// The CRDs `nmstate: {}` serves.
pub const NMSTATE_CRDS: [&str; 3] = [
    "nodenetworkconfigurationpolicies.nmstate.io",
    "nodenetworkconfigurationenactments.nmstate.io",
    "nodenetworkstates.nmstate.io",
];

/// Deletes the policy (which changes nothing on the nodes, as upstream).
pub fn delete_policy(ctx: &Ctx, name: &str) -> Result<()> {
    ctx.kubectl(&[
        "delete",
        "nncp",
        name,
        "--ignore-not-found",
        "--timeout=60s",
    ])
    .map(drop)
}

/// What a node's links and addresses are, pods' veths left out: equal snapshots mean the node
/// was not changed.
pub fn links_of(node: &Node) -> Result<Vec<String>> {
    let links = node.sh("ip -o link show")?;
    let addrs = node.sh("ip -o addr show")?;
    let mut lines: Vec<String> = links
        .lines()
        .chain(addrs.lines())
        .map(|l| {
            // "3: eth1@if12: <...> mtu 1500 ... state UP mode DEFAULT ..." without the index,
            // which a re-created link changes, and the carrier-dependent "state".
            let rest = l.split_once(": ").map_or(l, |(_, r)| r);
            rest.split_whitespace()
                .filter(|w| !w.starts_with("veth"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|l| !l.starts_with("veth") && !l.contains(" veth") && !l.is_empty())
        .collect();
    lines.sort();
    Ok(lines)
}

/// Waits until `node`'s links and addresses are `before` again (a link-local address put
/// back is `tentative` for a second or two, until its duplicate address detection is over).
fn wait_as_before(node: &Node, before: &[String], what: &str) -> Result<()> {
    let settled = wait_for(what, Duration::from_secs(10), || {
        Ok((links_of(node)? == before).then_some(()))
    });
    settled.with_context(|| {
        let after = links_of(node).unwrap_or_default();
        format!("{}: {before:#?} -> {after:#?}", node.name())
    })
}

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

/// The handler's processes on `node` (its container's main process).
fn handler_pids(node: &Node) -> Result<Vec<i32>> {
    let pids = kube_tier::daemon::run(std::process::Command::new("ip").args([
        "netns",
        "pids",
        node.netns(),
    ]))?;
    Ok(pids
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .filter(|p| {
            let cmdline = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            let words: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
            words.len() >= 2 && words[0].ends_with(b"cni-installer") && words[1] == b"nmstate"
        })
        .collect())
}

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

/// The CPU time (user and system, in clock ticks) process `pid` used so far.
fn cpu_ticks(pid: i32) -> Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // After the command name in parentheses: fields 14 and 15 of stat(5) are utime and stime.
    let rest = stat.rsplit_once(") ").map(|(_, r)| r).unwrap_or_default();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field =
        |i: usize| -> Result<u64> { Ok(fields.get(i).context("a short /proc/PID/stat")?.parse()?) };
    Ok(field(11)? + field(12)?)
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

pub const WALKTHROUGH_DESIRED: &str = "interfaces:
- name: br0
  description: Linux bridge with eth1 as a port
  type: linux-bridge
  state: up
  bridge:
    options:
      stp:
        enabled: false
    port:
    - name: eth1
";

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

/// An idle cluster writes nothing but the operator's Lease renewals: the operator writes no
/// object and no status, not even across a change of leader inside the window (the new leader
/// finds in the applied record that the last one completed this very render), and an idle
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
    // Settled: nothing changes on the node from here.
    std::thread::sleep(Duration::from_secs(5));
    let first = version(ctx)?;
    let operator_mark = operator_writes(ctx)?.len();
    let window = Duration::from_secs(80);
    let handler = *handler_pids(node)?
        .first()
        .context("no handler on node01")?;
    let ticks_before = cpu_ticks(handler)?;
    let started = Instant::now();
    let (leader, transitions) = lease(ctx)?;
    check(!leader.is_empty(), || {
        "nobody holds the operator's Lease".into()
    })?;
    ctx.kubectl(&["delete", "pod", "-n", NAMESPACE, &leader, "--wait=false"])?;
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
        "    the operator idle for {}s, its leader {leader} deleted at the start and {new_leader} \
         leading since: {} writes ({idle_leases} Lease writes besides){}",
        window.as_secs(),
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
    ctx.wait_rollout("deployment", OPERATOR)
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
