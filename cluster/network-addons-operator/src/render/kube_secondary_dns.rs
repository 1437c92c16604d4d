//! kubeSecondaryDNS: upstream kube-secondary-dns answers DNS queries for the secondary
//! interfaces of KubeVirt VMs. Its status monitor writes a zone of `<vm>.<namespace>.vm.<DOMAIN>`
//! from the VMIs' reported IPs; CoreDNS serves it on 5353/UDP. `domain` and `nameServerIP` of the
//! spec (or the `DOMAIN` and `NAME_SERVER_IP` its README writes) go into its ConfigMap.
//!
//! The names, selector, RBAC and both containers are upstream's. One addition: the NodePort
//! Service upstream's README tells administrators to create by hand, so the server is reachable
//! from outside the cluster (where a corporate DNS delegates the zone to it) without a step
//! every install repeats. `nameServerIP` is the address of a node, or of whatever load balancer
//! sits in front of that port.

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapKeySelector, ConfigMapVolumeSource, Container, EmptyDirVolumeSource,
    EnvVar, EnvVarSource, KeyToPath, PodSecurityContext, PodSpec, SeccompProfile, Service,
    ServicePort, ServiceSpec, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::common::{self, Ctx, Identity};
use super::network_policy;
use super::Rendered;
use crate::error::Result;
use crate::spec::Component;

pub const NAME: &str = "secondary-dns";
/// The service account, ClusterRole and binding are all named this.
pub const ACCOUNT: &str = "secondary";
const SELECTOR: &[(&str, &str)] = &[("k8s-app", NAME)];
const DNS_PORT: i32 = 5353;
const COMPONENT: Component = Component::KubeSecondaryDns;

const COREFILE: &str = ".:5353 {
    auto {
      directory /zones db\\.(.*) {1}
      reload 45s
    }
    reload
    log
    health :8082
    ready :8083
}
";

pub fn render(ctx: &Ctx) -> Result<Vec<Rendered>> {
    let c = Some(COMPONENT);
    let rules = vec![common::rule(
        &["kubevirt.io"],
        &["virtualmachineinstances"],
        &["get", "list", "watch"],
    )];
    let mut out = common::cluster_identity(ctx, COMPONENT, Identity::named(ACCOUNT), rules)?;
    out.extend([
        common::to_rendered(c, &config_map(ctx))?,
        common::to_rendered(c, &service(ctx))?,
        common::to_rendered(c, &deployment(ctx))?,
        common::to_rendered(
            c,
            &network_policy::allow_ingress(
                ctx,
                COMPONENT,
                "allow-ingress-to-secondary-dns",
                SELECTOR,
                "UDP",
                named("dns"),
            ),
        )?,
    ]);
    Ok(out)
}

/// `domain` and `nameServerIP`, or their README spellings.
fn domain_and_name_server(ctx: &Ctx) -> (String, String) {
    let dns = ctx.spec.kube_secondary_dns.clone().unwrap_or_default();
    let either = |a: String, b: String| if a.is_empty() { b } else { a };
    (
        either(dns.domain, dns.domain_readme),
        either(dns.name_server_ip, dns.name_server_ip_readme),
    )
}

fn config_map(ctx: &Ctx) -> ConfigMap {
    let (domain, name_server) = domain_and_name_server(ctx);
    ConfigMap {
        metadata: common::meta(ctx, NAME, Some(COMPONENT)),
        data: Some(common::string_map(&[
            ("DOMAIN", &domain),
            ("NAME_SERVER_IP", &name_server),
            ("Corefile", COREFILE),
        ])),
        ..ConfigMap::default()
    }
}

fn service(ctx: &Ctx) -> Service {
    Service {
        metadata: common::meta(ctx, NAME, Some(COMPONENT)),
        spec: Some(ServiceSpec {
            type_: Some("NodePort".to_string()),
            ports: Some(vec![ServicePort {
                name: Some("dns".to_string()),
                port: 53,
                protocol: Some("UDP".to_string()),
                target_port: Some(IntOrString::String("dns".to_string())),
                ..ServicePort::default()
            }]),
            selector: Some(common::string_map(SELECTOR)),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}

fn named(port: &str) -> IntOrString {
    IntOrString::String(port.to_string())
}

fn config_env(name: &str) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value: None,
        value_from: Some(EnvVarSource {
            config_map_key_ref: Some(ConfigMapKeySelector {
                name: NAME.to_string(),
                key: name.to_string(),
                optional: None,
            }),
            ..EnvVarSource::default()
        }),
    }
}

fn deployment(ctx: &Ctx) -> Deployment {
    let zones = || common::mount("secdns-zones", "/zones");
    let core_dns = Container {
        args: Some(common::strings(&["-conf", "/etc/coredns/Corefile"])),
        ports: Some(vec![
            common::container_port("dns", DNS_PORT, "UDP"),
            common::container_port("healthport", 8082, "TCP"),
            common::container_port("readyport", 8083, "TCP"),
        ]),
        readiness_probe: Some(common::http_probe("/ready", named("readyport"), 5, 10)),
        liveness_probe: Some(common::http_probe("/health", named("healthport"), 15, 20)),
        resources: Some(common::requests("100m", "70Mi")),
        security_context: Some(common::restricted()),
        volume_mounts: Some(vec![
            VolumeMount {
                read_only: Some(true),
                ..common::mount("config-volume", "/etc/coredns")
            },
            VolumeMount {
                read_only: Some(true),
                ..zones()
            },
        ]),
        ..common::container(ctx, "secondary-dns", &ctx.settings.core_dns_image)
    };
    let monitor = Container {
        env: Some(vec![config_env("DOMAIN"), config_env("NAME_SERVER_IP")]),
        ports: Some(vec![common::container_port("healthport", 8081, "TCP")]),
        readiness_probe: Some(common::http_probe("/readyz", named("healthport"), 5, 10)),
        liveness_probe: Some(common::http_probe("/healthz", named("healthport"), 15, 20)),
        resources: Some(common::requests("100m", "70Mi")),
        security_context: Some(common::restricted()),
        volume_mounts: Some(vec![zones()]),
        ..common::container(
            ctx,
            "status-monitor",
            &ctx.settings.kube_secondary_dns_image,
        )
    };
    // OpenShift's restricted SCC assigns the user; elsewhere upstream's fixed non-root one.
    let openshift = ctx.cluster.openshift;
    let mut pod = PodSpec {
        service_account_name: Some(ACCOUNT.to_string()),
        priority_class_name: Some("system-cluster-critical".to_string()),
        restart_policy: Some("Always".to_string()),
        termination_grace_period_seconds: Some(1),
        security_context: Some(PodSecurityContext {
            run_as_user: (!openshift).then_some(1000),
            run_as_non_root: (!openshift).then_some(true),
            seccomp_profile: Some(SeccompProfile {
                type_: "RuntimeDefault".to_string(),
                localhost_profile: None,
            }),
            ..PodSecurityContext::default()
        }),
        containers: vec![core_dns, monitor],
        volumes: Some(vec![
            Volume {
                name: "config-volume".to_string(),
                config_map: Some(ConfigMapVolumeSource {
                    name: NAME.to_string(),
                    default_mode: Some(420),
                    items: Some(vec![KeyToPath {
                        key: "Corefile".to_string(),
                        path: "Corefile".to_string(),
                        mode: None,
                    }]),
                    ..ConfigMapVolumeSource::default()
                }),
                ..Volume::default()
            },
            Volume {
                name: "secdns-zones".to_string(),
                empty_dir: Some(EmptyDirVolumeSource::default()),
                ..Volume::default()
            },
        ]),
        ..PodSpec::default()
    };
    common::place(&mut pod, &ctx.infra);
    let mut template = common::pod_template(
        ctx,
        COMPONENT,
        &[SELECTOR, &[(network_policy::ACCESS_LABEL, "")]].concat(),
        "kube-secondary-dns serves DNS records of the VMs' secondary interfaces",
        pod,
    );
    if let Some(annotations) = template
        .metadata
        .as_mut()
        .and_then(|m| m.annotations.as_mut())
    {
        annotations.insert(
            "kubectl.kubernetes.io/default-container".to_string(),
            "status-monitor".to_string(),
        );
    }
    Deployment {
        metadata: common::meta(ctx, NAME, Some(COMPONENT)),
        spec: Some(DeploymentSpec {
            replicas: Some(1),
            selector: common::selector(SELECTOR),
            template,
            ..DeploymentSpec::default()
        }),
        status: None,
    }
}

#[cfg(test)]
mod tests;
