//! The operator's metrics, for Prometheus: the Service in front of `/metrics` (the upstream
//! operator's name, selecting pods labelled `prometheus.cnao.io: "true"`, which the operator's
//! own and the node agents serving metrics are), the ClusterRole that lets a reader `get`
//! `/metrics` and its binding to the monitoring stack's service account, and, where the
//! Prometheus operator's CRDs are served, the upstream operator's ServiceMonitor,
//! PrometheusRule (its recording rules and alerts) and the Role that lets the monitoring
//! stack's service account discover the endpoints.
//!
//! Every `/metrics` the components serve (the operator's, the node agents', KubeMacPool's) is
//! HTTPS and answered only to a bearer token allowed to `get` the non-resource URL `/metrics`:
//! the ServiceMonitors send the scraper's ServiceAccount token, and [`METRICS_READER`] is what
//! allows it. Another reader is let in by binding that ClusterRole to its account.
//!
//! Differences from upstream: the operator pods' name prefix in the `up` rules is ours;
//! `kubevirt_cnao_operator_up` is exported by the operator itself, so only its
//! `cluster:...:sum` form is a recording rule.

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{json, Value};

use super::common::{self, Ctx};
use super::Rendered;
use crate::error::Result;
use crate::labels;
use crate::spec::Component;

pub const SERVICE: &str = "cluster-network-addons-operator-prometheus-metrics";
pub const SERVICE_MONITOR: &str = "service-monitor-cluster-network-addons-operator";
pub const PROMETHEUS_RULE: &str = "prometheus-rules-cluster-network-addons-operator";
pub const MONITORING_ROLE: &str = "cluster-network-addons-operator-monitoring";
/// The ClusterRole granting `get` on `/metrics`, and its binding to the monitoring account.
pub const METRICS_READER: &str = "cluster-network-addons-operator-metrics-reader";
/// Where the scraper finds its own ServiceAccount token (the ServiceMonitors' bearerTokenFile).
pub const SCRAPER_TOKEN_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";
/// The name prefix of the operator's pods (its Deployment's name).
const OPERATOR_POD_PREFIX: &str = "network-addons-operator-";

pub fn render(ctx: &Ctx) -> Result<Vec<Rendered>> {
    let mut out = vec![
        common::to_rendered(None, &service(ctx))?,
        common::to_rendered(None, &metrics_reader(ctx))?,
        common::to_rendered(None, &metrics_reader_binding(ctx))?,
    ];
    if ctx.cluster.monitoring {
        out.extend([
            common::to_rendered(None, &discovery_role(ctx, MONITORING_ROLE, None))?,
            common::to_rendered(None, &discovery_role_binding(ctx, MONITORING_ROLE, None))?,
            common::to_rendered(None, &service_monitor(ctx))?,
            common::to_rendered(None, &prometheus_rule(ctx))?,
        ]);
    }
    Ok(out)
}

fn prometheus_label() -> std::collections::BTreeMap<String, String> {
    common::string_map(&[(labels::PROMETHEUS, "true")])
}

fn service(ctx: &Ctx) -> Service {
    Service {
        metadata: with_prometheus_label(ctx, SERVICE),
        spec: Some(ServiceSpec {
            ports: Some(vec![ServicePort {
                name: Some("metrics".to_string()),
                port: crate::metrics::METRICS_PORT,
                protocol: Some("TCP".to_string()),
                target_port: Some(IntOrString::String("metrics".to_string())),
                ..ServicePort::default()
            }]),
            selector: Some(prometheus_label()),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}

/// What lets the monitoring stack's service account discover the scrape targets in the operand
/// namespace.
pub fn discovery_role(ctx: &Ctx, name: &str, component: Option<Component>) -> Role {
    Role {
        metadata: common::meta(ctx, name, component),
        rules: Some(vec![common::rule(
            &[""],
            &["services", "endpoints", "pods"],
            &["get", "list", "watch"],
        )]),
    }
}

/// `get` on `/metrics`: what every metrics endpoint of the components asks of a reader.
fn metrics_reader(ctx: &Ctx) -> ClusterRole {
    ClusterRole {
        metadata: common::cluster_meta(ctx, METRICS_READER, None),
        rules: Some(vec![PolicyRule {
            non_resource_urls: Some(vec![http_endpoint::METRICS_PATH.to_string()]),
            verbs: vec!["get".to_string()],
            ..PolicyRule::default()
        }]),
        aggregation_rule: None,
    }
}

fn metrics_reader_binding(ctx: &Ctx) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: common::cluster_meta(ctx, METRICS_READER, None),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_string(),
            kind: "ClusterRole".to_string(),
            name: METRICS_READER.to_string(),
        },
        subjects: Some(vec![monitoring_subject(ctx)]),
    }
}

/// The monitoring stack's service account (the `MONITORING_NAMESPACE` and
/// `MONITORING_SERVICE_ACCOUNT` settings).
fn monitoring_subject(ctx: &Ctx) -> Subject {
    Subject {
        api_group: None,
        kind: "ServiceAccount".to_string(),
        name: ctx.settings.monitoring_service_account.clone(),
        namespace: Some(ctx.settings.monitoring_namespace.clone()),
    }
}

/// Binds [`discovery_role`] `name` to the monitoring stack's service account.
pub fn discovery_role_binding(ctx: &Ctx, name: &str, component: Option<Component>) -> RoleBinding {
    RoleBinding {
        metadata: common::meta(ctx, name, component),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_string(),
            kind: "Role".to_string(),
            name: name.to_string(),
        },
        subjects: Some(vec![monitoring_subject(ctx)]),
    }
}

fn with_prometheus_label(ctx: &Ctx, name: &str) -> ObjectMeta {
    let mut metadata = common::meta(ctx, name, None);
    if let Some(l) = metadata.labels.as_mut() {
        l.extend(prometheus_label());
    }
    metadata
}

fn service_monitor(ctx: &Ctx) -> Value {
    let mut metadata = with_prometheus_label(ctx, SERVICE_MONITOR);
    if let Some(l) = metadata.labels.as_mut() {
        l.insert("openshift.io/cluster-monitoring".to_string(), String::new());
    }
    json!({
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": metadata,
        "spec": {
            "selector": {"matchLabels": prometheus_label()},
            "namespaceSelector": {"matchNames": [ctx.settings.namespace]},
            "endpoints": [scraped_with_token()],
        },
    })
}

/// A ServiceMonitor endpoint on the `metrics` port over HTTPS with the scraper's token. The
/// certificates are self-signed (the operator's, the node agents') or the webhook's own CA's
/// (KubeMacPool's): not verified, as for the kubelet's metrics; the token is what is checked.
pub fn scraped_with_token() -> Value {
    json!({
        "port": "metrics",
        "scheme": "https",
        "bearerTokenFile": SCRAPER_TOKEN_FILE,
        "tlsConfig": {"insecureSkipVerify": true},
    })
}

fn record(name: &str, expr: String) -> Value {
    json!({"record": name, "expr": expr})
}

fn alert(ctx: &Ctx, name: &str, expr: &str, severity: &str, summary: &str) -> Value {
    json!({
        "alert": name,
        "expr": expr,
        "for": "5m",
        "labels": {
            "severity": severity,
            "operator_health_impact": severity,
            "kubernetes_operator_part_of": "kubevirt",
            "kubernetes_operator_component": "cluster-network-addons-operator",
        },
        "annotations": {
            "summary": summary,
            "runbook_url": ctx.settings.runbook_url_template.replace("%s", name),
        },
    })
}

/// The upstream operator's recording rules and alerts.
fn prometheus_rule(ctx: &Ctx) -> Value {
    let ns = &ctx.settings.namespace;
    let up = |prefix: &str| format!("sum(up{{namespace='{ns}', pod=~'{prefix}.*'}} or vector(0))");
    let sum_of = |metric: &str| format!("sum({metric}{{namespace='{ns}'}} or vector(0))");
    let rules = vec![
        record("cluster:kubevirt_cnao_operator_up:sum", up(OPERATOR_POD_PREFIX)),
        record(
            "cluster:kubevirt_cnao_kubemacpool_manager_up:sum",
            up("kubemacpool-mac-controller-manager-"),
        ),
        record(
            "kubevirt_cnao_kubemacpool_manager_up",
            up("kubemacpool-mac-controller-manager-"),
        ),
        record(
            "cluster:kubevirt_cnao_cr_kubemacpool_deployed:sum",
            sum_of("kubevirt_cnao_cr_kubemacpool_deployed"),
        ),
        record(
            "kubevirt_cnao_cr_kubemacpool_aggregated",
            sum_of("kubevirt_cnao_cr_kubemacpool_deployed"),
        ),
        record(
            "kubevirt_cnao_kubemacpool_duplicate_macs",
            sum_of("kubevirt_kmp_duplicate_macs"),
        ),
        alert(
            ctx,
            "CnaoDown",
            "cluster:kubevirt_cnao_operator_up:sum == 0",
            "warning",
            "CNAO pod is down.",
        ),
        alert(
            ctx,
            "NetworkAddonsConfigNotReady",
            &format!("{} == 0", sum_of("kubevirt_cnao_cr_ready")),
            "warning",
            "CNAO CR NetworkAddonsConfig is not ready.",
        ),
        alert(
            ctx,
            "KubemacpoolDown",
            "cluster:kubevirt_cnao_cr_kubemacpool_deployed:sum == 1 and cluster:kubevirt_cnao_kubemacpool_manager_up:sum == 0",
            "critical",
            "KubeMacpool is deployed by CNAO CR but KubeMacpool pod is down.",
        ),
        alert(
            ctx,
            "KubeMacPoolDuplicateMacsFound",
            "kubevirt_cnao_kubemacpool_duplicate_macs != 0",
            "warning",
            "Duplicate macs found.",
        ),
    ];
    json!({
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": with_prometheus_label(ctx, PROMETHEUS_RULE),
        "spec": {"groups": [{"name": "kubevirt.cnao.rules", "rules": rules}]},
    })
}

#[cfg(test)]
mod tests;
