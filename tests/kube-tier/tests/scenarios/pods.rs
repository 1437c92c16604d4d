//! Pods on the node's primary network: our `bridge` (with Debian's host-local), called by
//! containerd through libcni for every sandbox.

use std::time::Duration;

use anyhow::{Context, Result};

use kube_tier::daemon::wait_for;
use kube_tier::image::BUSYBOX_IMAGE;
use kube_tier::node::POD_BRIDGE;

use crate::{check, pod_subnet_prefix, Ctx};

const PODS: [&str; 2] = ["net-a", "net-b"];

/// A busybox pod that sleeps, in `default`, on node01 (where the scenarios look at the node).
pub fn pod_manifest(name: &str) -> String {
    pod_manifest_on(name, FIRST_NODE)
}

/// The node the scenarios that look at one node put their pods on.
pub const FIRST_NODE: &str = "node01";

/// A busybox pod that sleeps, in `default`, on `node`.
pub fn pod_manifest_on(name: &str, node: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\n  labels:\n    kube-tier: net\n\
         spec:\n  nodeName: {node}\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: {BUSYBOX_IMAGE}\n    \
         imagePullPolicy: IfNotPresent\n    command: [\"/bin/sleep\", \"3600\"]\n"
    )
}

/// Creates pods `<prefix>-0`, `<prefix>-1`, ... on `node` one after the other, each waited for
/// until it has its network and then deleted without waiting, until `stop` is set or `max` were
/// created; returns how many. Every ADD must succeed while something else changes the node.
pub fn churn_pods(
    ctx: &Ctx,
    prefix: &str,
    node: &str,
    max: usize,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<usize> {
    let mut n = 0;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) && n < max {
        let name = format!("{prefix}-{n}");
        ctx.apply(&pod_manifest_on(&name, node))?;
        wait_pod_ip(ctx, &name)?;
        delete_pod(ctx, &name)?;
        n += 1;
    }
    Ok(n)
}

/// Asks the API to delete pod `name` of `default`, without waiting for the kubelet.
pub fn delete_pod(ctx: &Ctx, name: &str) -> Result<()> {
    ctx.kubectl(&["delete", "pod", "-n", "default", name, "--wait=false"])
        .map(drop)
}

pub fn create_pod(ctx: &Ctx, name: &str) -> Result<()> {
    ctx.apply(&pod_manifest(name)).map(drop)
}

/// Waits for the pod to run; returns its IP.
pub fn wait_pod_ip(ctx: &Ctx, name: &str) -> Result<String> {
    wait_for(
        &format!("pod {name} running"),
        Duration::from_secs(90),
        || {
            let pod = ctx.get(&["get", "pod", name, "-n", "default"])?;
            let running = pod["status"]["phase"] == "Running";
            Ok(pod["status"]["podIP"]
                .as_str()
                .filter(|_| running)
                .map(str::to_string))
        },
    )
}

/// The host ends of the veths on the pod bridge: (name, alias).
pub fn bridge_ports(ctx: &Ctx) -> Result<Vec<(String, String)>> {
    ctx.node01().bridge_ports(POD_BRIDGE)
}

pub fn pods_reach_each_other(ctx: &mut Ctx) -> Result<()> {
    for p in PODS {
        create_pod(ctx, p)?;
    }
    let ips: Vec<String> = PODS
        .iter()
        .map(|p| wait_pod_ip(ctx, p))
        .collect::<Result<_>>()?;
    for ip in &ips {
        check(ip.starts_with(&pod_subnet_prefix(ctx)), || {
            format!("pod IP {ip} is not from host-local's range")
        })?;
    }
    let out = ctx
        .kubectl(&[
            "exec", "-n", "default", PODS[0], "--", "ping", "-c", "2", "-W", "2", &ips[1],
        ])
        .context("ping from one pod to the other")?;
    check(out.contains(" 0% packet loss"), || {
        format!("ping lost packets:\n{out}")
    })?;
    // Our bridge's host veths carry its alias.
    let ports = bridge_ports(ctx)?;
    let ours = ports
        .iter()
        .filter(|(_, alias)| alias.starts_with("cni-bridge "))
        .count();
    check(ours >= 2, || {
        format!("host veths on {POD_BRIDGE} without our bridge's alias: {ports:?}")
    })
}

pub fn pod_deletion_leaves_nothing(ctx: &mut Ctx) -> Result<()> {
    let before = bridge_ports(ctx)?.len();
    let ips: Vec<String> = PODS
        .iter()
        .map(|p| wait_pod_ip(ctx, p))
        .collect::<Result<_>>()?;
    ctx.kubectl(&[
        "delete",
        "pod",
        "-n",
        "default",
        PODS[0],
        PODS[1],
        "--wait=false",
    ])?;
    // What is under test is the CNI DEL the kubelet asks of containerd when it stops the
    // sandboxes, not how soon the kubelet then lets the API objects go.
    let ipam = ctx.node01().host_path("/var/lib/cni/networks/kube-tier");
    wait_for("CNI DEL of both pods", Duration::from_secs(120), || {
        let ports = bridge_ports(ctx)?.len();
        let leases = ips.iter().filter(|ip| ipam.join(ip).exists()).count();
        Ok((ports + 2 <= before && leases == 0).then_some(()))
    })
    .with_context(|| {
        format!(
            "ports now {:?}; containerd's last sandbox teardowns:\n{}",
            bridge_ports(ctx).unwrap_or_default(),
            ctx.cluster
                .log_tail(&ctx.cluster.daemon_name(0, "containerd"), 400)
                .lines()
                .filter(|l| l.contains("StopPodSandbox") || l.contains("TearDown"))
                .collect::<Vec<_>>()
                .join("\n")
        )
    })?;
    // The scenarios after it start with the pods gone from the API as well.
    wait_for(
        "the pods gone from the API",
        Duration::from_secs(180),
        || {
            let left = ctx.kubectl(&[
                "get",
                "pods",
                "-n",
                "default",
                "-l",
                "kube-tier=net",
                "-o",
                "name",
            ])?;
            Ok(left.trim().is_empty().then_some(()))
        },
    )
    .map(drop)
}
