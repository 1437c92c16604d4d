//! KubeMacPool's metrics for Prometheus, as upstream's release renders them: the Service in
//! front of the managers' HTTPS metrics port, and, where the Prometheus operator's CRDs are
//! served, the ServiceMonitor scraping it, the PrometheusRule with the collision alert, and the
//! Role that lets the monitoring stack discover the endpoints. Both allocators serve
//! `kmp_mac_collisions{mac}` on that port.

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{json, Value};

use super::{COMPONENT, CONTROLLER_SELECTOR};
use crate::error::Result;
use crate::render::common::{self, Ctx};
use crate::render::monitoring::{discovery_role, discovery_role_binding, scraped_with_token};
use crate::render::Rendered;

pub const METRICS_SERVICE: &str = "kubemacpool-metrics-service";
pub const SERVICE_MONITOR: &str = "kubemacpool-metrics-monitor";
pub const PROMETHEUS_RULE: &str = "kubemacpool-prometheus-rule";
pub const PROMETHEUS_ROLE: &str = "kubemacpool-prometheus";
/// The managers' metrics port (HTTPS, the webhook's serving certificate; `/metrics` to a token
/// allowed to `get` it, which the operator's metrics-reader ClusterRole grants).
pub const METRICS_PORT: i32 = 8443;
/// The alert upstream's KubeMacPool ships, on its collision gauge.
pub const COLLISION_ALERT: &str = "KubemacpoolMACCollisionDetected";
const PROMETHEUS_LABEL: (&str, &str) = ("prometheus.kubemacpool.io", "true");

/// The metrics Service always; the monitoring objects where the cluster serves their kinds.
pub(super) fn render(ctx: &Ctx) -> Result<Vec<Rendered>> {
    let c = Some(COMPONENT);
    let mut out = vec![common::to_rendered(c, &metrics_service(ctx))?];
    if ctx.cluster.monitoring {
        out.extend([
            common::to_rendered(c, &discovery_role(ctx, PROMETHEUS_ROLE, c))?,
            common::to_rendered(c, &discovery_role_binding(ctx, PROMETHEUS_ROLE, c))?,
            common::to_rendered(c, &prometheus_rule(ctx))?,
            common::to_rendered(c, &service_monitor(ctx))?,
        ]);
    }
    Ok(out)
}

fn with_labels(ctx: &Ctx, name: &str, extra: &[(&str, &str)]) -> ObjectMeta {
    let mut metadata = common::meta(ctx, name, Some(COMPONENT));
    if let Some(labels) = metadata.labels.as_mut() {
        labels.extend(common::string_map(extra));
    }
    metadata
}

fn metrics_service(ctx: &Ctx) -> Service {
    let mut labels = CONTROLLER_SELECTOR[..1].to_vec();
    labels.push(PROMETHEUS_LABEL);
    Service {
        metadata: with_labels(ctx, METRICS_SERVICE, &labels),
        spec: Some(ServiceSpec {
            ports: Some(vec![ServicePort {
                name: Some("metrics".to_string()),
                port: METRICS_PORT,
                protocol: Some("TCP".to_string()),
                target_port: Some(IntOrString::Int(METRICS_PORT)),
                ..ServicePort::default()
            }]),
            selector: Some(common::string_map(&CONTROLLER_SELECTOR[..1])),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}

fn prometheus_rule(ctx: &Ctx) -> Value {
    json!({
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": with_labels(ctx, PROMETHEUS_RULE, &[
            ("openshift.io/prometheus-rule-evaluation-scope", "leaf-prometheus"),
            PROMETHEUS_LABEL,
        ]),
        "spec": {"groups": [{"name": "alerts.rules", "rules": [{
            "alert": COLLISION_ALERT,
            "expr": "count(kmp_mac_collisions > 1) > 0",
            "for": "30s",
            "labels": {"severity": "warning", "operator_health_impact": "warning"},
            "annotations": {
                "summary": "MAC address collisions detected.",
                "description": "{{ $value }} MAC address(es) have collisions. Multiple running objects are using the same MAC address.",
                "runbook_url": ctx.settings.runbook_url_template.replace("%s", COLLISION_ALERT),
            },
        }]}]},
    })
}

fn service_monitor(ctx: &Ctx) -> Value {
    json!({
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": with_labels(ctx, SERVICE_MONITOR, &[
            ("openshift.io/cluster-monitoring", "true"),
            PROMETHEUS_LABEL,
        ]),
        "spec": {
            "selector": {"matchLabels": common::string_map(&[PROMETHEUS_LABEL])},
            "namespaceSelector": {"matchNames": [ctx.settings.namespace]},
            "endpoints": [scraped_with_token()],
        },
    })
}

#[cfg(test)]
mod tests;
