//! What users feel at pod start, on the cluster tier: the node's pod network made by our
//! `bridge` + `tuning`, and by the Go reference plugins' (`$GO_PLUGINS_DIR`, 1.9.1 from
//! `scripts/go-plugins-1.9.1`; Debian's /usr/lib/cni without it), on the same node, the same
//! pods, the same `host-local`, interleaved in blocks of ten. Printed, not asserted:
//! - pod start, one pod at a time: the sandbox's creation as containerd logs it
//!   (`RunPodSandbox` to its return: the network namespace, the CNI ADD, the pause container)
//!   and `kubectl apply` to the pod seen Running, median and 95th percentile, ours over Go's;
//! - a burst of pods created at once: until all run, and how many sandboxes failed;
//! - deleting the burst: until the node holds none of its ports and leases.
//!
//! `cargo bench -p kube-tier --bench pod_start` as root, after scripts/build-plugins and
//! scripts/kube-build; `BENCH_PODS` pods per side (default 100), `BENCH_BURST` (default 60).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use kube_tier::cluster::POD_NETWORK_CONF;
use kube_tier::daemon::wait_for;
use kube_tier::image::BUSYBOX_IMAGE;
use kube_tier::measure::{
    sandbox_failures, sandbox_times, sandbox_times_of, veth_is_ours, wait_running, Latency,
};
use kube_tier::node::{Node, POD_BRIDGE};
use kube_tier::Cluster;

const BLOCK: usize = 10;

/// One side of the comparison: the plugin types its conflist names.
struct Side {
    label: String,
    bridge: &'static str,
    tuning: &'static str,
    ours: bool,
}

fn main() -> ExitCode {
    match bench() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            println!("pod start: FAILED: {e:#}");
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
    let mut cluster = Cluster::start(&kube_tier::kube_bin()?, &repo, 1)?;
    let result = run(&cluster, &go_dir, &go_version, pods, burst);
    for e in cluster.teardown() {
        eprintln!("kube-tier: teardown: {e}");
    }
    result
}

fn run(
    cluster: &Cluster,
    go_dir: &Path,
    go_version: &str,
    pods: usize,
    burst: usize,
) -> Result<()> {
    let node = cluster.node(0);
    let bin = node.host_path("/opt/cni/bin");
    for (from, to) in [("bridge", "go-bridge"), ("tuning", "go-tuning")] {
        std::fs::copy(go_dir.join(from), bin.join(to))
            .with_context(|| format!("copy the Go {from}"))?;
    }
    let sides = [
        Side {
            label: "ours".into(),
            bridge: "bridge",
            tuning: "tuning",
            ours: true,
        },
        Side {
            label: format!("Go {go_version}"),
            bridge: "go-bridge",
            tuning: "go-tuning",
            ours: false,
        },
    ];
    println!(
        "pod start on the cluster tier: {pods} pods per side one at a time (blocks of {BLOCK}, \
         interleaved), a burst of {burst}; ours against the Go plugins in {}",
        go_dir.display()
    );

    // One pod at a time.
    let mut applied: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut names: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for block in 0..pods / BLOCK {
        for side in &sides {
            use_side(node, side)?;
            for i in 0..BLOCK {
                let name = format!("{}-{block}-{i}", if side.ours { "ours" } else { "go" });
                let started = Instant::now();
                cluster.kubectl_stdin(&["apply", "-f", "-"], &pod(&name, node.name(), "single"))?;
                wait_running(cluster, &name)?;
                applied
                    .entry(side.label.clone())
                    .or_default()
                    .push(started.elapsed().as_secs_f64() * 1000.0);
                if i == 0 {
                    check_side(cluster, node, side, &name)?;
                }
                cluster.kubectl(&["delete", "pod", &name, "--wait=false"])?;
                names.entry(side.label.clone()).or_default().push(name);
            }
        }
    }
    wait_clean(node, Duration::from_secs(180))?;
    let sandbox = sandbox_times(&cluster.log_path(&cluster.daemon_name(0, "containerd")))?;
    let ours_sandbox = sandbox_times_of(&sandbox, &names[&sides[0].label])?;
    let go_sandbox = sandbox_times_of(&sandbox, &names[&sides[1].label])?;
    print_latency(
        "sandbox created (containerd's RunPodSandbox)",
        &sides,
        &ours_sandbox,
        &go_sandbox,
    );
    print_latency(
        "kubectl apply to pod Running",
        &sides,
        &applied[&sides[0].label],
        &applied[&sides[1].label],
    );

    // A burst, then its deletion.
    let mut bursts = Vec::new();
    for side in &sides {
        use_side(node, side)?;
        bursts.push(run_burst(cluster, node, side, burst)?);
    }
    for (side, (all_running, failures, clean)) in sides.iter().zip(&bursts) {
        println!(
            "  burst of {burst} ({}): all Running in {all_running:.1} s, {failures} sandbox \
             failures; deleted: node clean {clean:.1} s later",
            side.label
        );
    }
    println!(
        "  burst ours/Go: until all Running {:.2}x, until the node is clean after deletion {:.2}x \
         (goal: no failure)",
        bursts[0].0 / bursts[1].0,
        bursts[0].2 / bursts[1].2
    );
    Ok(())
}

fn pod(name: &str, node: &str, group: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\n  labels:\n    \
         bench: {group}\nspec:\n  nodeName: {node}\n  terminationGracePeriodSeconds: 1\n  \
         containers:\n  - name: main\n    image: {BUSYBOX_IMAGE}\n    imagePullPolicy: IfNotPresent\n    \
         command: [\"/bin/sleep\", \"3600\"]\n"
    )
}

/// Points the node's pod network at `side`'s plugins: the node's bridge config (same bridge and
/// IPAM), then tuning with a sysctl, as a conflist in place of the node's `.conf`; and gives
/// containerd time to read it.
fn use_side(node: &Node, side: &Side) -> Result<()> {
    let conf = node.host_path(POD_NETWORK_CONF);
    let list = conf.with_extension("conflist");
    let mut bridge: Value = match std::fs::read(&conf) {
        Ok(bytes) => serde_json::from_slice(&bytes)?,
        Err(_) => serde_json::from_slice::<Value>(&std::fs::read(&list)?)?["plugins"][0].clone(),
    };
    bridge["type"] = json!(side.bridge);
    let conflist = json!({
        "cniVersion": bridge["cniVersion"],
        "name": bridge["name"],
        "plugins": [
            bridge,
            {"type": side.tuning, "sysctl": {"net.ipv4.conf.IFNAME.accept_redirects": "0"}},
        ],
    });
    let tmp = list.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(&conflist)?)?;
    std::fs::rename(&tmp, &list)?;
    match std::fs::remove_file(&conf) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
        _ => {}
    }
    std::thread::sleep(Duration::from_secs(2));
    Ok(())
}

/// The pod's host veth says whose bridge made it.
fn check_side(cluster: &Cluster, node: &Node, side: &Side, pod: &str) -> Result<()> {
    if veth_is_ours(cluster, node, pod, "eth0")? != side.ours {
        bail!("{pod} was meant to get its network from {}", side.label);
    }
    Ok(())
}

/// Until the node holds no pod's port on the pod bridge nor any lease.
fn wait_clean(node: &Node, timeout: Duration) -> Result<f64> {
    let started = Instant::now();
    wait_for("the node to be clean", timeout, || {
        let ports = node.bridge_ports(POD_BRIDGE)?;
        Ok((ports.is_empty() && node.leases("kube-tier").is_empty()).then_some(()))
    })?;
    Ok(started.elapsed().as_secs_f64())
}

/// `count` pods at once: seconds until all run, sandbox failures among them, and seconds from
/// their deletion until the node is clean.
fn run_burst(
    cluster: &Cluster,
    node: &Node,
    side: &Side,
    count: usize,
) -> Result<(f64, usize, f64)> {
    let prefix = if side.ours { "burst-ours" } else { "burst-go" };
    let manifests: Vec<String> = (0..count)
        .map(|i| pod(&format!("{prefix}-{i}"), node.name(), prefix))
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
    let clean = wait_clean(node, Duration::from_secs(600))?;
    Ok((all_running, failures, clean))
}

fn print_latency(what: &str, sides: &[Side], ours: &[f64], go: &[f64]) {
    let (o, g) = (Latency::of(ours), Latency::of(go));
    println!(
        "  {what}: {} {o}; {} {g}; ours/Go median {:.2}x, p95 {:.2}x (goal: at most 0.8x)",
        sides[0].label,
        sides[1].label,
        o.median / g.median,
        o.p95 / g.p95
    );
}
