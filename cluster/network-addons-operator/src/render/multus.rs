//! multus: upstream Multus, thick plugin. A `multus-daemon` per node serves the `multus-shim`
//! binary that the container runtime calls; it writes `00-multus.conf` in front of the primary
//! network's config and delegates each NetworkAttachmentDefinition to its plugin.
//!
//! The objects and their names follow upstream's operator: the NetworkAttachmentDefinition CRD,
//! the `multus` ServiceAccount, ClusterRole and binding, the daemon's ConfigMap and the `multus`
//! DaemonSet with its upstream selector. Four deliberate differences:
//! - the workloads placement is applied whole (upstream applies only its tolerations);
//! - priority `system-node-critical`, like every node agent here (upstream: cluster-critical):
//!   without the daemon no pod with an extra network starts on that node;
//! - no preStop hook removing `00-multus.conf`: the daemon removes its own config when it is
//!   told to stop (v4.3.0's `multus-daemon`, on SIGTERM), and a hook through `/bin/sh` would
//!   need a shell in the image;
//! - the daemon mounts the host's CNI binary directory at the same path inside the pod and its
//!   config names that directory, so a node keeping plugins elsewhere than `/opt/cni/bin`
//!   (OpenShift's `/var/lib/cni/bin`) works.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, Container, KeyToPath, PodSpec, Volume, VolumeMount,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionNames, CustomResourceDefinitionSpec,
    CustomResourceDefinitionVersion, CustomResourceValidation, JSONSchemaProps,
};
use serde_json::json;

use super::common::{self, Ctx, Identity};
use super::Rendered;
use crate::error::{Context, Result};
use crate::spec::Component;

pub const NAD_CRD: &str = "network-attachment-definitions.k8s.cni.cncf.io";
pub const NAME: &str = "multus";
pub const DAEMON_CONFIG: &str = "multus-daemon-config";
pub const DAEMON_CONFIG_KEY: &str = "daemon-config.json";
/// Upstream's selector, kept so an upstream DaemonSet is updated in place.
const SELECTOR: &[(&str, &str)] = &[("name", "kube-multus-ds-amd64")];
const COMPONENT: Component = Component::Multus;
const MULTUS_BIN: &str = "/usr/src/multus-cni/bin";
/// Where the daemon sees the host's CNI config directory.
const CONF_DIR_IN_POD: &str = "/host/etc/cni/net.d";

pub fn render(ctx: &Ctx) -> Result<Vec<Rendered>> {
    let rules = vec![
        common::rule(&["k8s.cni.cncf.io"], &["*"], &["*"]),
        common::rule(
            &[""],
            &["pods", "pods/status"],
            &["get", "list", "update", "watch"],
        ),
        common::rule(
            &["", "events.k8s.io"],
            &["events"],
            &["create", "patch", "update"],
        ),
    ];
    let mut out = vec![common::to_rendered(Some(COMPONENT), &nad_crd(ctx))?];
    out.extend(common::cluster_identity(
        ctx,
        COMPONENT,
        Identity::named(NAME),
        rules,
    )?);
    out.extend([
        common::to_rendered(Some(COMPONENT), &daemon_config(ctx)?)?,
        common::to_rendered(Some(COMPONENT), &daemon_set(ctx))?,
    ]);
    Ok(out)
}

fn string_schema(description: &str) -> JSONSchemaProps {
    JSONSchemaProps {
        type_: Some("string".to_string()),
        description: Some(description.to_string()),
        ..JSONSchemaProps::default()
    }
}

/// The Network Plumbing Working Group's NetworkAttachmentDefinition: a namespaced object whose
/// `spec.config` is a CNI config as a JSON string.
fn nad_crd(ctx: &Ctx) -> CustomResourceDefinition {
    let spec_schema = JSONSchemaProps {
        type_: Some("object".to_string()),
        description: Some("The network this attachment connects a pod to.".to_string()),
        properties: Some(BTreeMap::from([(
            "config".to_string(),
            string_schema("The CNI configuration (a network config or a list), as JSON text."),
        )])),
        ..JSONSchemaProps::default()
    };
    let schema = JSONSchemaProps {
        type_: Some("object".to_string()),
        description: Some(
            "A network pods and VMs can attach an extra interface to, by naming it in the \
             k8s.v1.cni.cncf.io/networks annotation (https://github.com/k8snetworkplumbingwg/multi-net-spec)."
                .to_string(),
        ),
        properties: Some(BTreeMap::from([
            (
                "apiVersion".to_string(),
                string_schema("The versioned schema of this object."),
            ),
            (
                "kind".to_string(),
                string_schema("The REST resource this object represents."),
            ),
            (
                "metadata".to_string(),
                JSONSchemaProps {
                    type_: Some("object".to_string()),
                    ..JSONSchemaProps::default()
                },
            ),
            ("spec".to_string(), spec_schema),
        ])),
        ..JSONSchemaProps::default()
    };
    CustomResourceDefinition {
        metadata: common::cluster_meta(ctx, NAD_CRD, Some(COMPONENT)),
        spec: CustomResourceDefinitionSpec {
            group: "k8s.cni.cncf.io".to_string(),
            scope: "Namespaced".to_string(),
            names: CustomResourceDefinitionNames {
                kind: "NetworkAttachmentDefinition".to_string(),
                plural: "network-attachment-definitions".to_string(),
                singular: Some("network-attachment-definition".to_string()),
                short_names: Some(vec!["net-attach-def".to_string()]),
                ..CustomResourceDefinitionNames::default()
            },
            versions: vec![CustomResourceDefinitionVersion {
                name: "v1".to_string(),
                served: true,
                storage: true,
                schema: Some(CustomResourceValidation {
                    open_api_v3_schema: Some(schema),
                }),
                ..CustomResourceDefinitionVersion::default()
            }],
            ..CustomResourceDefinitionSpec::default()
        },
        status: None,
    }
}

/// The daemon's config: it runs delegates chrooted into the host (`/hostroot`), so `binDir` is
/// the host's path; it finds the primary network's config and writes `00-multus.conf` in the
/// host's config directory; the shim reaches it over a socket in the host's `/run/multus`.
fn daemon_config(ctx: &Ctx) -> Result<ConfigMap> {
    let config = json!({
        "chrootDir": "/hostroot",
        "cniVersion": "0.3.1",
        "logLevel": "verbose",
        "logToStderr": true,
        "binDir": ctx.cni_bin_dir,
        "cniConfigDir": CONF_DIR_IN_POD,
        "multusAutoconfigDir": CONF_DIR_IN_POD,
        "multusConfigFile": "auto",
        "socketDir": "/host/run/multus/",
    });
    let text = serde_json::to_string_pretty(&config).context("serialise the multus config")?;
    Ok(ConfigMap {
        metadata: common::meta(ctx, DAEMON_CONFIG, Some(COMPONENT)),
        data: Some(BTreeMap::from([(
            DAEMON_CONFIG_KEY.to_string(),
            format!("{text}\n"),
        )])),
        ..ConfigMap::default()
    })
}

fn propagated(name: &str, path: &str) -> VolumeMount {
    VolumeMount {
        mount_propagation: Some("HostToContainer".to_string()),
        ..common::mount(name, path)
    }
}

fn daemon_set(ctx: &Ctx) -> k8s_openapi::api::apps::v1::DaemonSet {
    let bin_dir = ctx.cni_bin_dir.as_str();
    let install = Container {
        command: Some(vec![
            format!("{MULTUS_BIN}/install_multus"),
            "-d".to_string(),
            ctx.host_bin_dir(),
            "-t".to_string(),
            "thick".to_string(),
        ]),
        resources: Some(common::requests("10m", "15Mi")),
        security_context: Some(common::privileged()),
        volume_mounts: Some(vec![common::mount(
            common::CNI_BIN_VOLUME,
            &ctx.host_bin_dir(),
        )]),
        ..common::container(ctx, "install-multus-binary", &ctx.settings.multus_image)
    };
    let daemon = Container {
        command: Some(vec![format!("{MULTUS_BIN}/multus-daemon")]),
        env: Some(vec![common::field_env("MULTUS_NODE_NAME", "spec.nodeName")]),
        resources: Some(common::requests("10m", "15Mi")),
        security_context: Some(common::privileged()),
        volume_mounts: Some(vec![
            common::mount("cni", CONF_DIR_IN_POD),
            // The daemon needs the binaries at the same path as on the host.
            common::mount(common::CNI_BIN_VOLUME, bin_dir),
            common::mount("host-run", "/host/run"),
            common::mount("host-var-lib-cni-multus", "/var/lib/cni/multus"),
            propagated("host-var-lib-kubelet", "/var/lib/kubelet"),
            common::mount("host-run-k8s-cni-cncf-io", "/run/k8s.cni.cncf.io"),
            propagated("host-run-netns", "/run/netns"),
            VolumeMount {
                read_only: Some(true),
                ..common::mount(DAEMON_CONFIG, "/etc/cni/net.d/multus.d")
            },
            propagated("hostroot", "/hostroot"),
        ]),
        ..common::container(ctx, "kube-multus", &ctx.settings.multus_image)
    };
    let pod = PodSpec {
        service_account_name: Some(NAME.to_string()),
        host_network: Some(true),
        host_pid: Some(true),
        priority_class_name: Some("system-node-critical".to_string()),
        termination_grace_period_seconds: Some(10),
        init_containers: Some(vec![install]),
        containers: vec![daemon],
        volumes: Some(vec![
            common::host_path_volume("cni", &ctx.cni_conf_dir),
            common::cni_bin_volume(ctx),
            common::host_path_volume("hostroot", "/"),
            Volume {
                name: DAEMON_CONFIG.to_string(),
                config_map: Some(ConfigMapVolumeSource {
                    name: DAEMON_CONFIG.to_string(),
                    items: Some(vec![KeyToPath {
                        key: DAEMON_CONFIG_KEY.to_string(),
                        path: DAEMON_CONFIG_KEY.to_string(),
                        mode: None,
                    }]),
                    ..ConfigMapVolumeSource::default()
                }),
                ..Volume::default()
            },
            common::host_path_volume("host-run", "/run"),
            common::host_path_volume("host-var-lib-cni-multus", "/var/lib/cni/multus"),
            common::host_path_volume("host-var-lib-kubelet", "/var/lib/kubelet"),
            common::host_path_volume("host-run-k8s-cni-cncf-io", "/run/k8s.cni.cncf.io"),
            common::host_path_volume("host-run-netns", "/run/netns/"),
        ]),
        ..PodSpec::default()
    };
    // One node at a time (the API's default): pods created on a node whose daemon restarts
    // wait for it, so keep that window small.
    common::daemon_set(
        ctx,
        COMPONENT,
        NAME,
        SELECTOR,
        "Multus attaches the extra networks of pods and VMs",
        pod,
        None,
    )
}

#[cfg(test)]
mod tests;
