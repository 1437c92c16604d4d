//! A real Prometheus (Debian's, from scripts/prometheus) scraping what the rendered
//! ServiceMonitors scrape and evaluating the rendered PrometheusRules: the tier runs no
//! Prometheus operator, so the rule file and the scrape targets are written from what the
//! operator renders and from the live pods. Every target is scraped as the ServiceMonitors have
//! it: HTTPS, the certificate not verified, the scraper's ServiceAccount token as the bearer
//! token (the account the rendered metrics-reader binding names).

use std::process::Command;

use kube_tier::daemon::Daemon;
use kube_tier::metrics::{service_targets, OPERATOR_METRICS_PORT, OPERATOR_METRICS_SERVICE};

use super::*;

/// Where it listens, in the control plane's namespace.
const LISTEN: &str = "127.0.0.1:19090";

pub struct Prometheus {
    _daemon: Daemon,
    /// The scrape jobs and their targets.
    pub jobs: Vec<(&'static str, Vec<String>)>,
}

impl Prometheus {
    /// Starts Prometheus on the rendered alert rules, scraping every 2 s: the live managers'
    /// metrics port (job `kubemacpool`), and the endpoints of the operator's metrics Service,
    /// the operator's pods (job `operator`) and the node agents (job `node-agents`).
    pub fn start(ctx: &Ctx) -> Result<Prometheus> {
        let binary = std::env::var("PROMETHEUS").context(
            "PROMETHEUS is not set: it names Debian's prometheus binary (scripts/prometheus \
             prints it; scripts/test sets it), which checks that the collision alert fires",
        )?;
        let dir = ctx.cluster.base().join("prometheus");
        // A fresh store: samples of an earlier run's targets would still count for 5 minutes.
        let _ = std::fs::remove_dir_all(dir.join("data"));
        std::fs::create_dir_all(dir.join("data"))?;
        let rules = dir.join("rules.json");
        std::fs::write(&rules, super::rules::rendered_rule_groups()?.to_string())?;
        let token_file = dir.join("token");
        std::fs::write(&token_file, ctx.scraper_token()?)?;
        let operator_port = format!(":{OPERATOR_METRICS_PORT}");
        let (operators, agents): (Vec<Target>, Vec<Target>) =
            service_targets(&ctx.cluster, NAMESPACE, OPERATOR_METRICS_SERVICE)?
                .into_iter()
                .partition(|(address, _)| address.ends_with(&operator_port));
        let targets = vec![
            ("kubemacpool", manager_targets(ctx)?),
            ("operator", operators),
            ("node-agents", agents),
        ];
        let scrape_configs: Vec<Value> = targets
            .iter()
            .map(|(job, targets)| {
                // Labelled as a ServiceMonitor's targets are, which the rendered rules select
                // by (`up{namespace=.., pod=~..}`).
                let static_configs: Vec<Value> = targets
                    .iter()
                    .map(|(address, pod)| {
                        serde_json::json!({
                            "targets": [address],
                            "labels": {"namespace": NAMESPACE, "pod": pod},
                        })
                    })
                    .collect();
                serde_json::json!({
                    "job_name": job,
                    "scheme": "https",
                    "bearer_token_file": token_file,
                    "tls_config": {"insecure_skip_verify": true},
                    "static_configs": static_configs,
                })
            })
            .collect();
        let jobs: Vec<(&'static str, Vec<String>)> = targets
            .into_iter()
            .map(|(job, targets)| (job, targets.into_iter().map(|(a, _)| a).collect()))
            .collect();
        let config = serde_json::json!({
            "global": {"scrape_interval": "2s", "evaluation_interval": "2s"},
            "rule_files": [rules],
            "scrape_configs": scrape_configs,
        });
        let config_file = dir.join("prometheus.json");
        std::fs::write(&config_file, config.to_string())?;
        let mut cmd = Command::new(binary);
        cmd.arg(format!("--config.file={}", config_file.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={LISTEN}"));
        let daemon = Daemon::spawn("prometheus", cmd, &ctx.cluster.base().join("logs"))?;
        wait_for("Prometheus to be ready", Duration::from_secs(60), || {
            Ok(curl(&format!("http://{LISTEN}/-/ready")).map(drop))
        })?;
        println!(
            "    Prometheus scraping {jobs:?} with the scraper's token, on the rendered rules"
        );
        Ok(Prometheus {
            _daemon: daemon,
            jobs,
        })
    }

    /// The state of alert `name` (`pending`, `firing`), or None while it is inactive.
    pub fn alert(&self, name: &str) -> Result<Option<String>> {
        let Some(body) = curl(&format!("http://{LISTEN}/api/v1/alerts")) else {
            return Ok(None);
        };
        let alerts: Value = serde_json::from_str(&body)?;
        Ok(alerts["data"]["alerts"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|a| a["labels"]["alertname"] == name)
            .and_then(|a| a["state"].as_str().map(str::to_string)))
    }
}

impl Prometheus {
    /// The value of an instant query that gives one sample, or None while it gives none.
    pub fn query(&self, expr: &str) -> Result<Option<f64>> {
        let url = format!("http://{LISTEN}/api/v1/query?query={}", url_encoded(expr));
        let Some(body) = curl(&url) else {
            return Ok(None);
        };
        let answer: Value = serde_json::from_str(&body)?;
        let samples = answer["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        match samples.as_slice() {
            [] => Ok(None),
            [one] => Ok(one["value"][1].as_str().and_then(|v| v.parse().ok())),
            more => anyhow::bail!("{expr} gave {} samples: {more:?}", more.len()),
        }
    }
}

/// `s` as a query string value: everything but unreserved characters percent-encoded.
fn url_encoded(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A scrape target: its `IP:PORT`, and the pod behind it.
type Target = (String, String);

/// The metrics port of every manager replica that is not terminating, with its pod's name.
fn manager_targets(ctx: &Ctx) -> Result<Vec<Target>> {
    Ok(live_manager_pods(ctx)?
        .iter()
        .filter_map(|p| {
            let ip = p["status"]["podIP"].as_str()?;
            let name = p["metadata"]["name"].as_str()?;
            Some((format!("{ip}:{MANAGER_METRICS_PORT}"), name.to_string()))
        })
        .collect())
}

fn curl(url: &str) -> Option<String> {
    let out = Command::new("curl")
        .args(["-sf", "--max-time", "2", url])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}
