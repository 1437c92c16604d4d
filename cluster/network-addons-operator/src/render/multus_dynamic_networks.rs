//! multusDynamicNetworks: upstream multus-dynamic-networks-controller, a node agent that adds
//! and removes a running pod's secondary interfaces when its network annotation changes. It
//! asks the node's container runtime (over the CRI socket `hostCRISocketPath`) for the pod's
//! network namespace and multus's daemon (over its socket) for the attachment, so it needs the
//! thick multus this operator deploys with `multus`.
//!
//! The names, selector, RBAC and the config file are upstream's. The DaemonSet is placed like
//! every node agent here (the workloads placement, node selector included; upstream applies
//! only its tolerations and affinity).

use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, Container, ExecAction, HostPathVolumeSource, KeyToPath,
    PodSpec, Probe, Volume, VolumeMount,
};

use super::common::{self, Ctx, Identity};
use super::Rendered;
use crate::defaults::DEFAULT_CRI_SOCKET;
use crate::error::Result;
use crate::spec::Component;

pub const NAME: &str = "dynamic-networks-controller";
pub const DAEMON_SET: &str = "dynamic-networks-controller-ds";
pub const CONFIG_MAP: &str = "dynamic-networks-controller-config";
const CONFIG_FILE: &str = "dynamic-networks-config.json";
const CONFIG_DIR: &str = "/etc/dynamic-networks-controller/";
/// Where the thick multus daemon listens on the host.
const MULTUS_SOCKET: &str = "/run/multus/multus.sock";
const SELECTOR: &[(&str, &str)] = &[("name", NAME)];
const COMPONENT: Component = Component::MultusDynamicNetworks;

pub fn render(ctx: &Ctx) -> Result<Vec<Rendered>> {
    use common::rule;
    let c = Some(COMPONENT);
    let rules = vec![
        rule(
            &["k8s.cni.cncf.io"],
            &["network-attachment-definitions"],
            &["get", "list", "watch"],
        ),
        rule(
            &[""],
            &["pods", "pods/status"],
            &["get", "list", "update", "watch"],
        ),
        rule(
            &["", "events.k8s.io"],
            &["events"],
            &["create", "patch", "update"],
        ),
    ];
    let mut out = common::cluster_identity(ctx, COMPONENT, Identity::named(NAME), rules)?;
    out.extend([
        common::to_rendered(c, &config_map(ctx))?,
        common::to_rendered(c, &daemon_set(ctx))?,
    ]);
    Ok(out)
}

/// The CRI socket the spec names (defaults filled), as the host has it.
fn cri_socket(ctx: &Ctx) -> String {
    ctx.spec
        .multus_dynamic_networks
        .as_ref()
        .map(|m| m.host_cri_socket_path.clone())
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| DEFAULT_CRI_SOCKET.to_string())
}

fn config_map(ctx: &Ctx) -> ConfigMap {
    let config = serde_json::json!({
        "criSocketPath": common::host_path(&cri_socket(ctx)),
        "multusSocketPath": common::host_path(MULTUS_SOCKET),
    });
    ConfigMap {
        metadata: common::meta(ctx, CONFIG_MAP, Some(COMPONENT)),
        data: Some(common::string_map(&[(CONFIG_FILE, &config.to_string())])),
        ..ConfigMap::default()
    }
}

fn socket_volume(name: &str, path: &str) -> Volume {
    Volume {
        name: name.to_string(),
        host_path: Some(HostPathVolumeSource {
            path: path.to_string(),
            type_: Some("Socket".to_string()),
        }),
        ..Volume::default()
    }
}

/// Healthy while multus's daemon answers on its socket.
fn multus_health() -> Probe {
    Probe {
        exec: Some(ExecAction {
            command: Some(common::strings(&[
                "curl",
                "--fail",
                "--unix-socket",
                &common::host_path(MULTUS_SOCKET),
                "localhost/healthz",
            ])),
        }),
        initial_delay_seconds: Some(15),
        period_seconds: Some(5),
        ..Probe::default()
    }
}

fn daemon_set(ctx: &Ctx) -> k8s_openapi::api::apps::v1::DaemonSet {
    let socket = cri_socket(ctx);
    let controller = Container {
        command: Some(common::strings(&["/dynamic-networks-controller"])),
        args: Some(vec![
            format!("-config={CONFIG_DIR}{CONFIG_FILE}"),
            "-v=5".to_string(),
        ]),
        env: Some(vec![common::field_env("NODE_NAME", "spec.nodeName")]),
        liveness_probe: Some(multus_health()),
        readiness_probe: Some(multus_health()),
        resources: Some(common::requests("100m", "50Mi")),
        security_context: Some(common::privileged()),
        volume_mounts: Some(vec![
            VolumeMount {
                read_only: Some(true),
                ..common::mount("dynamic-networks-controller-config-dir", CONFIG_DIR)
            },
            common::mount("multus-server-socket", &common::host_path(MULTUS_SOCKET)),
            common::mount("cri-socket", &common::host_path(&socket)),
        ]),
        ..common::container(ctx, NAME, &ctx.settings.multus_dynamic_networks_image)
    };
    let pod = PodSpec {
        service_account_name: Some(NAME.to_string()),
        termination_grace_period_seconds: Some(10),
        containers: vec![controller],
        volumes: Some(vec![
            Volume {
                name: "dynamic-networks-controller-config-dir".to_string(),
                config_map: Some(ConfigMapVolumeSource {
                    name: CONFIG_MAP.to_string(),
                    items: Some(vec![KeyToPath {
                        key: CONFIG_FILE.to_string(),
                        path: CONFIG_FILE.to_string(),
                        mode: None,
                    }]),
                    ..ConfigMapVolumeSource::default()
                }),
                ..Volume::default()
            },
            socket_volume("multus-server-socket", MULTUS_SOCKET),
            socket_volume("cri-socket", &socket),
        ]),
        ..PodSpec::default()
    };
    common::daemon_set(
        ctx,
        COMPONENT,
        DAEMON_SET,
        SELECTOR,
        "multus-dynamic-networks-controller adds and removes the interfaces of running pods",
        pod,
        None,
    )
}

#[cfg(test)]
mod tests;
