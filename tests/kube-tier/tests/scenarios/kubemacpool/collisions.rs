//! Collisions between running VMIs, reported and cleared; opted-out namespaces left alone; and
//! between pods attached through Multus, counted only while they run.

use std::time::Instant;

use serde_json::json;

use super::prometheus::Prometheus;
use super::rules;
use super::*;
use crate::scenarios::multus::{
    attached_pod_manifest_in, attachment_config, nad_in, wait_attached_in, wait_multus,
};
use crate::scenarios::operator::OWN_SPEC;

/// The `kmp_mac_collisions` lines of every manager replica's metrics (the port upstream
/// serves them on).
fn collision_gauges(ctx: &Ctx) -> Result<Vec<String>> {
    Ok(manager_metrics(ctx)?
        .iter()
        .flat_map(|(_, body)| body.lines())
        .filter(|l| l.starts_with("kmp_mac_collisions{"))
        .map(str::to_string)
        .collect())
}

/// A VMI as virt-handler leaves it running: phase and the MAC of its interface.
fn running_vmi_yaml(name: &str, namespace: &str, mac: &str) -> String {
    format!(
        "apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata:\n  name: {name}\n  namespace: {namespace}\n\
         spec: {{}}\nstatus:\n  phase: Running\n  interfaces:\n  - name: br1\n    mac: \"{mac}\"\n"
    )
}

/// Two running VMIs with one MAC: a Warning event `MACCollision` with upstream's message on
/// each, the gauge `kmp_mac_collisions{mac}` at 2 from one replica only (so Prometheus counts
/// one collision of two users, with both replicas scraped), the rendered alert
/// `KubemacpoolMACCollisionDetected` firing in a real Prometheus, every series that the
/// operator's rendered rules read scraped there, all cleared when one goes.
pub fn a_collision_between_running_vmis_is_reported_and_cleared(ctx: &mut Ctx) -> Result<()> {
    deploy(ctx)?;
    ctx.apply(&kubevirt_crds())?;
    let prometheus = Prometheus::start(ctx)?;
    // Upstream's alert, by the name its users' routes select.
    let alert = "KubemacpoolMACCollisionDetected";
    let mac = "02:30:00:00:0e:0e";
    // VMs opted out: the live webhook's selector leaves this namespace alone, and so does the
    // collision report.
    let ignored_mac = "02:30:00:00:0e:0f";
    ctx.apply(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {IGNORED_NAMESPACE}\n  labels:\n    \
         mutatevirtualmachines.kubemacpool.io: ignore\n"
    ))?;
    let outcome = (|| {
        for name in ["kmp-vmi-ignored-a", "kmp-vmi-ignored-b"] {
            ctx.apply(&running_vmi_yaml(name, IGNORED_NAMESPACE, ignored_mac))?;
        }
        let collided = Instant::now();
        for name in ["kmp-vmi-a", "kmp-vmi-b"] {
            ctx.apply(&running_vmi_yaml(name, "default", mac))?;
        }
        let expected =
            format!("MAC {mac}: Collision between vmi/default/kmp-vmi-a, vmi/default/kmp-vmi-b");
        let events = wait_for("the MACCollision events", Duration::from_secs(60), || {
            let events = ctx.get(&[
                "get",
                "events",
                "-n",
                "default",
                "--field-selector",
                "reason=MACCollision",
            ])?;
            let on: BTreeSet<String> = events["items"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|e| e["message"] == expected.as_str() && e["type"] == "Warning")
                .filter_map(|e| e["involvedObject"]["name"].as_str().map(str::to_string))
                .collect();
            Ok((on.len() == 2).then_some(on))
        })?;
        println!("    {expected:?} on {events:?}");
        let gauge = format!("kmp_mac_collisions{{mac=\"{mac}\"}} 2");
        let lines = wait_for("the collision gauge", Duration::from_secs(30), || {
            let lines = collision_gauges(ctx)?;
            Ok(lines.contains(&gauge).then_some(lines))
        })?;
        println!("    {lines:?}");
        check(lines == [gauge.clone()], || {
            format!("more than the reporter serves the gauge: {lines:?}")
        })?;
        // What a dashboard reads: one collision, of two users, across every scraped replica.
        let counted = wait_for(
            "Prometheus to count the collision",
            Duration::from_secs(30),
            || {
                let count = prometheus.query("count(kmp_mac_collisions > 1)")?;
                let users = prometheus.query("sum(kmp_mac_collisions)")?;
                Ok(count.zip(users))
            },
        )?;
        check(counted == (1.0, 2.0), || {
            format!("Prometheus counts (collisions, users) {counted:?}, not (1, 2)")
        })?;
        println!("    Prometheus: count(kmp_mac_collisions > 1) = 1, sum(kmp_mac_collisions) = 2");
        check(!lines.iter().any(|l| l.contains(ignored_mac)), || {
            format!("VMIs in {IGNORED_NAMESPACE}, opted out, were counted: {lines:?}")
        })?;
        println!(
            "    the same MAC on two VMIs in {IGNORED_NAMESPACE} (VMs opted out): not counted"
        );
        // The rule holds for 30 s before it fires.
        wait_for(&format!("{alert} to fire"), Duration::from_secs(90), || {
            Ok((prometheus.alert(alert)?.as_deref() == Some("firing")).then_some(()))
        })?;
        println!(
            "    Prometheus: {alert} firing {:.0} s after the collision began",
            collided.elapsed().as_secs_f64()
        );
        // Every rendered alert reads series that what the operator deploys serves: the
        // collision gauge now, the managers' and the operator's up, the operator's gauges and
        // upstream's deprecated duplicate count.
        rules::every_series_the_rules_read_is_scraped(&prometheus)?;
        ctx.kubectl(&[
            "delete",
            "virtualmachineinstances.kubevirt.io",
            "kmp-vmi-b",
            "-n",
            "default",
        ])?;
        wait_for(
            "the collision gauge to clear",
            Duration::from_secs(30),
            || Ok(collision_gauges(ctx)?.is_empty().then_some(())),
        )
    })();
    ctx.kubectl(&[
        "delete",
        "virtualmachineinstances.kubevirt.io",
        "-n",
        "default",
        "--all",
        "--wait=false",
    ])?;
    ctx.kubectl(&["delete", "namespace", IGNORED_NAMESPACE, "--wait=false"])?;
    outcome
}

const COLLIDE_NAMESPACE: &str = "kmp-collide";
const COLLIDE_NAD: &str = "collide-net";

/// Pods as upstream counts them, attached through Multus in a namespace opted in after they
/// started (as a restore or an import brings them): a Job's completed pod and a running pod with
/// one MAC are no collision, nor is a pod Multus never attached (no network-status); two
/// running pods with one MAC are exactly one collision, reported on both.
pub fn only_running_pods_that_multus_attached_collide(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    ctx.apply_nac(&format!("multus: {{}}\n{OWN_SPEC}{SPEC}"))?;
    ctx.kubectl_wait("Available", "240s")?;
    wait_multus(ctx)?;
    ctx.wait_rollout("deployment", MANAGER)?;
    // Not opted in yet: the webhook leaves the pods' MACs as asked.
    ctx.apply(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {COLLIDE_NAMESPACE}\n"
    ))?;
    let bridge = json!({"type": "bridge", "bridge": "brcollide"});
    let ipam = json!({"type": "host-local", "subnet": "10.79.0.0/24"});
    ctx.apply(&nad_in(
        COLLIDE_NAMESPACE,
        COLLIDE_NAD,
        &attachment_config(COLLIDE_NAD, bridge, ipam),
    ))?;
    let outcome = pods_collide(ctx);
    let cleanup = delete_collide_namespace(ctx);
    // The scenarios after it run without Multus.
    let restored = ctx.apply_nac(SPEC).map(drop);
    outcome.and(cleanup).and(restored)
}

fn pods_collide(ctx: &Ctx) -> Result<()> {
    let (once, twice) = ("02:31:00:00:00:0a", "02:31:00:00:00:0b");
    let node = ctx.node01().name().to_string();
    let asking = |mac: &str| json!([{"name": COLLIDE_NAD, "mac": mac}]);
    ctx.apply(&completed_job_yaml("collide-done", &node, &asking(once)))?;
    ctx.kubectl(&[
        "wait",
        "-n",
        COLLIDE_NAMESPACE,
        "job/collide-done",
        "--for=condition=complete",
        "--timeout=120s",
    ])?;
    for (name, mac) in [
        ("collide-runs", once),
        ("collide-a", twice),
        ("collide-b", twice),
    ] {
        ctx.apply(&attached_pod_manifest_in(
            COLLIDE_NAMESPACE,
            name,
            &node,
            &asking(mac),
        ))?;
    }
    for name in ["collide-runs", "collide-a", "collide-b"] {
        let net1 = wait_attached_in(ctx, COLLIDE_NAMESPACE, name)?;
        println!("    {name}: net1 {} (asked in the annotation)", net1.mac);
    }
    // A NAD that does not exist: Multus never attaches it, so it never gets a network-status.
    ctx.apply(&attached_pod_manifest_in(
        COLLIDE_NAMESPACE,
        "collide-unattached",
        &node,
        &json!([{"name": "no-such-net", "mac": once}]),
    ))?;
    ctx.kubectl(&[
        "label",
        "namespace",
        COLLIDE_NAMESPACE,
        "mutatepods.kubemacpool.io=allocate",
    ])?;
    // One sample in all, from the reporter, however many replicas run.
    let gauge = format!("kmp_mac_collisions{{mac=\"{twice}\"}} 2");
    let lines = wait_for("the collision gauge", Duration::from_secs(60), || {
        let lines = collision_gauges(ctx)?;
        Ok(lines.contains(&gauge).then_some(lines))
    })?;
    // Both MACs became countable at once, when the namespace was opted in.
    check(lines == [gauge.clone()], || {
        format!("a completed or unattached pod was counted, or a replica besides the reporter serves the gauge: {lines:?}")
    })?;
    println!("    {lines:?}");
    let expected = format!(
        "MAC {twice}: Collision between pod/{COLLIDE_NAMESPACE}/collide-a, \
         pod/{COLLIDE_NAMESPACE}/collide-b"
    );
    let on = wait_for("the MACCollision events", Duration::from_secs(60), || {
        let events = ctx.get(&[
            "get",
            "events",
            "-n",
            COLLIDE_NAMESPACE,
            "--field-selector",
            "reason=MACCollision",
        ])?;
        let items: Vec<&Value> = events["items"].as_array().into_iter().flatten().collect();
        let stray: Vec<&str> = items
            .iter()
            .filter_map(|e| e["message"].as_str())
            .filter(|m| *m != expected)
            .collect();
        check(stray.is_empty(), || {
            format!("other collisions reported: {stray:?}")
        })?;
        let on: BTreeSet<String> = items
            .iter()
            .filter_map(|e| e["involvedObject"]["name"].as_str().map(str::to_string))
            .collect();
        Ok((on.len() == 2).then_some(on))
    })?;
    println!("    {expected:?} on {on:?}; the Job's completed pod and the unattached pod: none");
    Ok(())
}

/// A Job whose one pod asks for `networks`, starts on `node` and exits at once: Succeeded, with
/// the MACs of its annotation still written on it.
fn completed_job_yaml(name: &str, node: &str, networks: &Value) -> String {
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": COLLIDE_NAMESPACE},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"annotations": {NETWORKS: networks.to_string()}},
                "spec": {
                    "nodeName": node,
                    "restartPolicy": "Never",
                    "terminationGracePeriodSeconds": 1,
                    "containers": [{
                        "name": "main",
                        "image": BUSYBOX_IMAGE,
                        "imagePullPolicy": "IfNotPresent",
                        "command": ["/bin/true"],
                    }],
                },
            },
        },
    })
    .to_string()
}

/// The pods first, while Multus can still read their NAD for its DEL, then the namespace.
fn delete_collide_namespace(ctx: &Ctx) -> Result<()> {
    ctx.kubectl(&[
        "delete",
        "jobs,pods",
        "--all",
        "-n",
        COLLIDE_NAMESPACE,
        "--wait=true",
        "--timeout=120s",
    ])?;
    ctx.kubectl(&["delete", "namespace", COLLIDE_NAMESPACE, "--wait=false"])
        .map(drop)
}
