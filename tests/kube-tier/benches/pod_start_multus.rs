//! Pod start as users meet it, through Multus: a two-node tier cluster, the operator deployed
//! with `multus: {}` (Multus' thick image built from its source), and pods that ask for an
//! extra network in `k8s.v1.cni.cncf.io/networks`. The extra network is a
//! NetworkAttachmentDefinition of bridge + tuning with host-local, one made by our plugins and
//! one by the Go reference plugins' (`$GO_PLUGINS_DIR`, 1.9.1 from `scripts/go-plugins-1.9.1`),
//! behind the same Multus, the same pods, interleaved in blocks of ten; and, as the baseline,
//! the same pods without an extra network (Multus and the pod network only). Printed, not
//! asserted:
//! - one pod at a time on node01: `kubectl apply` to the pod seen Running, and the sandbox's
//!   creation as containerd logs it (Multus' ADD of every network included), median and 95th
//!   percentile of each side, ours over Go's, and what the extra network adds to the baseline;
//! - a burst of pods created at once on both nodes: until all run, and how many sandboxes
//!   failed; then their deletion, until neither node holds a port or a lease of theirs.
//!
//! `cargo bench -p kube-tier --bench pod_start_multus` as root, after scripts/build-plugins,
//! scripts/kube-build and scripts/multus (`MULTUS_BIN_DIR`); `BENCH_PODS` pods per side
//! (default 100), `BENCH_BURST` (default 60).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::json;

use kube_tier::daemon::wait_for;
use kube_tier::image::{BUSYBOX_IMAGE, MULTUS_IMAGE};
use kube_tier::measure::{
    sandbox_failures, sandbox_times, sandbox_times_of, veth_is_ours, wait_running, Latency,
};
use kube_tier::node::POD_BRIDGE;
use kube_tier::Cluster;

const BLOCK: usize = 10;
const NETWORKS: &str = "k8s.v1.cni.cncf.io/networks";

/// One side of the comparison: the NAD its pods name (none for the baseline), and whose
/// bridge makes that network.
struct Side {
    label: String,
    prefix: &'static str,
    nad: Option<Nad>,
}

struct Nad {
    name: &'static str,
    bridge: &'static str,
    subnet: &'static str,
    plugins: (&'static str, &'static str),
    ours: bool,
}

fn main() -> ExitCode {
    match bench() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            println!("pod start through Multus: FAILED: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn bench() -> Result<()> {
    if !nix::unistd::Uid::effective().is_root() {
        bail!("the pod start benchmark needs root (it runs a kubelet and containerd)");
    }
    let pods = kube_tier::env_count("BENCH_PODS", 100)?.max(BLOCK);
    let burst = kube_tier::env_count("BENCH_BURST", 60)?;
    let go_dir = netns_tests::go_reference_dir();
    let go_version = netns_tests::go_release_label(&go_dir.join("bridge"));
    let repo = kube_tier::repo();
    let mut cluster = Cluster::start(&kube_tier::kube_bin()?, &repo, 2)?;
    let result = run(&cluster, &repo, &go_dir, &go_version, pods, burst);
    for e in cluster.teardown() {
        eprintln!("kube-tier: teardown: {e}");
    }
    result
}

fn run(
    cluster: &Cluster,
    repo: &Path,
    go_dir: &Path,
    go_version: &str,
    pods: usize,
    burst: usize,
) -> Result<()> {
    let sides = [
        Side {
            label: "no extra network".into(),
            prefix: "base",
            nad: None,
        },
        Side {
            label: "ours".into(),
            prefix: "ours",
            nad: Some(Nad {
                name: "bench-ours",
                bridge: "br-ours",
                subnet: "10.250.0.0/16",
                plugins: ("bridge", "tuning"),
                ours: true,
            }),
        },
        Side {
            label: format!("Go {go_version}"),
            prefix: "go",
            nad: Some(Nad {
                name: "bench-go",
                bridge: "br-go",
                subnet: "10.251.0.0/16",
                plugins: ("go-bridge", "go-tuning"),
                ours: false,
            }),
        },
    ];
    start_multus(cluster, repo, go_dir, &sides)?;
    println!(
        "pod start through Multus on the cluster tier: {pods} pods per side one at a time \
         (blocks of {BLOCK}, interleaved), a burst of {burst} on two nodes; an extra network of \
         bridge + tuning by ours and by the Go plugins in {}, and pods without one",
        go_dir.display()
    );

    let before = held(cluster, &sides)?;

    // One pod at a time, on node01.
    let node = cluster.node(0);
    let mut applied: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut names: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for block in 0..pods / BLOCK {
        for side in &sides {
            for i in 0..BLOCK {
                let name = format!("{}-{block}-{i}", side.prefix);
                let started = Instant::now();
                cluster.kubectl_stdin(
                    &["apply", "-f", "-"],
                    &pod(&name, node.name(), side, side.prefix),
                )?;
                wait_running(cluster, &name)?;
                applied
                    .entry(side.prefix)
                    .or_default()
                    .push(started.elapsed().as_secs_f64() * 1000.0);
                if i == 0 {
                    check_side(cluster, side, &name)?;
                }
                cluster.kubectl(&["delete", "pod", &name, "--wait=false"])?;
                names.entry(side.prefix).or_default().push(name);
            }
        }
    }
    wait_clean(cluster, &sides, &before, Duration::from_secs(300))?;
    let logged = sandbox_times(&cluster.log_path(&cluster.daemon_name(0, "containerd")))?;
    let mut sandbox = BTreeMap::new();
    for side in &sides {
        sandbox.insert(side.prefix, sandbox_times_of(&logged, &names[side.prefix])?);
    }
    print_latency(
        "sandbox created (containerd's RunPodSandbox, Multus' ADD within)",
        &sides,
        &sandbox,
    );
    print_latency("kubectl apply to pod Running", &sides, &applied);

    // A burst on both nodes, then its deletion.
    let mut bursts = Vec::new();
    for side in &sides {
        bursts.push(run_burst(cluster, &sides, side, &before, burst)?);
    }
    for (side, (all_running, failures, clean)) in sides.iter().zip(&bursts) {
        println!(
            "  burst of {burst} on two nodes ({}): all Running in {all_running:.1} s, \
             {failures} sandbox failures; deleted: nodes clean {clean:.1} s later",
            side.label
        );
    }
    println!(
        "  burst ours/Go: until all Running {:.2}x (goal: at most 0.5x), until the nodes are \
         clean after deletion {:.2}x",
        bursts[1].0 / bursts[2].0,
        bursts[1].2 / bursts[2].2
    );
    Ok(())
}

/// The Go plugins beside ours on every node, the operator with `multus: {}` Available, Multus
/// in front of every node's pod network, and the sides' NADs.
fn start_multus(cluster: &Cluster, repo: &Path, go_dir: &Path, sides: &[Side]) -> Result<()> {
    for node in cluster.nodes() {
        let bin = node.host_path("/opt/cni/bin");
        for (from, to) in [("bridge", "go-bridge"), ("tuning", "go-tuning")] {
            std::fs::copy(go_dir.join(from), bin.join(to))
                .with_context(|| format!("copy the Go {from} to {}", node.name()))?;
        }
    }
    cluster.deploy_operator(repo, &[format!("MULTUS_IMAGE={MULTUS_IMAGE}")])?;
    cluster.kubectl_stdin(
        &["apply", "-f", "-"],
        "apiVersion: networkaddonsoperator.network.kubevirt.io/v1\nkind: NetworkAddonsConfig\n\
         metadata:\n  name: cluster\nspec:\n  multus: {}\n",
    )?;
    cluster.kubectl(&[
        "wait",
        "networkaddonsconfig",
        "cluster",
        "--for=condition=Available",
        "--timeout=300s",
    ])?;
    cluster.wait_multus()?;
    for nad in sides.iter().filter_map(|s| s.nad.as_ref()) {
        let config = json!({
            "cniVersion": "1.0.0",
            "name": nad.name,
            "plugins": [
                {
                    "type": nad.plugins.0,
                    "bridge": nad.bridge,
                    "ipam": {"type": "host-local", "ranges": [[{"subnet": nad.subnet}]]},
                },
                {
                    "type": nad.plugins.1,
                    "sysctl": {"net.ipv4.conf.IFNAME.accept_redirects": "0"},
                },
            ],
        });
        let manifest = json!({
            "apiVersion": "k8s.cni.cncf.io/v1",
            "kind": "NetworkAttachmentDefinition",
            "metadata": {"name": nad.name, "namespace": "default"},
            "spec": {"config": config.to_string()},
        });
        cluster.kubectl_stdin(&["apply", "-f", "-"], &manifest.to_string())?;
    }
    Ok(())
}

fn pod(name: &str, node: &str, side: &Side, group: &str) -> String {
    let annotations = match &side.nad {
        Some(nad) => format!("\n  annotations:\n    {NETWORKS}: {}", nad.name),
        None => String::new(),
    };
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\n  labels:\n    \
         bench: {group}{annotations}\nspec:\n  nodeName: {node}\n  terminationGracePeriodSeconds: 1\n  \
         containers:\n  - name: main\n    image: {BUSYBOX_IMAGE}\n    imagePullPolicy: \
         IfNotPresent\n    command: [\"/bin/sleep\", \"3600\"]\n"
    )
}

/// The pod's `net1` was made by the side's plugins (and the baseline's pod has none).
fn check_side(cluster: &Cluster, side: &Side, pod: &str) -> Result<()> {
    let node = cluster.node(0);
    match &side.nad {
        Some(nad) => {
            if veth_is_ours(cluster, node, pod, "net1")? != nad.ours {
                bail!("{pod}'s net1 was meant to come from {}", side.label);
            }
        }
        None => {
            let links = cluster.kubectl(&["exec", pod, "--", "ls", "/sys/class/net"])?;
            if links.split_whitespace().any(|l| l == "net1") {
                bail!("{pod} has a net1 but asked for no extra network");
            }
        }
    }
    Ok(())
}

/// What the nodes hold of the benchmark's networks: each port of the sides' bridges and the
/// pod bridge, and each lease of their networks.
fn held(cluster: &Cluster, sides: &[Side]) -> Result<BTreeSet<String>> {
    let mut networks = vec![(POD_BRIDGE, "kube-tier")];
    networks.extend(
        sides
            .iter()
            .filter_map(|s| s.nad.as_ref())
            .map(|nad| (nad.bridge, nad.name)),
    );
    let mut held = BTreeSet::new();
    for node in cluster.nodes() {
        for (bridge, network) in &networks {
            // A bridge not made on this node yet has no ports.
            for (port, _) in node.bridge_ports(bridge).unwrap_or_default() {
                held.insert(format!("{}: port {port} on {bridge}", node.name()));
            }
            for lease in node.leases(network) {
                held.insert(format!("{}: lease {lease} of {network}", node.name()));
            }
        }
    }
    Ok(held)
}

/// Until the nodes hold nothing of the benchmark's networks beyond `before` (the operator's
/// pods are on the pod network too).
fn wait_clean(
    cluster: &Cluster,
    sides: &[Side],
    before: &BTreeSet<String>,
    timeout: Duration,
) -> Result<f64> {
    let started = Instant::now();
    let mut left = Vec::new();
    wait_for("the nodes to be clean", timeout, || {
        left = held(cluster, sides)?
            .difference(before)
            .cloned()
            .collect::<Vec<_>>();
        Ok(left.is_empty().then_some(()))
    })
    .with_context(|| format!("still there: {}", left.join("; ")))?;
    Ok(started.elapsed().as_secs_f64())
}

/// `count` pods of `side` at once, alternating between the nodes: seconds until all run,
/// sandbox failures among them, and seconds from their deletion until the nodes are clean.
fn run_burst(
    cluster: &Cluster,
    sides: &[Side],
    side: &Side,
    before: &BTreeSet<String>,
    count: usize,
) -> Result<(f64, usize, f64)> {
    let prefix = format!("burst-{}", side.prefix);
    let nodes = cluster.nodes();
    let manifests: Vec<String> = (0..count)
        .map(|i| {
            let node = nodes[i % nodes.len()].name();
            pod(&format!("{prefix}-{i}"), node, side, &prefix)
        })
        .collect();
    let started = Instant::now();
    cluster.kubectl_stdin(&["apply", "-f", "-"], &manifests.join("---\n"))?;
    let selector = format!("bench={prefix}");
    wait_for(
        &format!("{count} pods Running"),
        Duration::from_secs(600),
        || {
            let list = cluster.get_json(&["get", "pods", "-l", &selector])?;
            let running = list["items"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|p| p["status"]["phase"] == "Running")
                .count();
            Ok((running == count).then_some(()))
        },
    )?;
    let all_running = started.elapsed().as_secs_f64();
    let failures = sandbox_failures(cluster, &format!("{prefix}-"))?;
    cluster.kubectl(&["delete", "pods", "-l", &selector, "--wait=false"])?;
    let clean = wait_clean(cluster, sides, before, Duration::from_secs(600))?;
    Ok((all_running, failures, clean))
}

/// Each side's median and p95, ours over Go's, and what each extra network adds to the
/// baseline's median.
fn print_latency(what: &str, sides: &[Side], samples: &BTreeMap<&str, Vec<f64>>) {
    let of = |side: &Side| Latency::of(&samples[side.prefix]);
    let (base, ours, go) = (of(&sides[0]), of(&sides[1]), of(&sides[2]));
    println!("  {what}:");
    for (side, l) in sides.iter().zip([base, ours, go]) {
        println!("    {}: {l}", side.label);
    }
    println!(
        "    ours/Go median {:.2}x, p95 {:.2}x (goal: at most 0.8x); the extra network adds to \
         the median: ours {:.0} ms, Go {:.0} ms",
        ours.median / go.median,
        ours.p95 / go.p95,
        ours.median - base.median,
        go.median - base.median
    );
}
