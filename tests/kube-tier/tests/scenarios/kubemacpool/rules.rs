//! The PrometheusRules the operator renders, as one rule file, and the series they read. An
//! alert whose series nothing serves can never fire, and its `or vector(0)` hides that: so
//! every series a rule reads is looked for in what the tier's Prometheus scraped.

use std::time::Instant;

use super::prometheus::Prometheus;
use super::*;

/// The groups of every PrometheusRule the operator renders for a configuration with KubeMacPool
/// where the Prometheus operator is served: its own (the operator's and KubeMacPool's health)
/// and KubeMacPool's (the collision alert). A rule file is the same `groups` list.
pub fn rendered_rule_groups() -> Result<Value> {
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
    let groups: Vec<Value> = objects
        .into_iter()
        .filter(|o| o.object["kind"] == "PrometheusRule")
        .flat_map(|o| {
            o.object["spec"]["groups"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    anyhow::ensure!(
        groups.len() >= 2,
        "the operator rendered {} PrometheusRule groups, not its own and KubeMacPool's",
        groups.len()
    );
    Ok(serde_json::json!({ "groups": groups }))
}

/// The names of the rules' alerts.
pub fn alerts(groups: &Value) -> Vec<String> {
    rules(groups)
        .filter_map(|r| r["alert"].as_str().map(str::to_string))
        .collect()
}

/// The series selectors the rules' expressions read (`up{namespace='..', pod=~'..'}`,
/// `kmp_mac_collisions`), the series the rules record themselves left out.
pub fn read_selectors(groups: &Value) -> BTreeSet<String> {
    let recorded: BTreeSet<&str> = rules(groups).filter_map(|r| r["record"].as_str()).collect();
    rules(groups)
        .filter_map(|r| r["expr"].as_str())
        .flat_map(kube_tier::metrics::promql_selectors)
        .filter(|s| !recorded.contains(s.split('{').next().unwrap_or_default()))
        .collect()
}

fn rules(groups: &Value) -> impl Iterator<Item = &Value> {
    groups["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["rules"].as_array().into_iter().flatten())
}

/// Every series the rendered rules read has a sample in `prometheus` within 30 s (two scrapes
/// and an evaluation are 6 s); the error names those that never came. Each is printed with
/// its count, and each alert with its state.
pub fn every_series_the_rules_read_is_scraped(prometheus: &Prometheus) -> Result<()> {
    let groups = rendered_rule_groups()?;
    let selectors = read_selectors(&groups);
    let deadline = Instant::now() + Duration::from_secs(30);
    let counts = loop {
        let counts: Vec<(&String, f64)> = selectors
            .iter()
            .map(|s| Ok((s, prometheus.query(&format!("count({s})"))?.unwrap_or(0.0))))
            .collect::<Result<_>>()?;
        if counts.iter().all(|(_, n)| *n >= 1.0) || Instant::now() > deadline {
            break counts;
        }
        std::thread::sleep(Duration::from_secs(2));
    };
    for (selector, n) in &counts {
        println!("    {selector}: {n} series");
    }
    for alert in alerts(&groups) {
        let state = prometheus.alert(&alert)?;
        println!(
            "    alert {alert}: {}",
            state.as_deref().unwrap_or("inactive")
        );
    }
    let missing: Vec<&str> = counts
        .iter()
        .filter(|(_, n)| *n < 1.0)
        .map(|(s, _)| s.as_str())
        .collect();
    anyhow::ensure!(
        missing.is_empty(),
        "the rendered rules read series that nothing scraped serves, so their alerts can never \
         fire: {missing:?}"
    );
    Ok(())
}
