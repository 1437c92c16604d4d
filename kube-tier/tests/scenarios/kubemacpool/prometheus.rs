//! A real Prometheus (Debian's, from scripts/prometheus) scraping the managers as the rendered
//! ServiceMonitor does and evaluating the rendered PrometheusRule: the tier runs no Prometheus
//! operator, so the rule file and the scrape targets are written from what the operator
//! renders and from the live manager pods.

use std::process::Command;

use kube_tier::daemon::Daemon;

use super::*;

/// Where it listens, in the control plane's namespace.
const LISTEN: &str = "127.0.0.1:19090";

pub struct Prometheus {
    _daemon: Daemon,
}

impl Prometheus {
    /// Starts Prometheus on the rendered alert rules, scraping every live manager's metrics port
    /// (8443, HTTPS, the webhook's certificate, as the ServiceMonitor has it) every 2 s.
    pub fn start(ctx: &Ctx) -> Result<Prometheus> {
        let binary = std::env::var("PROMETHEUS").context(
            "PROMETHEUS is not set: it names Debian's prometheus binary (scripts/prometheus \
             prints it; scripts/test sets it), which checks that the collision alert fires",
        )?;
        let dir = ctx.cluster.base().join("prometheus");
        std::fs::create_dir_all(dir.join("data"))?;
        let rules = dir.join("rules.json");
        std::fs::write(&rules, rendered_rules()?.to_string())?;
        let targets: Vec<String> = live_managers_field(ctx, "/status/podIP")?
            .into_iter()
            .map(|ip| format!("{ip}:8443"))
            .collect();
        let config = serde_json::json!({
            "global": {"scrape_interval": "2s", "evaluation_interval": "2s"},
            "rule_files": [rules],
            "scrape_configs": [{
                "job_name": "kubemacpool",
                "scheme": "https",
                "tls_config": {"insecure_skip_verify": true},
                "static_configs": [{"targets": targets}],
            }],
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
        println!("    Prometheus scraping {targets:?}, on the rendered rules");
        Ok(Prometheus { _daemon: daemon })
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

/// The PrometheusRule's groups, as the operator renders them where the Prometheus operator is
/// served: a rule file is the same `groups` list.
fn rendered_rules() -> Result<Value> {
    use network_addons_operator::cluster::ClusterInfo;
    use network_addons_operator::settings::Settings;
    use network_addons_operator::spec::{KubeMacPool, NetworkAddonsConfigSpec};
    let spec = NetworkAddonsConfigSpec {
        kube_mac_pool: Some(KubeMacPool {
            range_start: RANGE_START.into(),
            range_end: RANGE_END.into(),
        }),
        ..NetworkAddonsConfigSpec::default()
    };
    let cluster = ClusterInfo {
        monitoring: true,
        ..ClusterInfo::default()
    };
    let objects = network_addons_operator::render::render(&spec, &Settings::defaults(), &cluster)?;
    let rule = objects
        .into_iter()
        .find(|r| r.object["kind"] == "PrometheusRule")
        .context("the operator rendered no PrometheusRule")?;
    Ok(rule.object["spec"].clone())
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
