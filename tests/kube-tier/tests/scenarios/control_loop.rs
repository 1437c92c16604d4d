//! The operator's control loop on the real API server: what it writes during a rollout and when
//! nothing changes (from the API server's audit log), and its two replicas handing over.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::{json, Value};

use super::operator::{reset, APPLIED_RECORD, LINUX_BRIDGE_DS};
use crate::{check, Ctx, NAMESPACE, OPERATOR};
use kube_tier::metrics::{is_review, OPERATOR_METRICS_PORT};

/// The operator's user in the audit log.
fn operator_user() -> String {
    format!("system:serviceaccount:{NAMESPACE}:{OPERATOR}")
}

/// The operator's writes recorded so far: `verb resource[/subresource] name`, in order (the
/// reviews of its metrics readers' tokens left out).
pub fn operator_writes(ctx: &Ctx) -> Result<Vec<String>> {
    let path = ctx.cluster.audit_log();
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("read the audit log {}", path.display()))?;
    let user = operator_user();
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["user"]["username"] == user.as_str())
        // Reviews of a metrics reader's token: questions to the API server, not writes.
        .filter(|e| !is_review(&e["objectRef"]["resource"]))
        .map(|e| {
            let o = &e["objectRef"];
            let sub = o["subresource"]
                .as_str()
                .map(|s| format!("/{s}"))
                .unwrap_or_default();
            format!(
                "{} {}{sub} {}",
                e["verb"].as_str().unwrap_or_default(),
                o["resource"].as_str().unwrap_or_default(),
                o["name"].as_str().unwrap_or_default()
            )
        })
        .collect())
}

/// The Lease renewals, which every leader election writes, apart from the rest.
pub fn without_leases(writes: &[String]) -> (Vec<String>, usize) {
    let (leases, rest): (Vec<&String>, Vec<&String>) =
        writes.iter().partition(|w| w.contains(" leases "));
    (rest.into_iter().cloned().collect(), leases.len())
}

/// Waits until the operator has written nothing but Lease renewals for `quiet`, one leader
/// holding the Lease all along, and returns how long that took. What a config change leaves
/// behind (the status once a removed component's pods are gone, a DaemonSet's pods turning
/// Ready) is written by then: only an operator that keeps writing fails it, after six times
/// `quiet`. Sampled once a second: each sample reads the whole audit log.
pub fn wait_operator_quiet(ctx: &Ctx, quiet: Duration) -> Result<Duration> {
    let state = |ctx: &Ctx| -> Result<(usize, String)> {
        let (writes, _) = without_leases(&operator_writes(ctx)?);
        Ok((writes.len(), lease(ctx)?.0))
    };
    let started = Instant::now();
    let mut last = state(ctx)?;
    let mut since = Instant::now();
    while since.elapsed() < quiet {
        if started.elapsed() >= quiet * 6 {
            let writes = operator_writes(ctx)?;
            let (recent, _) = without_leases(&writes[writes.len().saturating_sub(40)..]);
            anyhow::bail!(
                "the operator did not stop writing within {:?}; its last writes: {recent:?}",
                quiet * 6
            );
        }
        std::thread::sleep(Duration::from_secs(1));
        let now = state(ctx)?;
        if now != last {
            last = now;
            since = Instant::now();
        }
    }
    Ok(started.elapsed())
}

/// `(holder, transitions)` of the operator's Lease.
pub fn lease(ctx: &Ctx) -> Result<(String, i64)> {
    let lease = ctx.get(&["get", "lease", OPERATOR, "-n", NAMESPACE])?;
    Ok((
        lease["spec"]["holderIdentity"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        lease["spec"]["leaseTransitions"].as_i64().unwrap_or(0),
    ))
}

/// The leader's count of reconciles, from its `/metrics` (scraped with the scraper's token).
fn reconciles(ctx: &Ctx, leader: &str) -> Result<u64> {
    let pod = ctx.get(&["get", "pod", leader, "-n", NAMESPACE])?;
    let ip = pod["status"]["podIP"]
        .as_str()
        .with_context(|| format!("{leader} has no IP"))?;
    let body = ctx.metrics_at(&format!("{ip}:{OPERATOR_METRICS_PORT}"))?;
    Ok(body
        .lines()
        .filter(|l| l.starts_with("network_addons_operator_reconcile_total{"))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
        .sum())
}

const BRIDGE_ONLY: &str = "linuxBridge: {}\n";

/// A config whose DaemonSet tolerates `key`: a change of it rolls the DaemonSet.
fn tolerating(key: &str) -> String {
    format!(
        "linuxBridge: {{}}\nplacementConfiguration:\n  workloads:\n    tolerations:\n    \
         - {{key: {key}, operator: Exists}}\n"
    )
}

/// Waits until the operator applied [`tolerating`]`(key)` to the DaemonSet.
fn wait_tolerating(ctx: &Ctx, key: &str) -> Result<()> {
    ctx.wait_toleration(
        LINUX_BRIDGE_DS,
        &json!({"key": key, "operator": "Exists"}),
        true,
    )
    .map(drop)
}

/// A config change that rolls the linux-bridge DaemonSet applies it once, and besides the
/// applied record and the events the rest of the rollout writes only the status. (What the
/// operator writes while idle is counted in the idle window of
/// [`super::nmstate::an_idle_cluster_writes_nothing`].)
pub fn a_rollout_applies_the_daemonset_once(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    reset(ctx)?;
    ctx.apply_nac(BRIDGE_ONLY)?;
    ctx.kubectl_wait("Available", "240s")?;
    let (leader, _) = lease(ctx)?;
    let reconciles_before = reconciles(ctx, &leader)?;
    let mark = operator_writes(ctx)?.len();
    let started = Instant::now();
    ctx.apply_nac(&tolerating("kube-tier/rollout"))?;
    wait_tolerating(ctx, "kube-tier/rollout")?;
    ctx.wait_rollout("daemonset", LINUX_BRIDGE_DS)?;
    // Available for this generation: `kubectl wait` would take the previous one's.
    ctx.wait_nac("Available", "True", Duration::from_secs(240))?;
    std::thread::sleep(Duration::from_secs(3));
    let (rollout, leases) = without_leases(&operator_writes(ctx)?[mark..]);
    let reconciles_after = reconciles(ctx, &leader)?;
    let reconciled = reconciles_after
        .checked_sub(reconciles_before)
        .with_context(|| {
            format!(
                "{leader}'s reconcile count went from {reconciles_before} to \
                 {reconciles_after}: it restarted during the rollout"
            )
        })?;
    let apply = format!("patch daemonsets {LINUX_BRIDGE_DS}");
    let record = format!("patch configmaps {APPLIED_RECORD}");
    let applies: Vec<&String> = rollout.iter().filter(|w| **w == apply).collect();
    let status = rollout
        .iter()
        .filter(|w| w.contains(" networkaddonsconfigs/status "))
        .count();
    // Besides the DaemonSet, the applied record and the events: the status only.
    let others: Vec<&String> = rollout
        .iter()
        .filter(|w| {
            **w != apply
                && **w != record
                && !w.contains(" events ")
                && !w.contains(" networkaddonsconfigs/status ")
        })
        .collect();
    println!(
        "    one DaemonSet rollout ({:.0} s): {} writes (the DaemonSet applied {} time(s), {status} \
         status writes; {leases} Lease renewals besides), {reconciled} reconciles{}",
        started.elapsed().as_secs_f64(),
        rollout.len(),
        applies.len(),
        rollout.iter().map(|w| format!("\n      {w}")).collect::<String>()
    );
    check(applies.len() == 1, || {
        format!(
            "the DaemonSet was applied {} times: {rollout:?}",
            applies.len()
        )
    })?;
    check(others.is_empty(), || {
        format!(
            "writes during the rollout besides the DaemonSet's, the record's, the events' and \
             the status: {others:?}"
        )
    })
}

/// The leader's pod deleted, the other replica takes the Lease and applies a config change
/// within 15 s; the Lease changed hands once.
pub fn the_other_replica_takes_over(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    ctx.scale_operator(2)?;
    ctx.wait_rollout("deployment", OPERATOR)?;
    ctx.apply_nac(BRIDGE_ONLY)?;
    ctx.kubectl_wait("Available", "240s")?;
    let (leader, transitions) = lease(ctx)?;
    check(!leader.is_empty(), || "nobody holds the Lease".into())?;
    ctx.kubectl(&["delete", "pod", "-n", NAMESPACE, &leader, "--wait=false"])?;
    let deleted = Instant::now();
    ctx.apply_nac(&tolerating("kube-tier/failover"))?;
    wait_tolerating(ctx, "kube-tier/failover")?;
    let took = deleted.elapsed();
    let (now, transitions_after) = lease(ctx)?;
    println!(
        "    the leader {leader} deleted; {now} applied the change {:.1} s later; Lease transitions {transitions} -> {transitions_after}",
        took.as_secs_f64()
    );
    check(now != leader && !now.is_empty(), || {
        format!("the Lease is held by {now:?}")
    })?;
    check(transitions_after == transitions + 1, || {
        format!(
            "the Lease changed hands {} times",
            transitions_after - transitions
        )
    })?;
    check(took <= Duration::from_secs(15), || {
        format!("the change took {:.1} s", took.as_secs_f64())
    })?;
    // The next scenario starts from no config.
    ctx.wait_rollout("deployment", OPERATOR)?;
    reset(ctx)
}
