//! The operator's events and its metrics, scraped through its Service.

use kube_tier::metrics::{service_endpoints, OPERATOR_METRICS_PORT, OPERATOR_METRICS_SERVICE};

use super::*;

pub fn events_in_default(ctx: &mut Ctx) -> Result<()> {
    let events = ctx.get(&[
        "get",
        "events",
        "-n",
        "default",
        "--field-selector",
        "involvedObject.kind=NetworkAddonsConfig",
    ])?;
    let reasons: BTreeSet<String> = events["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["reason"].as_str().map(str::to_string))
        .collect();
    for wanted in ["Modified", "Progressing", "Available"] {
        check(reasons.contains(wanted), || {
            format!("no {wanted} event in default; reasons: {reasons:?}")
        })?;
    }
    Ok(())
}

/// The operator's metrics, scraped as its ServiceMonitor has Prometheus do: from the operator
/// endpoints its Service lists, over HTTPS with the scraper's token; with the upstream
/// operator's names; and its ServiceMonitor and PrometheusRule once the Prometheus operator's
/// CRDs are there.
pub fn metrics_through_the_service(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    ctx.start_from(OWN_SPEC)?;
    let operator_port = format!(":{OPERATOR_METRICS_PORT}");
    // The leader's: the other replica does not report the config.
    let metrics = wait_for(
        "the metrics to say the config is ready",
        Duration::from_secs(60),
        || {
            for address in service_endpoints(&ctx.cluster, NAMESPACE, OPERATOR_METRICS_SERVICE)? {
                if address.ends_with(&operator_port) {
                    let body = ctx.metrics_at(&address)?;
                    if body.contains("\nkubevirt_cnao_cr_ready 1\n") {
                        return Ok(Some(body));
                    }
                }
            }
            Ok(None)
        },
    )?;
    for line in [
        "kubevirt_cnao_operator_up 1",
        "kubevirt_cnao_cr_kubemacpool_deployed 0",
        "# HELP kubevirt_cnao_cr_ready CNAO CR Ready",
    ] {
        check(metrics.contains(line), || {
            format!("no {line:?} in:\n{metrics}")
        })?;
    }
    println!(
        "    scraped: {}",
        metrics
            .lines()
            .filter(|l| l.starts_with("kubevirt_cnao_"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    ctx.apply(&crds(
        "monitoring.coreos.com",
        &[
            ("servicemonitors", "ServiceMonitor"),
            ("prometheusrules", "PrometheusRule"),
        ],
    ))?;
    let outcome = wait_for(
        "the ServiceMonitor and PrometheusRule",
        Duration::from_secs(120),
        || {
            Ok((ctx.exists(
                "servicemonitors.monitoring.coreos.com",
                "service-monitor-cluster-network-addons-operator",
                Some(NAMESPACE),
            )? && ctx.exists(
                "prometheusrules.monitoring.coreos.com",
                "prometheus-rules-cluster-network-addons-operator",
                Some(NAMESPACE),
            )?)
            .then_some(()))
        },
    )
    .and_then(|()| {
        let rule = ctx.get(&[
            "get",
            "prometheusrules.monitoring.coreos.com",
            "prometheus-rules-cluster-network-addons-operator",
            "-n",
            NAMESPACE,
        ])?;
        let text = rule["spec"].to_string();
        check(
            ["CnaoDown", "NetworkAddonsConfigNotReady", "KubemacpoolDown"]
                .iter()
                .all(|a| text.contains(a)),
            || format!("alerts missing: {text}"),
        )
    });
    ctx.kubectl(&[
        "delete",
        "customresourcedefinition",
        "servicemonitors.monitoring.coreos.com",
        "prometheusrules.monitoring.coreos.com",
        "--timeout=60s",
    ])?;
    outcome?;
    // The Prometheus operator gone, what was rendered for it goes too, at once (the operator
    // watches those CRDs), and the config is as the next scenario finds it.
    wait_for(
        "the monitoring Role and RoleBinding to be deleted",
        Duration::from_secs(30),
        || {
            let role = "cluster-network-addons-operator-monitoring";
            Ok((!ctx.exists("role", role, Some(NAMESPACE))?
                && !ctx.exists("rolebinding", role, Some(NAMESPACE))?)
            .then_some(()))
        },
    )
}
