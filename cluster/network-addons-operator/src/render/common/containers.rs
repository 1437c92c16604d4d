//! Small builders for containers and what they hold: resources, ports, probes, security
//! contexts, volumes and mounts, environment variables.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EnvVar, EnvVarSource, HTTPGetAction,
    HostPathVolumeSource, ObjectFieldSelector, Probe, ResourceRequirements, SecurityContext,
    Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::Ctx;

/// Requests only: limits on node agents and controllers get them OOM-killed on big clusters,
/// and a CPU limit throttles them when the node is busy, exactly when they are needed.
pub fn requests(cpu: &str, memory: &str) -> ResourceRequirements {
    ResourceRequirements {
        requests: Some(BTreeMap::from([
            ("cpu".to_string(), Quantity(cpu.to_string())),
            ("memory".to_string(), Quantity(memory.to_string())),
        ])),
        ..ResourceRequirements::default()
    }
}

pub fn container_port(name: &str, port: i32, protocol: &str) -> ContainerPort {
    ContainerPort {
        container_port: port,
        name: Some(name.to_string()),
        protocol: Some(protocol.to_string()),
        ..ContainerPort::default()
    }
}

/// An HTTP GET probe of `path` on `port` (a number, or the name of a container port).
pub fn http_probe(path: &str, port: IntOrString, initial_delay: i32, period: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.to_string()),
            port,
            ..HTTPGetAction::default()
        }),
        initial_delay_seconds: Some(initial_delay),
        period_seconds: Some(period),
        ..Probe::default()
    }
}

/// No privilege escalation, no capabilities: for controllers that only talk to the API.
pub fn restricted() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            drop: Some(strings(&["ALL"])),
            add: None,
        }),
        ..SecurityContext::default()
    }
}

pub fn privileged() -> SecurityContext {
    SecurityContext {
        privileged: Some(true),
        ..SecurityContext::default()
    }
}

/// A container with the fields every rendered container has: the spec's pull policy and the
/// log tail as termination message.
pub fn container(ctx: &Ctx, name: &str, image: &str) -> Container {
    Container {
        name: name.to_string(),
        image: Some(image.to_string()),
        image_pull_policy: Some(ctx.pull_policy.clone()),
        termination_message_policy: Some("FallbackToLogsOnError".to_string()),
        ..Container::default()
    }
}

pub fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

pub fn host_path_volume(name: &str, path: &str) -> Volume {
    Volume {
        name: name.to_string(),
        host_path: Some(HostPathVolumeSource {
            path: path.to_string(),
            type_: None,
        }),
        ..Volume::default()
    }
}

pub fn mount(name: &str, path: &str) -> VolumeMount {
    VolumeMount {
        name: name.to_string(),
        mount_path: path.to_string(),
        ..VolumeMount::default()
    }
}

/// An environment variable from the pod's own fields (`spec.nodeName`, `metadata.namespace`).
pub fn field_env(name: &str, field_path: &str) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value: None,
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                api_version: None,
                field_path: field_path.to_string(),
            }),
            ..EnvVarSource::default()
        }),
    }
}

/// A variable set to `value`. An empty one is rendered without `value` (the same empty
/// variable): the API server does not store an empty string, so applying `value: ""` would
/// change the object on every apply (Kubernetes 1.20 then writes it and every watcher, the
/// operator included, hears of it again).
pub fn value_env(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value: (!value.is_empty()).then(|| value.to_string()),
        value_from: None,
    }
}
