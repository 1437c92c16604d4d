#![allow(clippy::unwrap_used)]
use super::*;
use crate::cluster::ClusterInfo;
use crate::settings::Settings;
use crate::spec::{Multus, NetworkAddonsConfigSpec};

#[test]
fn the_binary_directory_follows_the_settings() {
    let settings = Settings {
        cni_bin_dir: "/var/lib/cni/bin".to_string(),
        cni_conf_dir: "/etc/kubernetes/cni/net.d".to_string(),
        ..Settings::defaults()
    };
    let applied = NetworkAddonsConfigSpec {
        multus: Some(Multus {}),
        ..NetworkAddonsConfigSpec::default()
    };
    let out = render(&Ctx::new(&applied, &settings, &ClusterInfo::default())).unwrap();
    let config = &out[4].object["data"][DAEMON_CONFIG_KEY];
    let config: serde_json::Value = serde_json::from_str(config.as_str().unwrap()).unwrap();
    assert_eq!(config["binDir"], "/var/lib/cni/bin");

    let pod = &out[5].object["spec"]["template"]["spec"];
    assert_eq!(
        pod["initContainers"][0]["command"],
        json!([
            "/usr/src/multus-cni/bin/install_multus",
            "-d",
            "/host/var/lib/cni/bin",
            "-t",
            "thick"
        ])
    );
    let mounts = pod["containers"][0]["volumeMounts"].as_array().unwrap();
    assert!(mounts
        .iter()
        .any(|m| m["name"] == "cnibin" && m["mountPath"] == "/var/lib/cni/bin"));
    let volumes = pod["volumes"].as_array().unwrap();
    assert!(volumes
        .iter()
        .any(|v| v["name"] == "cni" && v["hostPath"]["path"] == "/etc/kubernetes/cni/net.d"));
}
