#![allow(clippy::unwrap_used)]
use super::*;
use crate::cluster::ClusterInfo;
use crate::settings::Settings;
use crate::spec::{KubeMacPool, NetworkAddonsConfigSpec, SelfSignConfiguration};
use serde_json::Value;

fn env(container: &Value) -> Vec<(String, String)> {
    container["env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| {
            Some((
                e["name"].as_str()?.to_string(),
                e["value"].as_str()?.to_string(),
            ))
        })
        .collect()
}

fn upstream_settings() -> Settings {
    Settings {
        kubemacpool_image: crate::images::KUBEMACPOOL.to_string(),
        ..Settings::defaults()
    }
}

fn spec(start: &str, end: &str) -> NetworkAddonsConfigSpec {
    NetworkAddonsConfigSpec {
        kube_mac_pool: Some(KubeMacPool {
            range_start: start.to_string(),
            range_end: end.to_string(),
        }),
        ..NetworkAddonsConfigSpec::default()
    }
}

fn find<'a>(out: &'a [Rendered], kind: &str, name: &str) -> &'a Value {
    &out.iter()
        .find(|r| r.object["kind"] == kind && r.object["metadata"]["name"] == name)
        .unwrap()
        .object
}

#[test]
fn the_tls_profile_goes_to_the_webhook_server_only() {
    let settings = upstream_settings();
    let applied = NetworkAddonsConfigSpec {
        kube_mac_pool: Some(KubeMacPool {
            range_start: "02:00:00:00:00:00".to_string(),
            range_end: "02:00:00:00:ff:ff".to_string(),
        }),
        tls_security_profile: Some(crate::spec::TlsSecurityProfile {
            profile_type: Some(crate::spec::TlsProfileType::Intermediate),
            ..Default::default()
        }),
        ..NetworkAddonsConfigSpec::default()
    };
    let out = render(&Ctx::new(&applied, &settings, &ClusterInfo::default())).unwrap();
    let args = |name: &str| {
        find(&out, "Deployment", name)["spec"]["template"]["spec"]["containers"][0]["args"]
            .to_string()
    };
    assert!(args(MAC_CONTROLLER).contains("\"--tls-min-version=VersionTLS12\""));
    assert!(args(MAC_CONTROLLER)
        .contains("--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,"));
    assert!(!args(CERT_MANAGER).contains("tls"));
}

#[test]
fn upstreams_image_gets_the_range_in_its_environment_and_the_intervals() {
    let settings = upstream_settings();
    let applied = NetworkAddonsConfigSpec {
        kube_mac_pool: Some(KubeMacPool {
            range_start: "02:00:00:00:00:10".to_string(),
            range_end: "02:00:00:00:00:ff".to_string(),
        }),
        self_sign_configuration: Some(SelfSignConfiguration {
            ca_rotate_interval: "168h".to_string(),
            ca_overlap_interval: "24h".to_string(),
            cert_rotate_interval: "24h".to_string(),
            cert_overlap_interval: "8h".to_string(),
        }),
        ..NetworkAddonsConfigSpec::default()
    };
    let out = render(&Ctx::new(&applied, &settings, &ClusterInfo::default())).unwrap();

    let controller = find(&out, "Deployment", MAC_CONTROLLER);
    let env_of = |d: &Value| env(&d["spec"]["template"]["spec"]["containers"][0]);
    let controller_env = env_of(controller);
    assert!(controller_env.contains(&("RANGE_START".into(), "02:00:00:00:00:10".into())));
    assert!(controller_env.contains(&("RANGE_END".into(), "02:00:00:00:00:ff".into())));

    let cert_env = env_of(find(&out, "Deployment", CERT_MANAGER));
    for (name, value) in [
        ("CA_ROTATE_INTERVAL", "168h"),
        ("CA_OVERLAP_INTERVAL", "24h"),
        ("CERT_ROTATE_INTERVAL", "24h"),
        ("CERT_OVERLAP_INTERVAL", "8h"),
    ] {
        assert!(cert_env.contains(&(name.into(), value.into())), "{name}");
    }
}

#[test]
fn the_webhook_comes_after_the_deployment_serving_it() {
    let settings = Settings::defaults();
    let applied = NetworkAddonsConfigSpec {
        kube_mac_pool: Some(KubeMacPool {
            range_start: "02:00:00:00:00:00".to_string(),
            range_end: "02:00:00:ff:ff:ff".to_string(),
        }),
        ..NetworkAddonsConfigSpec::default()
    };
    let out = render(&Ctx::new(&applied, &settings, &ClusterInfo::default())).unwrap();
    let position = |kind: &str, name: &str| {
        out.iter()
            .position(|r| r.object["kind"] == kind && r.object["metadata"]["name"] == name)
            .unwrap()
    };
    assert!(
        position("MutatingWebhookConfiguration", WEBHOOK) > position("Deployment", MAC_CONTROLLER)
    );
    let hooks = &find(&out, "MutatingWebhookConfiguration", WEBHOOK)["webhooks"];
    assert_eq!(
        hooks[0]["clientConfig"]["service"]["namespace"],
        settings.namespace
    );
    assert_eq!(hooks[0]["failurePolicy"], "Fail");
    assert!(hooks[0]["clientConfig"].get("caBundle").is_none());
}

#[test]
fn an_unfilled_range_is_an_error() {
    let settings = Settings::defaults();
    let applied = NetworkAddonsConfigSpec {
        kube_mac_pool: Some(KubeMacPool::default()),
        ..NetworkAddonsConfigSpec::default()
    };
    assert!(render(&Ctx::new(&applied, &settings, &ClusterInfo::default())).is_err());
}

#[test]
fn ours_runs_by_default_from_the_plugins_image_with_two_replicas_rolled_with_none_down() {
    let settings = Settings::defaults();
    let applied = spec("02:00:00:00:00:00", "02:00:00:ff:ff:ff");
    let out = render(&Ctx::new(&applied, &settings, &ClusterInfo::default())).unwrap();
    let d = find(&out, "Deployment", MAC_CONTROLLER);
    let container = &d["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], settings.plugins_image.as_str());
    assert_eq!(
        container["command"],
        serde_json::json!(["/kubemacpool", "manager"])
    );
    assert_eq!(d["spec"]["replicas"], 2);
    assert_eq!(d["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], 0);
    assert_eq!(d["metadata"]["labels"]["app"], Value::Null);
    assert_eq!(
        d["spec"]["template"]["metadata"]["labels"]["app"],
        "kubemacpool"
    );
    let cert = find(&out, "Deployment", CERT_MANAGER);
    assert_eq!(
        cert["spec"]["template"]["spec"]["containers"][0]["command"],
        serde_json::json!(["/kubemacpool", "cert-manager"])
    );
}

#[test]
fn ours_reads_the_range_from_the_config_map_so_a_change_rolls_nothing() {
    let settings = Settings::defaults();
    let applied = spec("02:00:00:00:00:10", "02:00:00:00:00:ff");
    let out = render(&Ctx::new(&applied, &settings, &ClusterInfo::default())).unwrap();
    let cm = find(&out, "ConfigMap", RANGE_CONFIG);
    assert_eq!(cm["data"]["RANGE_START"], "02:00:00:00:00:10");
    assert_eq!(cm["data"]["RANGE_END"], "02:00:00:00:00:ff");
    let controller = find(&out, "Deployment", MAC_CONTROLLER);
    let names: Vec<String> = env(&controller["spec"]["template"]["spec"]["containers"][0])
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert!(!names.iter().any(|n| n.starts_with("RANGE_")), "{names:?}");
}

#[test]
fn ours_leaves_the_endpoints_when_unready_and_may_keep_leases() {
    let settings = Settings::defaults();
    let applied = spec("02:00:00:00:00:00", "02:00:00:ff:ff:ff");
    let out = render(&Ctx::new(&applied, &settings, &ClusterInfo::default())).unwrap();
    let service = find(&out, "Service", SERVICE);
    assert_eq!(service["spec"]["publishNotReadyAddresses"], Value::Null);
    let role = find(&out, "ClusterRole", CLUSTER_ROLE).to_string();
    assert!(role.contains("\"leases\""), "{role}");

    let upstream = render(&Ctx::new(
        &applied,
        &upstream_settings(),
        &ClusterInfo::default(),
    ))
    .unwrap();
    assert_eq!(
        find(&upstream, "Service", SERVICE)["spec"]["publishNotReadyAddresses"],
        true
    );
    assert!(!find(&upstream, "ClusterRole", CLUSTER_ROLE)
        .to_string()
        .contains("\"leases\""));
}

#[test]
fn ours_keeps_one_manager_through_a_drain_and_upstreams_single_replica_is_not_held() {
    let settings = Settings::defaults();
    let applied = spec("02:00:00:00:00:00", "02:00:00:ff:ff:ff");
    let out = render(&Ctx::new(&applied, &settings, &ClusterInfo::default())).unwrap();
    let budget = find(&out, "PodDisruptionBudget", MAC_CONTROLLER);
    let manager = find(&out, "Deployment", MAC_CONTROLLER);
    assert_eq!(budget["apiVersion"], "policy/v1");
    assert_eq!(budget["spec"]["minAvailable"], 1);
    assert_eq!(budget["spec"]["selector"], manager["spec"]["selector"]);

    let old = ClusterInfo {
        pdb_v1beta1: true,
        ..ClusterInfo::default()
    };
    let out = render(&Ctx::new(&applied, &settings, &old)).unwrap();
    assert_eq!(
        find(&out, "PodDisruptionBudget", MAC_CONTROLLER)["apiVersion"],
        "policy/v1beta1"
    );

    let upstream = render(&Ctx::new(
        &applied,
        &upstream_settings(),
        &ClusterInfo::default(),
    ))
    .unwrap();
    assert!(!upstream
        .iter()
        .any(|r| r.object["kind"] == "PodDisruptionBudget"));
}
