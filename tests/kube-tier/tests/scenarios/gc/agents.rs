//! The operator's DaemonSets running the collection every `GC_INTERVAL`: what lost DELs left,
//! and the networks of NetworkAttachmentDefinitions.

use kube_tier::metrics::{service_endpoints, OPERATOR_METRICS_SERVICE};

use super::*;

/// `cni_installer_gc_collected_total` of a `/metrics` answer (0 when absent).
fn collected_total(metrics: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix("cni_installer_gc_collected_total "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .unwrap_or_default()
}

/// The lines of the agent's collection round that collected `port`, from its log.
fn round_that_collected<'l>(log: &'l str, port: &str) -> Vec<&'l str> {
    let round = log
        .lines()
        .find(|l| l.contains(&format!("collected port {port}")))
        .and_then(|l| l.split("gc{").nth(1))
        .and_then(|rest| rest.split('}').next())
        .map(|round| format!("gc{{{round}}}"));
    log.lines()
        .filter(|l| round.as_ref().is_some_and(|r| l.contains(r.as_str())))
        .collect()
}

/// node01's linux-bridge agent's `/metrics`, read as Prometheus would find it: through the
/// operator's metrics Service, whose endpoints must list it, then over HTTPS with the scraper's
/// token.
fn agent_metrics(ctx: &Ctx) -> Result<String> {
    let listed = service_endpoints(&ctx.cluster, NAMESPACE, OPERATOR_METRICS_SERVICE)?;
    let target = format!("{}:{AGENT_METRICS_PORT}", ctx.node01().ip());
    check(listed.contains(&target), || {
        format!("the metrics Service does not reach {target}: its endpoints are {listed:?}")
    })?;
    ctx.metrics_at(&target)
}

/// The linux-bridge DaemonSet the operator renders collects on its own, within its interval: a
/// leaked attachment goes, everything of it, and says so in the agent's log; a live pod keeps
/// its network.
pub fn the_node_agents_collect_what_lost_dels_left(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    ctx.apply_nac(OWN_SPEC)?;
    ctx.wait_rollout("daemonset", LINUX_BRIDGE_DS)?;
    create_pod(ctx, "gc-agent-live")?;
    let live_ip = wait_pod_ip(ctx, "gc-agent-live")?;
    let live_lease = leases_dir(ctx).join(&live_ip);
    // Counted from here: earlier rounds of this agent may have collected other things.
    let collected_before = collected_total(&agent_metrics(ctx)?);
    let leak = Leak::make(ctx, "gc-leaked-2")?;
    let leaked = Instant::now();
    wait_for(
        "the linux-bridge agent to collect the leaked attachment",
        Duration::from_secs(120),
        || Ok(leak.is_gone(ctx)?.then_some(())),
    )?;
    let took = leaked.elapsed();
    let log = agent_log(ctx)?;
    let said = round_that_collected(&log, &leak.att.host_veth);
    check(
        log.contains(&format!("collected port {}", leak.att.host_veth)),
        || format!("the agent did not say what it collected:\n{log}"),
    )?;
    println!(
        "    collected by the linux-bridge agent (GC_INTERVAL {AGENT_GC_INTERVAL}) {:.1}s after the leak:\n      {}",
        took.as_secs_f64(),
        said.join("\n      ")
    );
    let metrics = agent_metrics(ctx)?;
    let collected = collected_total(&metrics) - collected_before;
    println!(
        "    its metrics, through the operator's metrics Service's endpoints:\n      {}",
        metrics
            .lines()
            .filter(|l| l.starts_with("cni_installer_gc_"))
            .collect::<Vec<_>>()
            .join("\n      ")
    );
    // The leak alone is four things: port, lease and two nftables chains.
    check(collected >= 4.0, || {
        format!(
            "the agent's metrics count {collected} things collected since the leak \
             ({collected_before} before it):\n{metrics}"
        )
    })?;
    check(exists(&live_lease), || {
        "the live pod's lease was collected".into()
    })?;
    reaches_its_gateway(ctx, "gc-agent-live", "after the agent's collections")?;
    delete_pod(ctx, "gc-agent-live")?;
    Ok(())
}

/// The NetworkAttachmentDefinition CRD as Multus defines it, for when no earlier scenario's
/// Multus component has made it (its image cannot be pulled here, but its CRD is all the agents
/// read).
const NAD_CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: network-attachment-definitions.k8s.cni.cncf.io
spec:
  group: k8s.cni.cncf.io
  scope: Namespaced
  names:
    plural: network-attachment-definitions
    singular: network-attachment-definition
    kind: NetworkAttachmentDefinition
    shortNames: [net-attach-def]
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
";

/// A secondary network of our bridge, as a NetworkAttachmentDefinition (what Multus would
/// attach as `net1`).
const NAD_NETWORK: &str = "gc-nad";

const NAD_BRIDGE: &str = "brgcnad";

fn nad_network() -> Value {
    serde_json::json!({
        "cniVersion": "1.0.0",
        "name": NAD_NETWORK,
        "plugins": [{
            "type": "bridge",
            "bridge": NAD_BRIDGE,
            "ipam": {"type": "host-local", "subnet": "10.77.0.0/24"}
        }]
    })
}

/// A NetworkAttachmentDefinition network, which the node agents learn from the API: the `net1`
/// of a sandbox the runtime lost goes (port, lease); the `net1` of a live pod's sandbox stays
/// (though the pod's own network is another), and goes in turn once the pod is deleted. No
/// Multus runs here, so both are made as Multus makes them, with the sandbox's ID.
pub fn the_node_agents_collect_the_networks_of_attachment_definitions(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    ctx.apply_nac(OWN_SPEC)?;
    ctx.wait_rollout("daemonset", LINUX_BRIDGE_DS)?;
    if ctx
        .kubectl(&[
            "get",
            "crd",
            "network-attachment-definitions.k8s.cni.cncf.io",
        ])
        .is_err()
    {
        ctx.apply(NAD_CRD)?;
        ctx.kubectl(&[
            "wait",
            "--for=condition=Established",
            "crd/network-attachment-definitions.k8s.cni.cncf.io",
            "--timeout=60s",
        ])?;
    }
    let network = nad_network();
    let config = serde_json::json!({
        "cniVersion": network["cniVersion"],
        "name": NAD_NETWORK,
        "type": "bridge",
        "bridge": NAD_BRIDGE,
        "ipam": network["plugins"][0]["ipam"],
    });
    ctx.apply(&format!(
        "apiVersion: k8s.cni.cncf.io/v1\nkind: NetworkAttachmentDefinition\nmetadata:\n  name: {NAD_NETWORK}\n  namespace: default\nspec:\n  config: '{config}'\n"
    ))?;
    create_pod(ctx, "gc-nad-live")?;
    wait_pod_ip(ctx, "gc-nad-live")?;
    let sandbox = ctx.cluster.sandbox_of(0, "default", "gc-nad-live")?;
    let live = Attachment::make(ctx, &sandbox, "net1", &network)?;
    let leaked = Attachment::make(ctx, "gc-nad-leaked", "net1", &network)?;
    let leases = || {
        ctx.node01()
            .leases(NAD_NETWORK)
            .into_iter()
            .collect::<Vec<_>>()
    };
    let ports = || -> Result<Vec<String>> {
        Ok(ctx
            .node01()
            .bridge_ports(NAD_BRIDGE)?
            .into_iter()
            .map(|(name, _)| name)
            .collect())
    };
    let holds = |a: &Attachment| -> Result<bool> {
        Ok(ports()?.contains(&a.host_veth) || leases().contains(&a.ip))
    };
    let leaked_at = Instant::now();
    wait_for(
        "the linux-bridge agent to collect the leaked net1",
        Duration::from_secs(120),
        || Ok((!holds(&leaked)?).then_some(())),
    )?;
    let took = leaked_at.elapsed();
    check(
        ports()?.contains(&live.host_veth) && leases().contains(&live.ip),
        || {
            format!(
                "the live sandbox's net1 ({}, {}) was collected: ports {:?}, leases {:?}",
                live.host_veth,
                live.ip,
                ports(),
                leases()
            )
        },
    )?;
    let said = |a: &Attachment| -> Result<Vec<String>> {
        let log = agent_log(ctx)?;
        Ok(round_that_collected(&log, &a.host_veth)
            .into_iter()
            .map(str::to_string)
            .collect())
    };
    println!(
        "    NetworkAttachmentDefinition {NAD_NETWORK}: the net1 of a lost sandbox collected {:.1}s after it was left; the net1 of gc-nad-live's sandbox {} kept:\n      {}",
        took.as_secs_f64(),
        &sandbox[..12],
        said(&leaked)?.join("\n      ")
    );
    delete_pod(ctx, "gc-nad-live")?;
    let deleted = Instant::now();
    wait_for(
        "the linux-bridge agent to collect the deleted pod's net1",
        Duration::from_secs(120),
        || Ok((!holds(&live)?).then_some(())),
    )?;
    println!(
        "    gc-nad-live deleted (its DEL never reached net1): collected {:.1}s later:\n      {}",
        deleted.elapsed().as_secs_f64(),
        said(&live)?.join("\n      ")
    );
    ctx.kubectl(&["delete", "network-attachment-definition", NAD_NETWORK])?;
    run(ctx.node01().command("ip").args(["link", "del", NAD_BRIDGE]))?;
    Ok(())
}
