#![allow(clippy::unwrap_used)]
use super::*;
use crate::cluster::ClusterInfo;
use crate::settings::Settings;
use crate::spec::NetworkAddonsConfigSpec;

fn rendered(cluster: &ClusterInfo) -> Vec<Value> {
    let spec = NetworkAddonsConfigSpec::default();
    let settings = Settings::defaults();
    render(&Ctx::new(&spec, &settings, cluster))
        .unwrap()
        .into_iter()
        .map(|r| r.object)
        .collect()
}

#[test]
fn the_collision_alert_fires_on_any_mac_used_twice_for_30_s() {
    let out = rendered(&ClusterInfo::WITH_CERT_MANAGER);
    let rule = out.iter().find(|o| o["kind"] == "PrometheusRule").unwrap();
    let alert = &rule["spec"]["groups"][0]["rules"][0];
    assert_eq!(alert["alert"], COLLISION_ALERT);
    assert_eq!(alert["expr"], "count(kmp_mac_collisions > 1) > 0");
    assert_eq!(alert["for"], "30s");
    assert_eq!(alert["labels"]["severity"], "warning");
}

#[test]
fn the_monitor_scrapes_the_managers_metrics_port_over_https() {
    let out = rendered(&ClusterInfo::WITH_CERT_MANAGER);
    let service = out.iter().find(|o| o["kind"] == "Service").unwrap();
    let monitor = out.iter().find(|o| o["kind"] == "ServiceMonitor").unwrap();
    assert_eq!(service["spec"]["ports"][0]["port"], METRICS_PORT);
    assert_eq!(
        service["spec"]["selector"],
        json!({"control-plane": "mac-controller-manager"})
    );
    for (k, v) in monitor["spec"]["selector"]["matchLabels"]
        .as_object()
        .unwrap()
    {
        assert_eq!(&service["metadata"]["labels"][k], v, "{k}");
    }
    assert_eq!(monitor["spec"]["endpoints"][0]["scheme"], "https");
}

#[test]
fn without_the_prometheus_operator_only_the_metrics_service_is_rendered() {
    let kinds: Vec<Value> = rendered(&ClusterInfo::default())
        .iter()
        .map(|o| o["kind"].clone())
        .collect();
    assert_eq!(kinds, [json!("Service")]);
}
