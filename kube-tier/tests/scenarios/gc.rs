//! The node agent's garbage collection against the node's real runtime and API server: an
//! attachment whose sandbox the runtime does not have (its DEL never came) goes, everything of
//! it; the attachments of live pods, and of pods created while it runs, stay. First
//! `cni-installer gc` on the node itself (`--host-root /`), then the operator's DaemonSets,
//! which run it every `GC_INTERVAL` through the node's root.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::Value;

use kube_tier::cluster::{CONTAINERD_SOCK, POD_CONFLIST};
use kube_tier::daemon::{run, run_with_stdin, wait_for};
use kube_tier::node::Enter;

use crate::scenarios::operator::{LINUX_BRIDGE_DS, OWN_SPEC};
use crate::scenarios::pods::{bridge_ports, create_pod, delete_pod, wait_pod_ip};
use crate::{check, Ctx, NAMESPACE};

/// The tier's operator runs its node agents with this `GC_INTERVAL`.
pub const AGENT_GC_INTERVAL: &str = "10s";
/// ... and this `GC_METRICS_PORT` (the linux-bridge agents'; the ovs agents serve on the next).
pub const AGENT_METRICS_PORT: u16 = 9191;

/// An attachment made on node01 as a runtime (or Multus) makes one: each plugin of `network`
/// (a conflist) ADDed in turn with the previous one's result, into a namespace of its own that
/// the runtime never knew. The namespace goes when it is dropped.
struct Attachment {
    node: Enter,
    netns: String,
    container_id: String,
    ip: String,
    host_veth: String,
}

impl Attachment {
    fn make(ctx: &Ctx, container_id: &str, ifname: &str, network: &Value) -> Result<Attachment> {
        let node = ctx.node01();
        let netns = format!("kube-tier-{container_id}-{ifname}");
        run(node.command("ip").args(["netns", "add", &netns]))?;
        // Made at once, so that a failing ADD still drops the namespace.
        let mut attachment = Attachment {
            node: node.enter(),
            netns,
            container_id: container_id.to_string(),
            ip: String::new(),
            host_veth: String::new(),
        };
        let mut prev: Option<Value> = None;
        for plugin in network["plugins"].as_array().context("plugins")? {
            let mut conf = plugin.clone();
            conf["name"] = network["name"].clone();
            conf["cniVersion"] = network["cniVersion"].clone();
            if let Some(prev) = &prev {
                conf["prevResult"] = prev.clone();
            }
            let kind = conf["type"].as_str().context("type")?.to_string();
            let out = run_with_stdin(
                node.command(Path::new("/opt/cni/bin").join(&kind))
                    .env("CNI_COMMAND", "ADD")
                    .env("CNI_CONTAINERID", container_id)
                    .env("CNI_NETNS", format!("/run/netns/{}", attachment.netns))
                    .env("CNI_IFNAME", ifname)
                    .env("CNI_PATH", "/opt/cni/bin"),
                conf.to_string().as_bytes(),
            )
            .with_context(|| format!("{kind} ADD of {container_id}'s {ifname}"))?;
            prev = Some(serde_json::from_str(&out)?);
        }
        let result = prev.context("no plugin")?;
        let ip = result["ips"][0]["address"]
            .as_str()
            .and_then(|a| a.split('/').next())
            .context("an address")?
            .to_string();
        // The host side: the interface outside the sandbox that is not the bridge itself.
        let bridges: Vec<&str> = network["plugins"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["bridge"].as_str())
            .collect();
        let host_veth = result["interfaces"]
            .as_array()
            .and_then(|ifs| {
                ifs.iter().find(|i| {
                    i["sandbox"].is_null()
                        && i["name"].as_str().is_some_and(|n| !bridges.contains(&n))
                })
            })
            .and_then(|i| i["name"].as_str())
            .context("the host veth")?
            .to_string();
        attachment.ip = ip;
        attachment.host_veth = host_veth;
        Ok(attachment)
    }
}

impl Drop for Attachment {
    fn drop(&mut self) {
        let _ = self
            .node
            .command("ip")
            .args(["netns", "del", &self.netns])
            .status();
    }
}

/// One attachment of the pod network (the node's conflist, our bridge then tuning) whose
/// sandbox the runtime lost. Its bridge also had `ipMasq` and `macspoofchk` on (the network's
/// config has changed since, as configs do), so it holds nftables chains too: GC finds our
/// chains by the network's name, whatever the config says today.
struct Leak {
    att: Attachment,
    /// The attachment chains of node01's nftables tables before the leak.
    chains_before: Chains,
}

/// The number of attachment chains (`att-…`) in our bridge's two nftables tables on node01.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Chains {
    spoof_check: usize,
    masquerade: usize,
}

impl Chains {
    fn on_node01(ctx: &Ctx) -> Result<Chains> {
        let count = |family: &str, table: &str| -> Result<usize> {
            let out = ctx
                .node01()
                .command("nft")
                .args(["list", "table", family, table])
                .output()
                .context("running nft")?;
            // No table: no attachment has made it yet.
            Ok(String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|l| l.trim_start().starts_with("chain att-"))
                .count())
        };
        Ok(Chains {
            spoof_check: count("bridge", "cni_bridge_spoofchk")?,
            masquerade: count("inet", "cni_bridge_masquerade")?,
        })
    }
}

impl Leak {
    fn make(ctx: &Ctx, container_id: &str) -> Result<Leak> {
        let chains_before = Chains::on_node01(ctx)?;
        let mut network: Value = serde_json::from_slice(
            &std::fs::read(ctx.node01().host_path(POD_CONFLIST)).context("the node's conflist")?,
        )?;
        for plugin in network["plugins"].as_array_mut().context("plugins")? {
            if plugin["type"] == "bridge" {
                plugin["ipMasq"] = Value::Bool(true);
                plugin["macspoofchk"] = Value::Bool(true);
            }
        }
        let att = Attachment::make(ctx, container_id, "eth0", &network)?;
        let chains = Chains::on_node01(ctx)?;
        check(
            chains.spoof_check == chains_before.spoof_check + 1
                && chains.masquerade == chains_before.masquerade + 1,
            || {
                format!("the leaked attachment made no chains: {chains_before:?} before, {chains:?} after")
            },
        )?;
        Ok(Leak { att, chains_before })
    }

    fn lease(&self, ctx: &Ctx) -> PathBuf {
        leases_dir(ctx).join(&self.att.ip)
    }

    fn tuning_state(&self, ctx: &Ctx) -> PathBuf {
        tuning_state(ctx, &self.att.container_id)
    }
}

/// The pod network's name (in the nodes' conflist).
const POD_NETWORK: &str = "kube-tier";

/// Where host-local keeps node01's leases of the pod network, seen from the machine.
fn leases_dir(ctx: &Ctx) -> PathBuf {
    ctx.node01()
        .host_path(Path::new("/var/lib/cni/networks").join(POD_NETWORK))
}

/// tuning's state of `container_id`'s `eth0` on node01, seen from the machine.
fn tuning_state(ctx: &Ctx, container_id: &str) -> PathBuf {
    ctx.node01()
        .host_path("/run/cni/tuning")
        .join(format!("{container_id}_eth0.json"))
}

/// `cni-installer gc` once, on node01: what it logged.
fn collect(ctx: &Ctx) -> Result<String> {
    let node = ctx.node01();
    let out = node
        .command(ctx.repo.join("target/installer/cni-installer"))
        .args([
            "gc",
            "--to",
            "/opt/cni/bin",
            "--cni-conf-dir",
            "/etc/cni/net.d",
        ])
        .args(["--cri-socket", CONTAINERD_SOCK, "--host-root", "/"])
        .env("NODE_NAME", node.name())
        .env("KUBECONFIG", ctx.cluster.node_kubeconfig())
        .output()
        .context("running cni-installer gc")?;
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    anyhow::ensure!(out.status.success(), "cni-installer gc failed:\n{log}");
    Ok(log)
}

/// One ping from `pod` to the node's address on the pod bridge, its gateway.
fn reaches_its_gateway(ctx: &Ctx, pod: &str, when: &str) -> Result<()> {
    let out = ctx.kubectl(&[
        "exec",
        "-n",
        "default",
        pod,
        "--",
        "ping",
        "-c",
        "1",
        "-W",
        "2",
        &ctx.node01().pod_gateway(),
    ])?;
    check(out.contains(" 0% packet loss"), || {
        format!("{pod} lost its network {when}:\n{out}")
    })
}

fn exists(path: &Path) -> bool {
    path.exists()
}

/// The names of the pod bridge's ports.
fn ports(ctx: &Ctx) -> Result<Vec<String>> {
    Ok(bridge_ports(ctx)?
        .into_iter()
        .map(|(name, _)| name)
        .collect())
}

impl Leak {
    /// Whether nothing of it is left: its port, its lease, its tuning state, its nftables
    /// chains.
    fn is_gone(&self, ctx: &Ctx) -> Result<bool> {
        Ok(!ports(ctx)?.contains(&self.att.host_veth)
            && !exists(&self.lease(ctx))
            && !exists(&self.tuning_state(ctx))
            && Chains::on_node01(ctx)? == self.chains_before)
    }
}

pub fn gc_collects_what_lost_dels_left(ctx: &mut Ctx) -> Result<()> {
    create_pod(ctx, "gc-live")?;
    let live_ip = wait_pod_ip(ctx, "gc-live")?;
    let live_lease = leases_dir(ctx).join(&live_ip);
    let leak = Leak::make(ctx, "gc-leaked-1")?;
    check(ports(ctx)?.contains(&leak.att.host_veth), || {
        format!(
            "the leaked attachment's port {} is not on the bridge",
            leak.att.host_veth
        )
    })?;
    check(
        exists(&leak.lease(ctx)) && exists(&leak.tuning_state(ctx)),
        || "the leaked attachment has no lease or tuning state".into(),
    )?;
    let before = ports(ctx)?.len();

    let report = collect(ctx).context("cni-installer gc")?;
    println!(
        "    cni-installer gc:\n      {}",
        report.trim().replace('\n', "\n      ")
    );
    let after = ports(ctx)?;
    check(!after.contains(&leak.att.host_veth), || {
        format!(
            "the leaked port {} is still on the bridge: {after:?}",
            leak.att.host_veth
        )
    })?;
    check(after.len() + 1 == before, || {
        format!("GC removed more than the leaked port: {before} ports before, {after:?} after")
    })?;
    check(!exists(&leak.lease(ctx)), || {
        format!("the leaked lease {} is left", leak.lease(ctx).display())
    })?;
    check(!exists(&leak.tuning_state(ctx)), || {
        format!(
            "the leaked tuning state {} is left",
            leak.tuning_state(ctx).display()
        )
    })?;
    let chains = Chains::on_node01(ctx)?;
    check(chains == leak.chains_before, || {
        format!(
            "the leaked attachment's nftables chains are left: {:?} before it, {chains:?} after GC",
            leak.chains_before
        )
    })?;
    for what in [
        format!("collected port {}", leak.att.host_veth),
        "collected spoof check of attachment".to_string(),
        "collected masquerade of attachment".to_string(),
    ] {
        check(report.contains(&what), || {
            format!("the agent did not say {what:?}:\n{report}")
        })?;
    }
    check(exists(&live_lease), || {
        "the live pod's lease was collected".into()
    })?;
    reaches_its_gateway(ctx, "gc-live", "after the collection")?;
    delete_pod(ctx, "gc-live")?;
    Ok(())
}

pub fn gc_keeps_pods_created_while_it_runs(ctx: &mut Ctx) -> Result<()> {
    let stop = AtomicBool::new(false);
    let ctx = &*ctx;
    let (rounds, pods) = std::thread::scope(|s| -> Result<(usize, Vec<String>)> {
        let collector = s.spawn(|| -> Result<usize> {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                collect(ctx)?;
                n += 1;
            }
            Ok(n)
        });
        let made: Result<Vec<String>> = (0..3)
            .map(|i| {
                let name = format!("gc-new-{i}");
                create_pod(ctx, &name)?;
                wait_pod_ip(ctx, &name).map(|_| name)
            })
            .collect();
        stop.store(true, Ordering::Relaxed);
        let rounds = collector.join().expect("the collector thread")?;
        Ok((rounds, made?))
    })?;
    // One more round once every pod runs: each must keep what it has.
    collect(ctx)?;
    for pod in &pods {
        let ip = wait_pod_ip(ctx, pod)?;
        check(leases_dir(ctx).join(&ip).exists(), || {
            format!("{pod}'s lease of {ip} was collected")
        })?;
        reaches_its_gateway(ctx, pod, &format!("after {rounds} collection rounds"))?;
    }
    println!(
        "    {rounds} collection rounds ran while {} pods started",
        pods.len()
    );
    for pod in &pods {
        delete_pod(ctx, pod)?;
    }
    Ok(())
}

/// The log of the linux-bridge DaemonSet's agent on node01.
fn agent_log(ctx: &Ctx) -> Result<String> {
    let pod = ctx.daemonset_pod(LINUX_BRIDGE_DS, ctx.node01().name())?;
    ctx.kubectl(&["logs", "-n", NAMESPACE, &pod, "-c", "cni-plugins"])
}

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
/// operator's metrics Service, whose endpoints must list it (the API server's proxy then
/// fetches it from the node).
fn agent_metrics(ctx: &Ctx) -> Result<String> {
    let service = "cluster-network-addons-operator-prometheus-metrics";
    let endpoints = ctx.get(&["get", "endpoints", service, "-n", NAMESPACE])?;
    let target = format!("{}:{AGENT_METRICS_PORT}", ctx.node01().ip());
    let listed: Vec<String> = endpoints["subsets"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| {
            let ports: Vec<i64> = s["ports"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p["port"].as_i64())
                .collect();
            s["addresses"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|a| a["ip"].as_str())
                .flat_map(move |ip| ports.clone().into_iter().map(move |p| format!("{ip}:{p}")))
                .collect::<Vec<_>>()
        })
        .collect();
    check(listed.contains(&target), || {
        format!("the metrics Service does not reach {target}: its endpoints are {listed:?}")
    })?;
    let pod = ctx.daemonset_pod(LINUX_BRIDGE_DS, ctx.node01().name())?;
    ctx.kubectl(&[
        "get",
        "--raw",
        &format!("/api/v1/namespaces/{NAMESPACE}/pods/{pod}:{AGENT_METRICS_PORT}/proxy/metrics"),
    ])
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
    // The leak alone is five things: port, lease, tuning state and two nftables chains.
    check(collected >= 5.0, || {
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

/// What the node holds for the pod network: the leases of host-local's range (by address), the
/// bridge's ports and tuning's state files.
#[derive(Debug, PartialEq, Eq)]
struct NodeHolds {
    leases: BTreeSet<String>,
    ports: usize,
    tuning_states: usize,
}

/// The names in `dir`; none when it does not exist (yet: tuning makes its directory at its
/// first ADD on the node).
fn names(dir: &Path) -> Result<Vec<String>> {
    match std::fs::read_dir(dir) {
        Ok(entries) => Ok(entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e).with_context(|| format!("listing {}", dir.display())),
    }
}

fn node_holds(ctx: &Ctx) -> Result<NodeHolds> {
    Ok(NodeHolds {
        leases: ctx.node01().leases(POD_NETWORK),
        ports: ports(ctx)?.len(),
        tuning_states: names(&ctx.node01().host_path("/run/cni/tuning"))?
            .iter()
            .filter(|n| n.ends_with("_eth0.json"))
            .count(),
    })
}

/// What node01 should hold: one lease, port and tuning state per pod of its on the pod network.
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
        tuning_states: leases.len(),
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
         {} lease(s), {} port(s), {} tuning state(s)",
        left.leases.len(),
        left.ports,
        left.tuning_states
    );
    let ip = wait_pod_ip(ctx, "gc-crash")?;
    let holds = node_holds(ctx)?;
    println!(
        "    gc-crash runs with {ip}; the node holds {} lease(s), {} port(s), {} tuning \
         state(s) for {} live pod(s)",
        holds.leases.len(),
        holds.ports,
        holds.tuning_states,
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
fn since_the_restart(ctx: &Ctx) -> Result<Vec<String>> {
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
/// removes its port, lease and tuning state; the pod's new attachment stays.
pub fn the_node_agents_collect_a_sandbox_deleted_behind_the_runtime(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    ctx.apply_nac(OWN_SPEC)?;
    ctx.wait_rollout("daemonset", LINUX_BRIDGE_DS)?;
    create_pod(ctx, "gc-behind")?;
    let old_ip = wait_pod_ip(ctx, "gc-behind")?;
    let old_ports = ports(ctx)?;
    ctx.cluster.crash(0, "kubelet")?;
    let sandbox = ctx
        .cluster
        .delete_pod_behind_the_runtime(0, "default", "gc-behind")?;
    let old_lease = leases_dir(ctx).join(&old_ip);
    let old_state = tuning_state(ctx, &sandbox);
    check(exists(&old_lease) && exists(&old_state), || {
        "the deleted sandbox's lease or tuning state is gone before any collection".into()
    })?;
    ctx.cluster.crash(0, "containerd")?;
    ctx.cluster.start_again(0, "containerd")?;
    ctx.cluster.start_again(0, "kubelet")?;
    let restarted = Instant::now();
    wait_for(
        "the deleted sandbox's lease and tuning state to be collected",
        Duration::from_secs(120),
        || {
            ctx.cluster.check_daemons()?;
            Ok((!exists(&old_lease) && !exists(&old_state)).then_some(()))
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
