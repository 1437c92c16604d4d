//! Collection on a node that runs Multus: a pod's sandbox lost with both its networks, the pod
//! network that Multus delegated and the extra network of a NetworkAttachmentDefinition.

use super::runtime_lost::since_the_restart;
use super::*;
use crate::scenarios::multus::{attached_pod, attachment_config, delete_nads, nad, wait_multus};

const POD: &str = "gc-multus";
const NAD: &str = "gc-multus-net";
const NAD_BRIDGE: &str = "brgcmultus";

/// A pod with an extra network (our bridge, host-local) whose sandbox is deleted behind the
/// runtime's back while Multus runs: no DEL comes for either of its attachments. The agents
/// find the pod network behind Multus' config and the extra one through its NAD, and collect
/// the old lease of each once the runtime restarts; the pod's new sandbox gets both again.
pub fn the_node_agents_collect_both_networks_of_a_lost_sandbox_through_multus(
    ctx: &mut Ctx,
) -> Result<()> {
    ctx.ensure_operator()?;
    ctx.apply_nac(&format!("multus: {{}}\n{OWN_SPEC}"))?;
    ctx.wait_rollout("daemonset", LINUX_BRIDGE_DS)?;
    wait_multus(ctx)?;
    let bridge = serde_json::json!({"type": "bridge", "bridge": NAD_BRIDGE});
    let ipam = serde_json::json!({"type": "host-local", "subnet": "10.78.0.0/24"});
    ctx.apply(&nad(NAD, &attachment_config(NAD, bridge, ipam)))?;
    let result = both_networks_lost(ctx);
    let _ = delete_pod(ctx, POD);
    let _ = delete_nads(ctx, &[NAD]);
    // The scenarios after it run without Multus, as before it.
    let restored = ctx.apply_nac(OWN_SPEC).map(drop);
    result.and(restored)
}

fn both_networks_lost(ctx: &mut Ctx) -> Result<()> {
    let node = ctx.node01().name().to_string();
    let net1 = attached_pod(ctx, POD, &node, &serde_json::json!([{"name": NAD}]))?;
    let eth0 = wait_pod_ip(ctx, POD)?;
    let sandbox = lose_the_sandbox(ctx, POD)?;
    let pod_lease = leases_dir(ctx).join(&eth0);
    let nad_leases = |ctx: &Ctx| ctx.node01().leases(NAD);
    check(
        exists(&pod_lease) && nad_leases(ctx).contains(&net1.ip),
        || "the lost sandbox's leases are gone before any collection".into(),
    )?;
    let restarted = restart_the_runtime(ctx)?;
    wait_for(
        "the lost sandbox's leases on both networks to be collected",
        Duration::from_secs(120),
        || {
            ctx.cluster.check_daemons()?;
            Ok((!exists(&pod_lease) && !nad_leases(ctx).contains(&net1.ip)).then_some(()))
        },
    )?;
    let took = restarted.elapsed();
    let again = crate::scenarios::multus::wait_attached(ctx, POD)?;
    println!(
        "    sandbox {} of {POD} (eth0 {eth0}, net1 {}) deleted behind the runtime with Multus \
         in front of the pod network; both leases collected {:.1}s after the restart; the new \
         sandbox has net1 {}:\n      {}",
        &sandbox[..12],
        net1.ip,
        took.as_secs_f64(),
        again.ip,
        since_the_restart(ctx)?.join("\n      ")
    );
    Ok(())
}
