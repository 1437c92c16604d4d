//! macvtap: our `macvtap` plugin on every node, and upstream's macvtap device plugin, which
//! offers the host links named in its config as `macvtap.network.kubevirt.io/<name>` resources.
//!
//! The device plugin reads `DP_MACVTAP_CONF` from the ConfigMap `spec.macvtap.devicePluginConfig`
//! names. With the default name this renders that ConfigMap empty (`[]`), annotated create-only:
//! the administrator fills it in, and the operator never overwrites it. The device plugin reads
//! it at start, so a change takes effect when its pods restart.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, ConfigMapEnvSource, Container, EnvFromSource};

use super::common::{self, Ctx, PluginDaemonSet};
use super::Rendered;
use crate::defaults::DEFAULT_DEVICE_PLUGIN_CONFIG;
use crate::error::Result;
use crate::labels;
use crate::spec::Component;

pub const DAEMON_SET: &str = "macvtap-cni";
pub const SERVICE_ACCOUNT: &str = "macvtap-cni";
pub const CONFIG_KEY: &str = "DP_MACVTAP_CONF";
pub const PLUGINS: &[&str] = &["macvtap"];
pub const DEVICE_PLUGINS_DIR: &str = "/var/lib/kubelet/device-plugins";
const SELECTOR: &[(&str, &str)] = &[("name", DAEMON_SET)];
const COMPONENT: Component = Component::Macvtap;

/// The ConfigMap the device plugin reads its config from.
pub fn config_name(ctx: &Ctx) -> String {
    ctx.spec
        .macvtap
        .as_ref()
        .map(|m| m.device_plugin_config.clone())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| DEFAULT_DEVICE_PLUGIN_CONFIG.to_string())
}

pub fn render(ctx: &Ctx) -> Result<Vec<Rendered>> {
    let config = config_name(ctx);
    let mut out = vec![common::to_rendered(
        Some(COMPONENT),
        &common::service_account(ctx, SERVICE_ACCOUNT, COMPONENT),
    )?];
    if config == DEFAULT_DEVICE_PLUGIN_CONFIG {
        out.push(common::to_rendered(Some(COMPONENT), &default_config(ctx))?);
    }
    let device_plugin = Container {
        command: Some(common::strings(&[
            "/macvtap-deviceplugin",
            "-v",
            "3",
            "-logtostderr",
        ])),
        env_from: Some(vec![EnvFromSource {
            config_map_ref: Some(ConfigMapEnvSource {
                name: config,
                optional: None,
            }),
            ..EnvFromSource::default()
        }]),
        resources: Some(common::requests("60m", "30Mi")),
        security_context: Some(common::privileged()),
        volume_mounts: Some(vec![common::mount("deviceplugin", DEVICE_PLUGINS_DIR)]),
        ..common::container(ctx, "macvtap-cni", &ctx.settings.macvtap_cni_image)
    };
    let ds = common::plugin_daemon_set(
        ctx,
        PluginDaemonSet {
            component: COMPONENT,
            name: DAEMON_SET,
            selector: SELECTOR,
            service_account: SERVICE_ACCOUNT,
            description:
                "Installs the macvtap CNI plugin and offers host links as macvtap resources",
            plugins: PLUGINS,
            extra_volumes: vec![common::host_path_volume("deviceplugin", DEVICE_PLUGINS_DIR)],
            host_pid: true,
        },
        device_plugin,
    );
    out.push(common::to_rendered(Some(COMPONENT), &ds)?);
    Ok(out)
}

/// An empty device plugin config, created once and then left to the administrator.
fn default_config(ctx: &Ctx) -> ConfigMap {
    let mut metadata = common::meta(ctx, DEFAULT_DEVICE_PLUGIN_CONFIG, Some(COMPONENT));
    metadata.annotations = Some(BTreeMap::from([(
        labels::CREATE_ONLY.to_string(),
        "true".to_string(),
    )]));
    ConfigMap {
        metadata,
        data: Some(BTreeMap::from([(CONFIG_KEY.to_string(), "[]".to_string())])),
        ..ConfigMap::default()
    }
}

#[cfg(test)]
mod tests;
