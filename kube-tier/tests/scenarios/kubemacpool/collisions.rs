//! Collisions between running VMIs, reported and cleared; opted-out namespaces left alone.

use std::time::Instant;

use super::prometheus::Prometheus;
use super::*;

/// The `kmp_mac_collisions` lines of every manager replica's metrics (the port upstream
/// serves them on).
fn collision_gauges(ctx: &Ctx) -> Result<Vec<String>> {
    Ok(manager_metrics(ctx, 8443)?
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
/// each, the gauge `kmp_mac_collisions{mac}` at 2 on every replica, the rendered alert
/// `KubemacpoolMACCollisionDetected` firing in a real Prometheus, all cleared when one goes.
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
            Ok((lines.iter().filter(|l| **l == gauge).count() == 2).then_some(lines))
        })?;
        println!("    {lines:?}");
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
