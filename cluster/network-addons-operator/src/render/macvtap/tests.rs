#![allow(clippy::unwrap_used)]
use super::*;
use crate::cluster::ClusterInfo;
use crate::settings::Settings;
use crate::spec::{Macvtap, NetworkAddonsConfigSpec};

fn spec(config: &str) -> NetworkAddonsConfigSpec {
    NetworkAddonsConfigSpec {
        macvtap: Some(Macvtap {
            device_plugin_config: config.to_string(),
        }),
        ..NetworkAddonsConfigSpec::default()
    }
}

fn kinds(out: &[Rendered]) -> Vec<String> {
    out.iter()
        .map(|r| r.object["kind"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn default_config_map_is_rendered_create_only() {
    let settings = Settings::defaults();
    let applied = spec(DEFAULT_DEVICE_PLUGIN_CONFIG);
    let out = render(&Ctx::new(&applied, &settings, &ClusterInfo::default())).unwrap();
    assert_eq!(kinds(&out), ["ServiceAccount", "ConfigMap", "DaemonSet"]);
    let cm = &out[1].object;
    assert_eq!(cm["metadata"]["name"], DEFAULT_DEVICE_PLUGIN_CONFIG);
    assert_eq!(cm["metadata"]["annotations"][labels::CREATE_ONLY], "true");
    assert_eq!(cm["data"][CONFIG_KEY], "[]");
    let ds = &out[2].object;
    let env_from = &ds["spec"]["template"]["spec"]["containers"][0]["envFrom"][0];
    assert_eq!(
        env_from["configMapRef"]["name"],
        DEFAULT_DEVICE_PLUGIN_CONFIG
    );
}

#[test]
fn a_custom_config_map_is_referenced_not_rendered() {
    let settings = Settings::defaults();
    let applied = spec("my-macvtap-config");
    let out = render(&Ctx::new(&applied, &settings, &ClusterInfo::default())).unwrap();
    assert_eq!(kinds(&out), ["ServiceAccount", "DaemonSet"]);
    let env_from = &out[1].object["spec"]["template"]["spec"]["containers"][0]["envFrom"][0];
    assert_eq!(env_from["configMapRef"]["name"], "my-macvtap-config");
}

#[test]
fn an_unfilled_config_name_means_the_default() {
    let settings = Settings::defaults();
    let applied = spec("");
    let out = render(&Ctx::new(&applied, &settings, &ClusterInfo::default())).unwrap();
    assert_eq!(kinds(&out), ["ServiceAccount", "ConfigMap", "DaemonSet"]);
}
