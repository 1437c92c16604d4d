//! Upstream's KubeMacPool (`/manager` of `KUBEMACPOOL_IMAGE`): one replica of each manager,
//! its range also in the environment (read at start), the serving certificate mounted.

use k8s_openapi::api::apps::v1::{Deployment, DeploymentStrategy};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EnvVar, HTTPGetAction, HTTPHeader, PodSpec, Probe,
    SecretVolumeSource, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::{
    deployment, CERT_MANAGER, CERT_MANAGER_SELECTOR, CONTROLLER_SELECTOR, MAC_CONTROLLER,
    TLS_SECRET, WEBHOOK_PORT,
};
use crate::defaults::default_self_sign;
use crate::render::common::{self, Ctx};
use crate::render::tls;
use crate::spec::KubeMacPool;

fn label_env(name: &str, label: &str) -> EnvVar {
    common::field_env(name, &format!("metadata.labels['{label}']"))
}

pub(super) fn cert_manager(ctx: &Ctx) -> Deployment {
    let intervals = ctx
        .spec
        .self_sign_configuration
        .clone()
        .unwrap_or_else(default_self_sign);
    let manager = Container {
        command: Some(common::strings(&["/manager"])),
        args: Some(common::strings(&["--v=production"])),
        env: Some(vec![
            common::value_env("RUN_CERT_MANAGER", ""),
            common::field_env("POD_NAMESPACE", "metadata.namespace"),
            common::field_env("POD_NAME", "metadata.name"),
            // It labels the Secret it writes with these.
            label_env("COMPONENT", crate::labels::COMPONENT),
            label_env("PART_OF", crate::labels::PART_OF),
            label_env("VERSION", crate::labels::VERSION),
            label_env("MANAGED_BY", crate::labels::MANAGED_BY),
            common::value_env("CA_ROTATE_INTERVAL", &intervals.ca_rotate_interval),
            common::value_env("CA_OVERLAP_INTERVAL", &intervals.ca_overlap_interval),
            common::value_env("CERT_ROTATE_INTERVAL", &intervals.cert_rotate_interval),
            common::value_env("CERT_OVERLAP_INTERVAL", &intervals.cert_overlap_interval),
        ]),
        resources: Some(common::requests("30m", "30Mi")),
        ..common::container(ctx, "manager", &ctx.settings.kubemacpool_image)
    };
    deployment(
        ctx,
        CERT_MANAGER,
        CERT_MANAGER_SELECTOR,
        "KubeMacPool's certificate manager rotates the webhook's CA and certificate",
        PodSpec {
            containers: vec![manager],
            termination_grace_period_seconds: Some(5),
            ..PodSpec::default()
        },
        1,
        recreate(),
    )
}

pub(super) fn mac_controller(ctx: &Ctx, pool: &KubeMacPool) -> Deployment {
    let manager = Container {
        command: Some(common::strings(&["/manager"])),
        args: Some(
            common::strings(&["--v=production", "--wait-time=300"])
                .into_iter()
                .chain(tls::go_server_flags(ctx.spec.tls_security_profile.as_ref()))
                .collect(),
        ),
        env: Some(vec![
            common::field_env("POD_NAMESPACE", "metadata.namespace"),
            common::field_env("POD_NAME", "metadata.name"),
            common::value_env("RANGE_START", &pool.range_start),
            common::value_env("RANGE_END", &pool.range_end),
            common::value_env("KUBEVIRT_CLIENT_GO_SCHEME_REGISTRATION_VERSION", "v1"),
        ]),
        ports: Some(vec![ContainerPort {
            container_port: WEBHOOK_PORT,
            name: Some("webhook-server".to_string()),
            protocol: Some("TCP".to_string()),
            ..ContainerPort::default()
        }]),
        readiness_probe: Some(Probe {
            http_get: Some(HTTPGetAction {
                http_headers: Some(vec![HTTPHeader {
                    name: "Content-Type".to_string(),
                    value: "application/json".to_string(),
                }]),
                path: Some("/readyz".to_string()),
                port: IntOrString::String("webhook-server".to_string()),
                scheme: Some("HTTPS".to_string()),
                host: None,
            }),
            initial_delay_seconds: Some(10),
            period_seconds: Some(10),
            ..Probe::default()
        }),
        resources: Some(common::requests("100m", "100Mi")),
        volume_mounts: Some(vec![VolumeMount {
            read_only: Some(true),
            ..common::mount("tls-key-pair", "/tmp/k8s-webhook-server/serving-certs/")
        }]),
        ..common::container(ctx, "manager", &ctx.settings.kubemacpool_image)
    };
    deployment(
        ctx,
        MAC_CONTROLLER,
        CONTROLLER_SELECTOR,
        "KubeMacPool allocates MAC addresses to the interfaces of pods and VMs",
        PodSpec {
            containers: vec![manager],
            volumes: Some(vec![Volume {
                name: "tls-key-pair".to_string(),
                secret: Some(SecretVolumeSource {
                    secret_name: Some(TLS_SECRET.to_string()),
                    ..SecretVolumeSource::default()
                }),
                ..Volume::default()
            }]),
            termination_grace_period_seconds: Some(5),
            ..PodSpec::default()
        },
        1,
        recreate(),
    )
}

/// Never two upstream managers at once: each keeps its pool in memory only, and two would
/// hand out the same addresses.
fn recreate() -> DeploymentStrategy {
    DeploymentStrategy {
        type_: Some("Recreate".to_string()),
        rolling_update: None,
    }
}
