//! The admission table: a pod create's time in the API server with the webhook and without,
//! and where the difference goes.

use anyhow::{bail, Result};

use kube_tier::image::BUSYBOX_IMAGE;
use kube_tier::Cluster;

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
    // Kubernetes 1.20 serves PodDisruptionBudgets as policy/v1beta1 only: asked, as the
    // operator asks discovery.
    let versions = cluster.kubectl(&["api-versions"])?;
    let cluster_info = ClusterInfo {
        pdb_v1beta1: !versions.lines().any(|v| v.trim() == "policy/v1"),
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

pub fn admission(cluster: &Cluster, creates: usize) -> Result<()> {
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
    let mut calls: std::collections::BTreeMap<&str, Seconds> = Default::default();
    let mut n = 0;
    while n < creates {
        let mut order = [WITH, PASSED, WITHOUT];
        order.rotate_left((n / 10) % 3);
        for ns in order {
            let before = webhook_seconds(cluster)?;
            for i in n..n + 10 {
                let yaml = parked(&format!("p-{i}"), ns);
                let out = cluster.kubectl_stdin(&["create", "-o", "json", "-f", "-"], &yaml)?;
                if ns == WITH && !out.contains("\\\"mac\\\"") {
                    bail!("the webhook gave p-{i} no MAC: {out}");
                }
            }
            let after = webhook_seconds(cluster)?;
            calls.entry(ns).or_default().add(&after.since(&before));
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
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let base = mean(&without);
    let call = |ns: &str| calls.get(ns).copied().unwrap_or_default();
    println!();
    println!("| where a create's added time goes (means, ms) | a MAC given | nothing to give |");
    println!("|---|---|---|");
    println!(
        "| the create with the webhook, less the create without ({base:.2} ms) | {:.2} | {:.2} |",
        mean(&with) - base,
        mean(&passed) - base
    );
    println!(
        "| the API server's call to the webhook (apiserver_admission_webhook_admission_duration_seconds) | {:.2} | {:.2} |",
        call(WITH).api_server_ms(),
        call(PASSED).api_server_ms()
    );
    println!(
        "| of the call, the manager's own answer (kubemacpool_admission_duration_seconds) | {:.3} | {:.3} |",
        call(WITH).ours_ms(),
        call(PASSED).ours_ms()
    );
    println!(
        "| the API server's work besides the call (the review, the patch, the object again) | {:.2} | {:.2} |",
        mean(&with) - base - call(WITH).api_server_ms(),
        mean(&passed) - base - call(PASSED).api_server_ms()
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

/// Webhook time summed over calls: as the API server counts it, and as the managers do.
#[derive(Clone, Copy, Default)]
struct Seconds {
    api_server: (f64, f64),
    ours: (f64, f64),
}

impl Seconds {
    fn since(&self, before: &Seconds) -> Seconds {
        Seconds {
            api_server: (
                self.api_server.0 - before.api_server.0,
                self.api_server.1 - before.api_server.1,
            ),
            ours: (self.ours.0 - before.ours.0, self.ours.1 - before.ours.1),
        }
    }

    fn add(&mut self, other: &Seconds) {
        self.api_server.0 += other.api_server.0;
        self.api_server.1 += other.api_server.1;
        self.ours.0 += other.ours.0;
        self.ours.1 += other.ours.1;
    }

    fn api_server_ms(&self) -> f64 {
        self.api_server.0 / self.api_server.1.max(1.0) * 1000.0
    }

    fn ours_ms(&self) -> f64 {
        self.ours.0 / self.ours.1.max(1.0) * 1000.0
    }
}

/// The `_sum` and `_count` of the metric `name` in Prometheus text, added over the series
/// whose labels contain `labels`.
fn sum_and_count(text: &str, name: &str, labels: &str) -> (f64, f64) {
    let value = |suffix: &str| -> f64 {
        let series = format!("{name}{suffix}");
        text.lines()
            .filter(|l| l.starts_with(&series) && l.contains(labels))
            .filter(|l| l[series.len()..].starts_with(['{', ' ']))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    (value("_sum"), value("_count"))
}

/// The pod webhook's time so far: the API server's metric, and every manager replica's.
fn webhook_seconds(cluster: &Cluster) -> Result<Seconds> {
    let metrics = cluster.kubectl(&["get", "--raw", "/metrics"])?;
    let api_server = sum_and_count(
        &metrics,
        "apiserver_admission_webhook_admission_duration_seconds",
        "name=\"mutatepods.kubemacpool.io\"",
    );
    let namespace = network_addons_operator::settings::Settings::defaults().namespace;
    let pods = cluster.kubectl(&[
        "get",
        "pods",
        "-n",
        &namespace,
        "-l",
        "control-plane=mac-controller-manager",
        "-o",
        "jsonpath={.items[*].status.podIP}",
    ])?;
    // The managers answer /metrics (on their metrics port) to a token allowed to get it.
    let reader = kube_tier::metrics::admin_token(cluster)?;
    let mut ours = (0.0, 0.0);
    for ip in pods.split_whitespace() {
        let (sum, count) = sum_and_count(
            &kube_tier::metrics::scrape(&format!("{ip}:8443"), &reader)?,
            "kubemacpool_admission_duration_seconds",
            "",
        );
        ours = (ours.0 + sum, ours.1 + count);
    }
    Ok(Seconds { api_server, ours })
}
