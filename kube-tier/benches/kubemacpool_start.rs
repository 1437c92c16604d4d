//! KubeMacPool's allocator on the cluster tier, two tables:
//! - admission: a pod create's time in the API server (its audit log's received-to-complete),
//!   `BENCH_CREATES` creates (default 200) in an opted-in namespace, where the webhook gives the
//!   pod a MAC, against as many in a namespace without the webhook, interleaved in blocks of 10;
//!   the managers deployed in the cluster as the operator renders them;
//! - start at scale: how long a manager takes from its start to `/readyz` answering 200, and
//!   its memory then, with `BENCH_VMS` VirtualMachines and `BENCH_PODS` pods (default 10,000
//!   each, every one holding a MAC) already in the API. Upstream's figure to stand beside (it
//!   cannot run here): about 80 s at 10,000 VMs (k8snetworkplumbingwg/kubemacpool#555), its
//!   webhook refusing every admission meanwhile. The manager and the cert manager run as
//!   processes of this benchmark against the tier's API server (the binaries
//!   scripts/build-plugins put in target/operator/), so the time is the process's own: exec to
//!   the first 200 of `/readyz`, read over HTTPS every 10 ms.
//!
//! `cargo bench -p kube-tier --bench kubemacpool_start` as root, after scripts/build-plugins
//! and scripts/kube-build.

use std::process::{Child, Command, ExitCode};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use kube_tier::daemon::wait_for;
use kube_tier::image::BUSYBOX_IMAGE;
use kube_tier::Cluster;

const NAMESPACE: &str = "kmp-bench";
const BATCH: usize = 500;
const ROUNDS: usize = 5;
/// Upstream's startup at 10,000 VMs, as its issue reports it.
const UPSTREAM_SECONDS_AT_10K_VMS: f64 = 80.0;

fn main() -> ExitCode {
    match bench() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            println!("kubemacpool start: FAILED: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn bench() -> Result<()> {
    if !nix::unistd::Uid::effective().is_root() {
        bail!("the benchmark needs root (it runs a cluster)");
    }
    let creates = kube_tier::env_count("BENCH_CREATES", 200)?.max(20);
    let vms = kube_tier::env_count("BENCH_VMS", 10_000)?;
    let pods = kube_tier::env_count("BENCH_PODS", 10_000)?;
    let repo = kube_tier::repo();
    let binary = repo.join("target/operator/kubemacpool");
    if !binary.is_file() {
        bail!("{} is missing: run scripts/build-plugins", binary.display());
    }
    let mut cluster = Cluster::start(&kube_tier::kube_bin()?, &repo, 1)?;
    let mut children = Vec::new();
    let result = admission(&cluster, creates)
        .and_then(|()| run(&cluster, &binary, vms, pods, &mut children));
    for mut c in children {
        stop(&mut c);
    }
    // One deletecollection each, in the API server: the teardown's pod by pod deletion of
    // 10,000 pods would take minutes.
    for collection in [
        format!("/api/v1/namespaces/{NAMESPACE}/pods"),
        format!("/apis/kubevirt.io/v1/namespaces/{NAMESPACE}/virtualmachines"),
    ] {
        let _ = cluster.kubectl(&["delete", "--raw", &collection]);
    }
    for e in cluster.teardown() {
        eprintln!("kube-tier: teardown: {e}");
    }
    result
}

fn stop(child: &mut Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let _ = child.wait();
}

fn mac(prefix: u8, n: usize) -> String {
    format!(
        "02:{prefix:02x}:00:{:02x}:{:02x}:{:02x}",
        (n >> 16) & 0xff,
        (n >> 8) & 0xff,
        n & 0xff
    )
}

fn pod(n: usize) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"p{n}","namespace":"{NAMESPACE}","annotations":{{"k8s.v1.cni.cncf.io/networks":"[{{\"name\":\"br1\",\"mac\":\"{}\"}}]"}}}},"spec":{{"schedulerName":"kmp-none","containers":[{{"name":"main","image":"{BUSYBOX_IMAGE}"}}]}}}}"#,
        mac(0x40, n)
    )
}

fn vm(n: usize) -> String {
    format!(
        r#"{{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{{"name":"vm{n}","namespace":"{NAMESPACE}"}},"spec":{{"running":false,"template":{{"spec":{{"domain":{{"devices":{{"interfaces":[{{"name":"default","masquerade":{{}}}},{{"name":"br1","bridge":{{}},"macAddress":"{}"}}]}}}},"networks":[{{"name":"default","pod":{{}}}},{{"name":"br1","multus":{{"networkName":"br1"}}}}]}}}}}}}}"#,
        mac(0x41, n)
    )
}

/// Creates `count` objects made by `make`, in lists of [`BATCH`], four `kubectl create` at once.
fn create_all(cluster: &Cluster, count: usize, make: fn(usize) -> String) -> Result<()> {
    let batches: Vec<(usize, usize)> = (0..count)
        .step_by(BATCH)
        .map(|s| (s, (s + BATCH).min(count)))
        .collect();
    for group in batches.chunks(4) {
        std::thread::scope(|s| -> Result<()> {
            let handles: Vec<_> = group
                .iter()
                .map(|&(a, b)| {
                    s.spawn(move || {
                        let items: Vec<String> = (a..b).map(make).collect();
                        let list = format!(
                            r#"{{"apiVersion":"v1","kind":"List","items":[{}]}}"#,
                            items.join(",")
                        );
                        cluster
                            .kubectl_stdin(&["create", "-o", "name", "-f", "-"], &list)
                            .map(drop)
                    })
                })
                .collect();
            for h in handles {
                h.join()
                    .map_err(|_| anyhow::anyhow!("a batch panicked"))??;
            }
            Ok(())
        })?;
    }
    Ok(())
}

const WITH: &str = "kmp-admission-with";
/// Opted in too, but its pods' annotation is in the comma form, which the webhook passes
/// unchanged: the cost of the webhook call itself, with nothing to allocate or patch.
const PASSED: &str = "kmp-admission-passed";
const WITHOUT: &str = "kmp-admission-without";
const MANAGER: &str = "kubemacpool-mac-controller-manager";

/// The kubeMacPool component as the operator renders it, applied: the managers, their Service
/// and the webhook.
fn deploy_in_cluster(cluster: &Cluster) -> Result<Vec<String>> {
    use network_addons_operator::cluster::ClusterInfo;
    use network_addons_operator::settings::Settings;
    use network_addons_operator::spec::{KubeMacPool, NetworkAddonsConfigSpec};
    let spec = NetworkAddonsConfigSpec {
        kube_mac_pool: Some(KubeMacPool {
            range_start: "02:50:00:00:00:00".into(),
            range_end: "02:50:00:ff:ff:ff".into(),
        }),
        ..NetworkAddonsConfigSpec::default()
    };
    let settings = Settings::defaults();
    // The tier's Kubernetes 1.20 serves PodDisruptionBudgets as policy/v1beta1 only.
    let cluster_info = ClusterInfo {
        pdb_v1beta1: true,
        ..ClusterInfo::default()
    };
    let objects = network_addons_operator::render::render(&spec, &settings, &cluster_info)?;
    let mut applied = Vec::new();
    for r in objects {
        cluster.kubectl_stdin(&["apply", "-f", "-"], &r.object.to_string())?;
        applied.push(r.object.to_string());
    }
    cluster.kubectl(&[
        "rollout",
        "status",
        "deployment",
        MANAGER,
        "-n",
        &settings.namespace,
        "--timeout=180s",
    ])?;
    Ok(applied)
}

/// A pod create's time in the API server, in ms, per namespace, from the audit log.
fn audited_creates(cluster: &Cluster) -> Result<std::collections::BTreeMap<String, Vec<f64>>> {
    let seconds = |t: &str| -> Option<f64> {
        let time = t.split('T').nth(1)?.trim_end_matches('Z');
        let mut parts = time.split(':');
        let (h, m, s) = (parts.next()?, parts.next()?, parts.next()?);
        Some(
            h.parse::<f64>().ok()? * 3600.0
                + m.parse::<f64>().ok()? * 60.0
                + s.parse::<f64>().ok()?,
        )
    };
    let mut out: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for line in std::fs::read_to_string(cluster.audit_log())?.lines() {
        let Ok(e) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let ns = e["objectRef"]["namespace"].as_str().unwrap_or_default();
        if e["verb"] != "create"
            || e["stage"] != "ResponseComplete"
            || ![WITH, PASSED, WITHOUT].contains(&ns)
        {
            continue;
        }
        let (Some(a), Some(b)) = (
            e["requestReceivedTimestamp"].as_str().and_then(seconds),
            e["stageTimestamp"].as_str().and_then(seconds),
        ) else {
            continue;
        };
        let took = if b >= a { b - a } else { b + 86_400.0 - a };
        out.entry(ns.to_string()).or_default().push(took * 1000.0);
    }
    Ok(out)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or(f64::NAN)
}

fn admission(cluster: &Cluster, creates: usize) -> Result<()> {
    let applied = deploy_in_cluster(cluster)?;
    cluster.kubectl_stdin(
        &["apply", "-f", "-"],
        &format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {WITH}\n  labels:\n    mutatepods.kubemacpool.io: allocate\n\
             ---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: {PASSED}\n  labels:\n    mutatepods.kubemacpool.io: allocate\n\
             ---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: {WITHOUT}\n"
        ),
    )?;
    let parked = |name: &str, ns: &str| {
        let networks = if ns == PASSED {
            "br1"
        } else {
            r#"[{\"name\":\"br1\"}]"#
        };
        format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"{ns}","annotations":{{"k8s.v1.cni.cncf.io/networks":"{networks}"}}}},"spec":{{"schedulerName":"kmp-none","containers":[{{"name":"main","image":"{BUSYBOX_IMAGE}"}}]}}}}"#
        )
    };
    // Warm both paths (connections, caches), then interleave blocks of ten.
    for (i, ns) in [WITH, PASSED, WITHOUT].iter().cycle().take(30).enumerate() {
        cluster.kubectl_stdin(&["create", "-f", "-"], &parked(&format!("warm-{i}"), ns))?;
    }
    let skip = audited_creates(cluster)?;
    let mut n = 0;
    while n < creates {
        let mut order = [WITH, PASSED, WITHOUT];
        order.rotate_left((n / 10) % 3);
        for ns in order {
            for i in n..n + 10 {
                let yaml = parked(&format!("p-{i}"), ns);
                let out = cluster.kubectl_stdin(&["create", "-o", "json", "-f", "-"], &yaml)?;
                if ns == WITH && !out.contains("\\\"mac\\\"") {
                    bail!("the webhook gave p-{i} no MAC: {out}");
                }
            }
        }
        n += 10;
    }
    let all = audited_creates(cluster)?;
    let measured = |ns: &str| -> Vec<f64> {
        let from = skip.get(ns).map_or(0, Vec::len);
        let mut v: Vec<f64> = all.get(ns).map(|v| v[from..].to_vec()).unwrap_or_default();
        v.sort_by(f64::total_cmp);
        v
    };
    let (with, passed, without) = (measured(WITH), measured(PASSED), measured(WITHOUT));
    if [&with, &passed, &without].iter().any(|v| v.len() < creates) {
        bail!(
            "the audit log has {}, {} and {} creates, not {creates} each",
            with.len(),
            passed.len(),
            without.len()
        );
    }
    let (p50w, p99w, p50o, p99o) = (
        percentile(&with, 0.5),
        percentile(&with, 0.99),
        percentile(&without, 0.5),
        percentile(&without, 0.99),
    );
    let (p50p, p99p) = (percentile(&passed, 0.5), percentile(&passed, 0.99));
    println!("| pod create in the API server, {creates} each | p50 | p99 |");
    println!("|---|---|---|");
    println!("| with the webhook (a MAC given) | {p50w:.2} ms | {p99w:.2} ms |");
    println!(
        "| with the webhook, nothing to give (the call alone) | {p50p:.2} ms | {p99p:.2} ms |"
    );
    println!("| without | {p50o:.2} ms | {p99o:.2} ms |");
    println!(
        "| with / without | {:.2}x | {:.2}x |",
        p50w / p50o,
        p99w / p99o
    );
    println!(
        "| the call alone / without | {:.2}x | {:.2}x |",
        p50p / p50o,
        p99p / p99o
    );
    println!(
        "admission at p50 within 1.1x of no webhook: {}",
        if p50w / p50o <= 1.1 {
            "meets goal"
        } else {
            "misses goal"
        }
    );
    println!();
    // The second table's managers run outside the cluster, with a webhook configuration of
    // their own under the same name.
    for object in applied.iter().rev() {
        let _ = cluster.kubectl_stdin(&["delete", "--ignore-not-found", "-f", "-"], object);
    }
    cluster.kubectl(&["delete", "namespace", WITH, PASSED, WITHOUT, "--wait=false"])?;
    Ok(())
}

/// The webhook configuration the cert manager writes its caBundle into, selecting no namespace:
/// this benchmark's objects are created without it.
fn webhook_configuration() -> String {
    let hook = |name: &str, path: &str| {
        format!(
            "- name: {name}\n  admissionReviewVersions: [v1, v1beta1]\n  sideEffects: NoneOnDryRun\n  \
             failurePolicy: Ignore\n  namespaceSelector:\n    matchLabels:\n      kmp-bench: never\n  \
             clientConfig:\n    service:\n      name: kubemacpool-service\n      namespace: {NAMESPACE}\n      path: {path}\n  \
             rules:\n  - apiGroups: [\"\"]\n    apiVersions: [v1]\n    operations: [CREATE]\n    resources: [pods]\n"
        )
    };
    format!(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata:\n  \
         name: kubemacpool-mutator\nwebhooks:\n{}{}",
        hook("mutatepods.kubemacpool.io", "/mutate-pods"),
        hook("mutatevirtualmachines.kubemacpool.io", "/mutate-virtualmachines")
    )
}

/// Starts `binary` against the tier's API server; its log goes to `<base>/<name>.log`.
fn spawn(cluster: &Cluster, binary: &std::path::Path, args: &[&str], name: &str) -> Result<Child> {
    let log = std::fs::File::create(cluster.base().join(format!("{name}.log")))?;
    Command::new(binary)
        .args(args)
        .env("KUBECONFIG", cluster.kubeconfig())
        .env("POD_NAMESPACE", NAMESPACE)
        .env("POD_NAME", name)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))
}

/// The manager's own account of its start: when each part was done.
fn start_steps(cluster: &Cluster, name: &str) -> String {
    std::fs::read_to_string(cluster.base().join(format!("{name}.log")))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("after_ms"))
        // `<time> INFO kubemacpool::<module>: <message> <fields>`: the message and fields.
        .filter_map(|l| l.split_once(": ").map(|(_, rest)| rest.trim().to_string()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn get(url: &str) -> Option<String> {
    let out = Command::new("curl")
        .args(["-ksf", "--max-time", "1", url])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// How long after `started` `readyz` first answered, asked every 20 ms (a coarser poll would
/// add its period to the figure).
fn ready_within(readyz: &str, started: Instant, timeout: Duration) -> Result<Duration> {
    while started.elapsed() < timeout {
        if get(readyz).is_some() {
            return Ok(started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    anyhow::bail!("{readyz}: not ready within {timeout:?}")
}

/// VmRSS and VmHWM of `pid`, in KiB.
fn memory(pid: u32) -> Result<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    Ok((field("VmRSS:"), field("VmHWM:")))
}

fn run(
    cluster: &Cluster,
    binary: &std::path::Path,
    vms: usize,
    pods: usize,
    children: &mut Vec<Child>,
) -> Result<()> {
    cluster.kubectl_stdin(
        &["apply", "-f", "-"],
        &format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {NAMESPACE}\n{}",
            kube_tier::stand_in::kubevirt_crds()
        ),
    )?;
    wait_for("the VM CRD", Duration::from_secs(30), || {
        Ok(cluster
            .kubectl(&["get", "virtualmachines.kubevirt.io", "-n", NAMESPACE])
            .ok()
            .map(drop))
    })?;
    let t = Instant::now();
    create_all(cluster, pods, pod)?;
    create_all(cluster, vms, vm)?;
    println!(
        "created {pods} pods and {vms} VMs, each holding a MAC, in {:.0} s",
        t.elapsed().as_secs_f64()
    );
    cluster.kubectl_stdin(&["apply", "-f", "-"], &webhook_configuration())?;
    children.push(spawn(
        cluster,
        binary,
        &["cert-manager"],
        "bench-cert-manager",
    )?);
    wait_for("the serving certificate", Duration::from_secs(60), || {
        Ok(cluster
            .kubectl(&["get", "secret", "kubemacpool-service", "-n", NAMESPACE])
            .ok()
            .map(drop))
    })?;
    cluster.kubectl_stdin(
        &["apply", "-f", "-"],
        &format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kubemacpool-mac-range-config\n  namespace: {NAMESPACE}\n\
             data:\n  RANGE_START: \"02:40:00:00:00:00\"\n  RANGE_END: \"02:40:00:ff:ff:ff\"\n"
        ),
    )?;

    let mut ready = Vec::new();
    let mut rss = Vec::new();
    for round in 0..ROUNDS {
        let port = 18000 + round as u16 * 2;
        let (webhook, metrics) = (port.to_string(), (port + 1).to_string());
        let started = Instant::now();
        let mut child = spawn(
            cluster,
            binary,
            &["manager", "--port", &webhook, "--metrics-port", &metrics],
            &format!("bench-manager-{round}"),
        )?;
        let readyz = format!("https://127.0.0.1:{webhook}/readyz");
        let outcome = ready_within(&readyz, started, Duration::from_secs(120));
        let measured = outcome.and_then(|took| {
            let held = get(&format!("https://127.0.0.1:{webhook}/metrics"))
                .and_then(|m| {
                    m.lines()
                        .find_map(|l| l.strip_prefix("kubemacpool_macs_held "))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                })
                .unwrap_or(0);
            let (now, peak) = memory(child.id())?;
            println!(
                "    {}",
                start_steps(cluster, &format!("bench-manager-{round}"))
            );
            println!(
                "  start {}: ready in {:.3} s, {held} MACs held, RSS {} KiB (peak {} KiB)",
                round + 1,
                took.as_secs_f64(),
                now,
                peak
            );
            if held < pods + vms {
                bail!(
                    "the manager holds {held} MACs, not the {} of the objects",
                    pods + vms
                );
            }
            Ok((took, peak))
        });
        stop(&mut child);
        let (took, peak) = measured?;
        ready.push(took.as_secs_f64());
        rss.push(peak);
    }
    ready.sort_by(f64::total_cmp);
    rss.sort_unstable();
    let median = ready[ready.len() / 2];
    let peak_mib = rss[rss.len() - 1] as f64 / 1024.0;
    println!();
    println!("| manager start, {pods} pods + {vms} VMs | ours (median of {ROUNDS}) | upstream (reported, 10,000 VMs) | ours / upstream |");
    println!("|---|---|---|---|");
    println!(
        "| start to ready | {median:.2} s | {UPSTREAM_SECONDS_AT_10K_VMS:.0} s | {:.3}x |",
        median / UPSTREAM_SECONDS_AT_10K_VMS
    );
    println!("| peak RSS | {peak_mib:.1} MiB | (requests 100Mi) | |");
    println!(
        "start to ready under 2 s: {}; peak RSS under 64 MiB: {}",
        if median < 2.0 {
            "meets goal"
        } else {
            "misses goal"
        },
        if peak_mib < 64.0 {
            "meets goal"
        } else {
            "misses goal"
        }
    );
    Ok(())
}
