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

use crate::scenarios::control_loop::{lease, operator_writes, wait_operator_quiet, without_leases};
use crate::scenarios::operator::reset;
use crate::{check, Ctx, NAMESPACE, OPERATOR};

mod lifecycle;
mod rollout;
mod survival;

pub use lifecycle::{
    an_idle_cluster_writes_nothing, removing_nmstate_keeps_the_crds_and_the_policies,
    the_walkthroughs_policy_is_available_in_seconds,
};
pub use rollout::{
    a_policy_failing_on_one_node_aborts_the_rest, max_unavailable_one_applies_node_by_node,
};
pub use survival::{
    a_handler_killed_mid_apply_leaves_the_node_as_before,
    a_policy_cutting_the_node_off_is_rolled_back, a_rebooted_node_gets_its_policies_back,
    what_the_node_cannot_apply_leaves_it_untouched,
};

pub const HANDLER_DS: &str = "nmstate-handler";
/// The walkthrough's NetworkAddonsConfig.
pub const WALKTHROUGH_SPEC: &str =
    "multus: {}\nlinuxBridge: {}\nnmstate: {}\nimagePullPolicy: Always\n";
/// The walkthrough's components but Multus: what the idle scenario counts the writes of (the
/// operator's and the handlers'), and nothing else.
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
    let spec_is_walkthrough = nac.as_ref().is_some_and(|n| {
        ["multus", "nmstate", "linuxBridge"]
            .iter()
            .all(|c| n["spec"][c].is_object())
    });
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
            words.len() >= 2 && words[0].ends_with(b"node-agent") && words[1] == b"nmstate"
        })
        .collect())
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
