//! Our allocator (`/kubemacpool` in the plugins image, the crate `kubemacpool`): two replicas
//! of the manager that never hand out one MAC twice (each allocates in blocks it claimed
//! through the API server), rolled one at a time with no replica down; the range read live from
//! the ConfigMap; the serving certificate read from its Secret as it rotates, not mounted.

use k8s_openapi::api::apps::v1::{Deployment, DeploymentStrategy, RollingUpdateDeployment};
use k8s_openapi::api::core::v1::{
    Affinity, Container, HTTPGetAction, PodAffinityTerm, PodAntiAffinity, PodSpec, Probe,
    WeightedPodAffinityTerm,
};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::monitoring::METRICS_PORT;
use super::{
    deployment, CERT_MANAGER, CERT_MANAGER_SELECTOR, CONTROLLER_SELECTOR, MAC_CONTROLLER,
    WEBHOOK_PORT,
};
use crate::defaults::default_self_sign;
use crate::error::{Context, Result};
use crate::render::common::{self, Ctx};
use crate::render::tls;

/// The binary in the plugins image.
const BINARY: &str = "/kubemacpool";
/// Replicas of the manager: one may be rolled or lost while the other serves.
pub const REPLICAS: i32 = 2;
/// A stopping manager stays 5 s unready before it stops serving, then drains.
const GRACE_SECONDS: i64 = 30;

pub(super) fn cert_manager(ctx: &Ctx) -> Deployment {
    let intervals = ctx
        .spec
        .self_sign_configuration
        .clone()
        .unwrap_or_else(default_self_sign);
    let manager = Container {
        command: Some(common::strings(&[BINARY, "cert-manager"])),
        env: Some(vec![
            common::field_env("POD_NAMESPACE", "metadata.namespace"),
            common::value_env("CA_ROTATE_INTERVAL", &intervals.ca_rotate_interval),
            common::value_env("CA_OVERLAP_INTERVAL", &intervals.ca_overlap_interval),
            common::value_env("CERT_ROTATE_INTERVAL", &intervals.cert_rotate_interval),
            common::value_env("CERT_OVERLAP_INTERVAL", &intervals.cert_overlap_interval),
        ]),
        resources: Some(common::requests("10m", "20Mi")),
        ..common::container(ctx, "manager", &ctx.settings.plugins_image)
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
        // Two cert managers for a moment are harmless: each writes with resourceVersions.
        DeploymentStrategy {
            type_: Some("RollingUpdate".to_string()),
            rolling_update: None,
        },
    )
}

fn https_probe(path: &str, period: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.to_string()),
            port: IntOrString::String("webhook-server".to_string()),
            scheme: Some("HTTPS".to_string()),
            ..HTTPGetAction::default()
        }),
        period_seconds: Some(period),
        failure_threshold: Some(3),
        ..Probe::default()
    }
}

pub(super) fn mac_controller(ctx: &Ctx) -> Deployment {
    let manager = Container {
        command: Some(common::strings(&[BINARY, "manager"])),
        args: Some(
            common::strings(&["--wait-time=30"])
                .into_iter()
                .chain(tls::go_server_flags(ctx.spec.tls_security_profile.as_ref()))
                .collect(),
        ),
        env: Some(vec![
            common::field_env("POD_NAMESPACE", "metadata.namespace"),
            common::field_env("POD_NAME", "metadata.name"),
        ]),
        ports: Some(vec![
            common::container_port("webhook-server", WEBHOOK_PORT, "TCP"),
            common::container_port("metrics", METRICS_PORT, "TCP"),
        ]),
        // Ready as soon as the pool is read: the kubelet looks every second.
        readiness_probe: Some(https_probe("/readyz", 1)),
        liveness_probe: Some(Probe {
            initial_delay_seconds: Some(15),
            ..https_probe("/healthz", 10)
        }),
        resources: Some(common::requests("50m", "64Mi")),
        ..common::container(ctx, "manager", &ctx.settings.plugins_image)
    };
    deployment(
        ctx,
        MAC_CONTROLLER,
        CONTROLLER_SELECTOR,
        "KubeMacPool allocates MAC addresses to the interfaces of pods and VMs",
        PodSpec {
            containers: vec![manager],
            termination_grace_period_seconds: Some(GRACE_SECONDS),
            affinity: Some(spread_over_nodes()),
            ..PodSpec::default()
        },
        REPLICAS,
        // A new replica is ready before an old one stops: never fewer than REPLICAS serve.
        DeploymentStrategy {
            type_: Some("RollingUpdate".to_string()),
            rolling_update: Some(RollingUpdateDeployment {
                max_surge: Some(IntOrString::Int(1)),
                max_unavailable: Some(IntOrString::Int(0)),
            }),
        },
    )
}

/// A voluntary disruption (a node drain, an eviction) never takes the last ready manager:
/// with `failurePolicy: Fail`, no VM could be created without one. On Kubernetes before 1.21
/// the same object is served as `policy/v1beta1`.
pub(super) fn disruption_budget(ctx: &Ctx) -> Result<serde_json::Value> {
    let budget = PodDisruptionBudget {
        metadata: common::meta(ctx, MAC_CONTROLLER, Some(super::COMPONENT)),
        spec: Some(PodDisruptionBudgetSpec {
            min_available: Some(IntOrString::Int(1)),
            selector: Some(common::selector(CONTROLLER_SELECTOR)),
            ..PodDisruptionBudgetSpec::default()
        }),
        status: None,
    };
    let mut object = serde_json::to_value(&budget).context("serialise a rendered object")?;
    object["apiVersion"] = "policy/v1".into();
    object["kind"] = "PodDisruptionBudget".into();
    if ctx.cluster.pdb_v1beta1 {
        object["apiVersion"] = "policy/v1beta1".into();
    }
    Ok(object)
}

/// Replicas on different nodes where the cluster has them, so one node's loss leaves one.
fn spread_over_nodes() -> Affinity {
    Affinity {
        pod_anti_affinity: Some(PodAntiAffinity {
            preferred_during_scheduling_ignored_during_execution: Some(vec![
                WeightedPodAffinityTerm {
                    weight: 100,
                    pod_affinity_term: PodAffinityTerm {
                        label_selector: Some(common::selector(CONTROLLER_SELECTOR)),
                        topology_key: "kubernetes.io/hostname".to_string(),
                        ..PodAffinityTerm::default()
                    },
                },
            ]),
            ..PodAntiAffinity::default()
        }),
        ..Affinity::default()
    }
}
