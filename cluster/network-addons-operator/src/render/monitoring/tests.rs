#![allow(clippy::unwrap_used)]
use super::*;
use crate::cluster::ClusterInfo;
use crate::settings::Settings;
use crate::spec::NetworkAddonsConfigSpec;

fn rendered(monitoring: bool) -> Vec<Value> {
    let spec = NetworkAddonsConfigSpec::default();
    let settings = Settings::defaults();
    let cluster = ClusterInfo {
        monitoring,
        ..ClusterInfo::default()
    };
    render(&Ctx::new(&spec, &settings, &cluster))
        .unwrap()
        .into_iter()
        .map(|r| r.object)
        .collect()
}

#[test]
fn the_metrics_service_selects_pods_labelled_for_prometheus() {
    let out = rendered(false);
    assert_eq!(out[0]["metadata"]["name"], SERVICE);
    assert_eq!(
        out[0]["spec"]["selector"],
        json!({"prometheus.cnao.io": "true"})
    );
    assert_eq!(out[0]["spec"]["ports"][0]["targetPort"], "metrics");
}

#[test]
fn with_the_monitoring_crds_the_rules_and_monitor_are_rendered() {
    let out = rendered(true);
    let kinds: Vec<&str> = out.iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "Service",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "ServiceMonitor",
            "PrometheusRule"
        ]
    );
    let rules = &out[6]["spec"]["groups"][0]["rules"];
    let alerts: Vec<&str> = rules
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["alert"].as_str())
        .collect();
    assert_eq!(
        alerts,
        [
            "CnaoDown",
            "NetworkAddonsConfigNotReady",
            "KubemacpoolDown",
            "KubeMacPoolDuplicateMacsFound"
        ]
    );
    assert_eq!(
        rules[6]["annotations"]["runbook_url"],
        "https://kubevirt.io/monitoring/runbooks/CnaoDown"
    );
    assert_eq!(out[4]["subjects"][0]["name"], "prometheus-k8s");
    assert_eq!(out[4]["subjects"][0]["namespace"], "monitoring");
}

#[test]
fn the_metrics_reader_role_grants_get_on_metrics_to_the_monitoring_account_always() {
    for monitoring in [false, true] {
        let out = rendered(monitoring);
        let role = out
            .iter()
            .find(|o| o["kind"] == "ClusterRole" && o["metadata"]["name"] == METRICS_READER)
            .unwrap();
        assert_eq!(
            role["rules"],
            json!([{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}])
        );
        let binding = out
            .iter()
            .find(|o| o["kind"] == "ClusterRoleBinding")
            .unwrap();
        assert_eq!(binding["roleRef"]["name"], METRICS_READER);
        assert_eq!(
            binding["subjects"],
            json!([{"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}])
        );
    }
}

#[test]
fn the_monitor_scrapes_over_https_with_the_scrapers_token() {
    let out = rendered(true);
    let monitor = out.iter().find(|o| o["kind"] == "ServiceMonitor").unwrap();
    assert_eq!(
        monitor["spec"]["endpoints"],
        json!([{
            "port": "metrics",
            "scheme": "https",
            "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
            "tlsConfig": {"insecureSkipVerify": true},
        }])
    );
}
