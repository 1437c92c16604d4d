//! The start table: a manager's time from its start to ready, and its memory, with 10,000
//! VMs and 10,000 pods already in the API.

use std::process::Child;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use kube_tier::daemon::wait_for;
use kube_tier::image::BUSYBOX_IMAGE;
use kube_tier::Cluster;

use super::{get, spawn, stop, NAMESPACE};

const BATCH: usize = 500;
const ROUNDS: usize = 5;
/// Upstream's startup at 10,000 VMs, as its issue reports it.
const UPSTREAM_SECONDS_AT_10K_VMS: f64 = 80.0;

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

/// How long the API server takes to answer `path` alone, with nothing decoding it: the median
/// of three `kubectl get --raw`, less the median of three of `/healthz` (kubectl's own start).
fn api_server_answer(cluster: &Cluster, path: &str) -> Result<f64> {
    let median = |path: &str| -> Result<f64> {
        let mut took = Vec::new();
        for _ in 0..3 {
            let t = Instant::now();
            cluster.kubectl(&["get", "--raw", path])?;
            took.push(t.elapsed().as_secs_f64());
        }
        took.sort_by(f64::total_cmp);
        Ok(took[1])
    };
    Ok(median(path)? - median("/healthz")?)
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

pub fn run(
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

    let vm_list = api_server_answer(
        cluster,
        "/apis/kubevirt.io/v1/virtualmachines?resourceVersion=0&resourceVersionMatch=NotOlderThan&limit=500",
    )?;
    println!(
        "  the API server's answer to the manager's VM list alone (kubectl get --raw, less a /healthz): {:.2} s",
        vm_list
    );

    let mut ready = Vec::new();
    let mut rss = Vec::new();
    // The manager answers /metrics to a token allowed to get it.
    let reader = kube_tier::metrics::admin_token(cluster)?;
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
            let held = kube_tier::metrics::scrape(&format!("127.0.0.1:{metrics}"), &reader)
                .ok()
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
