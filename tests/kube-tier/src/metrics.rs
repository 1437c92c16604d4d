//! Reading the components' `/metrics` as Prometheus does: HTTPS straight to a pod's (or a host
//! network agent's) address, certificates not verified, with a bearer token that the component
//! has the API server review. The scraper is the monitoring stack's ServiceAccount that the
//! operator's rendered ClusterRoleBinding names (`monitoring/prometheus-k8s`, the operator's
//! defaults), so what the tests scrape with is exactly what the rendered RBAC grants.

use std::process::Command;

use anyhow::{Context, Result};
use serde_json::{json, Value};

use crate::Cluster;

/// The monitoring stack's namespace and ServiceAccount, as the operator's settings default them.
pub const SCRAPER_NAMESPACE: &str = "monitoring";
pub const SCRAPER: &str = "prometheus-k8s";
/// The Service in front of the operator's and the node agents' metrics (the operator's
/// ServiceMonitor selects it), and the operator's own port; its other endpoints are the agents'.
pub const OPERATOR_METRICS_SERVICE: &str = "cluster-network-addons-operator-prometheus-metrics";
pub const OPERATOR_METRICS_PORT: u16 = 8080;
/// The ClusterRole the operator renders, granting `get` on `/metrics`.
pub const METRICS_READER: &str = "cluster-network-addons-operator-metrics-reader";

/// A token of the ServiceAccount `account` in `namespace`, from a TokenRequest (an hour long).
/// Each call is a new token: one the components have not reviewed yet.
pub fn token_of(cluster: &Cluster, namespace: &str, account: &str) -> Result<String> {
    let request = json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600},
    });
    let path = format!("/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token");
    let answer =
        cluster.kubectl_stdin(&["create", "--raw", &path, "-f", "-"], &request.to_string())?;
    let answer: Value = serde_json::from_str(&answer).context("parse the TokenRequest's answer")?;
    answer["status"]["token"]
        .as_str()
        .map(str::to_string)
        .with_context(|| format!("no token in the TokenRequest's answer: {answer}"))
}

/// The scraper's ServiceAccount (created if missing) and a new token of it.
pub fn scraper_token(cluster: &Cluster) -> Result<String> {
    let manifest = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {SCRAPER_NAMESPACE}\n---\n\
         apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {SCRAPER}\n  namespace: {SCRAPER_NAMESPACE}\n"
    );
    cluster.kubectl_stdin(&["apply", "-f", "-"], &manifest)?;
    // The token controller may not have made the account's secret yet; a TokenRequest needs
    // only the account, but it must be there.
    let mut last = None;
    for _ in 0..20 {
        match token_of(cluster, SCRAPER_NAMESPACE, SCRAPER) {
            Ok(token) => return Ok(token),
            Err(e) => last = Some(e),
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    Err(last.unwrap_or_else(|| anyhow::anyhow!("no token for {SCRAPER}")))
}

/// The admin's token, from the cluster's kubeconfig: RBAC allows the admin (system:masters)
/// everything, `/metrics` too. For the benchmarks, which run a manager outside any
/// NetworkAddonsConfig (no metrics-reader role is rendered there).
pub fn admin_token(cluster: &Cluster) -> Result<String> {
    let path = cluster.kubeconfig();
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("read the kubeconfig {}", path.display()))?;
    text.lines()
        .find_map(|l| l.trim().strip_prefix("token: "))
        .map(|t| t.trim().to_string())
        .with_context(|| format!("no token in {}", path.display()))
}

/// An answer of a metrics endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scraped {
    pub status: u16,
    pub body: String,
}

impl Scraped {
    /// The samples of the body (its lines that are not comments).
    pub fn samples(&self) -> usize {
        self.body
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .count()
    }
}

/// `GET https://ADDRESS/metrics` (ADDRESS is IP:PORT) with `token` as the bearer token if
/// given and `header` added if given; within 15 s.
pub fn scrape_with(address: &str, token: Option<&str>, header: Option<&str>) -> Result<Scraped> {
    let mut curl = Command::new("curl");
    curl.args(["-sk", "--max-time", "15", "-w", "\n%{http_code}"]);
    if let Some(token) = token {
        curl.args(["-H", &format!("Authorization: Bearer {token}")]);
    }
    if let Some(header) = header {
        curl.args(["-H", header]);
    }
    curl.arg(format!("https://{address}/metrics"));
    let out = curl
        .output()
        .with_context(|| format!("running curl for {address}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    let status = code.trim().parse().unwrap_or(0);
    if status == 0 {
        anyhow::bail!(
            "no answer from https://{address}/metrics (curl exit {:?}): {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(Scraped {
        status,
        body: body.to_string(),
    })
}

/// The metrics at `address`, read with `token`: the body of a 200, an error otherwise.
pub fn scrape(address: &str, token: &str) -> Result<String> {
    let scraped = scrape_with(address, Some(token), None)?;
    if scraped.status != 200 {
        anyhow::bail!(
            "https://{address}/metrics answered {}: {}",
            scraped.status,
            scraped.body.trim()
        );
    }
    Ok(scraped.body)
}

/// The `IP:PORT` addresses a Service's endpoints list (ready addresses only).
pub fn service_endpoints(cluster: &Cluster, namespace: &str, service: &str) -> Result<Vec<String>> {
    Ok(service_targets(cluster, namespace, service)?
        .into_iter()
        .map(|(address, _)| address)
        .collect())
}

/// A Service's ready endpoints, each as `IP:PORT` and the name of the pod behind it (what a
/// ServiceMonitor's target is labelled `pod` with).
pub fn service_targets(
    cluster: &Cluster,
    namespace: &str,
    service: &str,
) -> Result<Vec<(String, String)>> {
    let endpoints = cluster.get_json(&["get", "endpoints", service, "-n", namespace])?;
    let mut targets = Vec::new();
    for subset in endpoints["subsets"].as_array().into_iter().flatten() {
        let ports: Vec<i64> = subset["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["port"].as_i64())
            .collect();
        for address in subset["addresses"].as_array().into_iter().flatten() {
            let Some(ip) = address["ip"].as_str() else {
                continue;
            };
            let pod = address["targetRef"]["name"].as_str().unwrap_or_default();
            for port in &ports {
                targets.push((format!("{ip}:{port}"), pod.to_string()));
            }
        }
    }
    Ok(targets)
}

/// The reviews (TokenReview and SubjectAccessReview creates) the API server's audit log holds,
/// in order, each as its user.
pub fn reviews_in_audit_log(cluster: &Cluster) -> Result<Vec<String>> {
    let path = cluster.audit_log();
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("read the audit log {}", path.display()))?;
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["verb"] == "create" && is_review(&e["objectRef"]["resource"]))
        .map(|e| {
            format!(
                "{} {}",
                e["objectRef"]["resource"].as_str().unwrap_or_default(),
                e["user"]["username"].as_str().unwrap_or_default()
            )
        })
        .collect())
}

/// Whether an audit event's resource is a review (what a metrics endpoint asks, not a write).
pub fn is_review(resource: &Value) -> bool {
    resource == "tokenreviews" || resource == "subjectaccessreviews"
}

/// PromQL's words that are not series: operators, modifiers and the aggregations (which may
/// come before their `by (..)` rather than their parenthesis).
const KEYWORDS: &[&str] = &[
    "and",
    "or",
    "unless",
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "offset",
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
];

/// PromQL's words followed by a list of label names.
const GROUPING: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];

/// The vector selectors of one expression: a metric name, with its braces if it has them. A
/// name followed by `(` is a function or an aggregation.
pub fn promql_selectors(expr: &str) -> Vec<String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' || c == '"' {
            // A string outside braces (a label_replace argument): skipped whole.
            i += 1;
            while i < chars.len() && chars[i] != c {
                i += 1;
            }
            i += 1;
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':')
            {
                i += 1;
            }
            let name: String = chars[start..i].iter().collect();
            let mut j = i;
            while j < chars.len() && chars[j] == ' ' {
                j += 1;
            }
            let is_call = chars.get(j) == Some(&'(');
            if is_call && GROUPING.contains(&name.as_str()) {
                // `by (namespace)`: label names, not series.
                i = chars[j..]
                    .iter()
                    .position(|&c| c == ')')
                    .map_or(chars.len(), |p| j + p + 1);
                continue;
            }
            let mut selector = name.clone();
            if chars.get(j) == Some(&'{') {
                let close = past(&chars, j, '}');
                selector.extend(&chars[j..close]);
                i = close;
            }
            if !is_call && !KEYWORDS.contains(&name.as_str()) {
                found.push(selector);
            }
        } else if c == '[' {
            // A range or subquery's duration.
            i = chars[i..]
                .iter()
                .position(|&c| c == ']')
                .map_or(chars.len(), |p| i + p + 1);
        } else if c.is_ascii_digit() || c == '.' {
            // A number, with its exponent or duration unit.
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    found
}

/// The index just past the first `close` at or after `from` (the end if there is none).
fn past(chars: &[char], from: usize, close: char) -> usize {
    chars[from..]
        .iter()
        .position(|&c| c == close)
        .map_or(chars.len(), |p| from + p + 1)
}

#[cfg(test)]
mod promql_tests {
    use super::promql_selectors;

    #[test]
    fn a_selector_keeps_its_braces_and_functions_are_left_out() {
        assert_eq!(
            promql_selectors("sum(up{namespace='ns', pod=~'m-.*'} or vector(0))"),
            ["up{namespace='ns', pod=~'m-.*'}"]
        );
    }

    #[test]
    fn recorded_names_and_operators_are_selectors_of_their_own() {
        assert_eq!(
            promql_selectors("cluster:a:sum == 1 and cluster:b:sum == 0"),
            ["cluster:a:sum", "cluster:b:sum"]
        );
    }

    #[test]
    fn grouping_labels_ranges_and_numbers_are_not_series() {
        assert_eq!(
            promql_selectors("sum by (namespace) (rate(x_total{a=\"b\"}[5m])) > 1e3"),
            ["x_total{a=\"b\"}"]
        );
        assert_eq!(
            promql_selectors("count(kmp_mac_collisions > 1) > 0"),
            ["kmp_mac_collisions"]
        );
    }
}
