//! kubevirtIpamController: upstream kubevirt-ipam-controller keeps a KubeVirt VM's IP addresses
//! across restarts and migrations. It creates an IPAMClaim per VM interface, and its mutating
//! webhook points each virt-launcher pod's network selection at that claim.
//!
//! The webhook needs a serving certificate. On OpenShift the service CA issues it, through the
//! Service's serving-cert annotation, and injects the CA bundle into the webhook. Elsewhere
//! cert-manager does: a self-signed Issuer and a Certificate, with the CA injected through
//! cert-manager's annotation. Without either, nothing is rendered, and the status says why
//! ([`crate::spec::NetworkAddonsConfigSpec::not_deployed`]). A webhook with `failurePolicy: Fail`
//! that nobody can serve would block every virt-launcher pod.
//!
//! `tlsSecurityProfile` goes to its webhook server as `--tls-min-version` and
//! `--tls-cipher-suites`, as upstream passes it.
//!
//! The names, selector, RBAC, webhook and IPAMClaim CRD are upstream's. The CRD's schema leaves
//! out upstream's CEL rules: Kubernetes before 1.25 refuses a CRD that has them in server-side
//! apply. The webhook configuration comes last, after the Deployment serving it.

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ServiceReference,
    WebhookClientConfig,
};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Container, EnvVar, PodSecurityContext, PodSpec, SeccompProfile, SecretVolumeSource, Service,
    Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{json, Value};

use super::common::{self, Ctx, Identity, NamespacedRole};
use super::network_policy;
use super::tls;
use super::Rendered;
use crate::error::Result;
use crate::spec::Component;

pub const NAME: &str = "kubevirt-ipam-controller-manager";
pub const SERVICE: &str = "kubevirt-ipam-controller-webhook-service";
pub const WEBHOOK: &str = "kubevirt-ipam-controller-mutating-webhook-configuration";
pub const CERTIFICATE: &str = "kubevirt-ipam-controller-serving-cert";
pub const ISSUER: &str = "kubevirt-ipam-controller-selfsigned-issuer";
pub const CRD: &str = "ipamclaims.k8s.cni.cncf.io";
const CLUSTER_ROLE: &str = "kubevirt-ipam-controller-manager-role";
const CLUSTER_ROLE_BINDING: &str = "kubevirt-ipam-controller-manager-rolebinding";
const LEADER_ROLE: &str = "kubevirt-ipam-controller-leader-election-role";
const LEADER_ROLE_BINDING: &str = "kubevirt-ipam-controller-leader-election-rolebinding";
const SELECTOR: &[(&str, &str)] = &[("app", "ipam-virt-workloads"), ("control-plane", "manager")];
const WEBHOOK_PORT: i32 = 9443;
/// `/healthz` and `/readyz`, on a port the container does not declare.
const HEALTH_PORT: IntOrString = IntOrString::Int(8081);
/// The Secret holding the webhook's key pair: cert-manager's Certificate writes it elsewhere,
/// OpenShift's service CA writes the one named after the Service.
const CERT_MANAGER_SECRET: &str = "webhook-server-cert";
const CERT_MANAGER_MOUNT: &str = "/tmp/k8s-webhook-server/serving-certs";
const OPENSHIFT_CERT_DIR: &str = "/etc/ipam-controller/certificates";
const COMPONENT: Component = Component::KubevirtIpamController;

pub fn render(ctx: &Ctx) -> Result<Vec<Rendered>> {
    use common::rule;
    let c = Some(COMPONENT);
    let mut out = Vec::new();
    if !ctx.cluster.openshift {
        // OpenShift's OVN-Kubernetes brings the CRD there.
        out.push(common::to_rendered(c, &ipam_claim_crd(ctx))?);
    }
    let manager_rules = vec![
        rule(&[""], &["pods"], &["get", "list", "watch"]),
        rule(
            &["kubevirt.io"],
            &["virtualmachines", "virtualmachineinstances"],
            &["get", "list", "watch"],
        ),
        rule(
            &["kubevirt.io"],
            &[
                "virtualmachines/finalizers",
                "virtualmachineinstances/finalizers",
            ],
            &["update"],
        ),
        rule(
            &["k8s.cni.cncf.io"],
            &["ipamclaims", "network-attachment-definitions"],
            &["get", "list", "watch"],
        ),
        rule(&["k8s.cni.cncf.io"], &["ipamclaims"], &["create", "update"]),
    ];
    out.extend(common::identity(
        ctx,
        COMPONENT,
        Identity {
            account: NAME,
            role: CLUSTER_ROLE,
            binding: CLUSTER_ROLE_BINDING,
        },
        vec![leader_election_role()],
        manager_rules,
    )?);
    out.push(common::to_rendered(c, &service(ctx))?);
    if !ctx.cluster.openshift {
        out.push(common::to_rendered(c, &issuer(ctx))?);
        out.push(common::to_rendered(c, &certificate(ctx))?);
    }
    out.push(common::to_rendered(c, &deployment(ctx))?);
    out.push(common::to_rendered(c, &webhook(ctx))?);
    out.push(common::to_rendered(
        c,
        &network_policy::allow_ingress(
            ctx,
            COMPONENT,
            "kubevirt-ipam-controller-allow-ingress-to-ipam-ext-webhook",
            SELECTOR,
            "TCP",
            IntOrString::Int(WEBHOOK_PORT),
        ),
    )?);
    Ok(out)
}

/// Upstream's leader election: its lock, in the operand namespace only.
fn leader_election_role() -> NamespacedRole<'static> {
    let all = [
        "get", "list", "watch", "create", "update", "patch", "delete",
    ];
    NamespacedRole {
        role: LEADER_ROLE,
        binding: LEADER_ROLE_BINDING,
        rules: vec![
            common::rule(&[""], &["configmaps"], &all),
            common::rule(&["coordination.k8s.io"], &["leases"], &all),
            common::rule(&[""], &["events"], &["create", "patch"]),
        ],
    }
}

fn service(ctx: &Ctx) -> Service {
    let mut service = common::webhook_service(ctx, COMPONENT, SERVICE, SELECTOR, WEBHOOK_PORT);
    if ctx.cluster.openshift {
        service.metadata.annotations = Some(common::string_map(&[(
            "service.beta.openshift.io/serving-cert-secret-name",
            SERVICE,
        )]));
    }
    service
}

fn issuer(ctx: &Ctx) -> Value {
    json!({
        "apiVersion": "cert-manager.io/v1",
        "kind": "Issuer",
        "metadata": common::meta(ctx, ISSUER, Some(COMPONENT)),
        "spec": {"selfSigned": {}},
    })
}

fn certificate(ctx: &Ctx) -> Value {
    let ns = &ctx.settings.namespace;
    json!({
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": common::meta(ctx, CERTIFICATE, Some(COMPONENT)),
        "spec": {
            "dnsNames": [format!("{SERVICE}.{ns}.svc"), format!("{SERVICE}.{ns}.svc.cluster.local")],
            "issuerRef": {"kind": "Issuer", "name": ISSUER},
            "secretName": CERT_MANAGER_SECRET,
        },
    })
}

fn deployment(ctx: &Ctx) -> Deployment {
    let openshift = ctx.cluster.openshift;
    let (secret, mount_path) = if openshift {
        (SERVICE, OPENSHIFT_CERT_DIR)
    } else {
        (CERT_MANAGER_SECRET, CERT_MANAGER_MOUNT)
    };
    let mut args = vec!["--leader-elect".to_string()];
    if openshift {
        args.push(format!("--certificates-dir={OPENSHIFT_CERT_DIR}"));
    }
    let nad_namespace = ctx
        .spec
        .kubevirt_ipam_controller
        .as_ref()
        .map(|i| i.default_network_nad_namespace.as_str())
        .unwrap_or_default();
    if !nad_namespace.is_empty() {
        args.push(format!("--default-network-nad-namespace={nad_namespace}"));
    }
    args.extend(tls::go_server_flags(ctx.spec.tls_security_profile.as_ref()));
    let manager = Container {
        command: Some(common::strings(&["/manager"])),
        args: Some(args),
        env: Some(vec![EnvVar {
            name: "LOG_LEVEL".to_string(),
            value: Some("0".to_string()),
            value_from: None,
        }]),
        ports: Some(vec![common::container_port(
            "webhook-server",
            WEBHOOK_PORT,
            "TCP",
        )]),
        liveness_probe: Some(common::http_probe("/healthz", HEALTH_PORT, 15, 20)),
        readiness_probe: Some(common::http_probe("/readyz", HEALTH_PORT, 5, 10)),
        resources: Some(common::requests("10m", "128Mi")),
        security_context: Some(common::restricted()),
        volume_mounts: Some(vec![VolumeMount {
            read_only: Some(true),
            ..common::mount("cert", mount_path)
        }]),
        ..common::container(ctx, "manager", &ctx.settings.kubevirt_ipam_controller_image)
    };
    let mut pod = PodSpec {
        service_account_name: Some(NAME.to_string()),
        priority_class_name: Some("system-cluster-critical".to_string()),
        termination_grace_period_seconds: Some(10),
        security_context: Some(PodSecurityContext {
            run_as_non_root: Some(true),
            seccomp_profile: Some(SeccompProfile {
                type_: "RuntimeDefault".to_string(),
                localhost_profile: None,
            }),
            ..PodSecurityContext::default()
        }),
        containers: vec![manager],
        volumes: Some(vec![Volume {
            name: "cert".to_string(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(secret.to_string()),
                default_mode: Some(420),
                ..SecretVolumeSource::default()
            }),
            ..Volume::default()
        }]),
        ..PodSpec::default()
    };
    common::place(&mut pod, &ctx.workloads);
    Deployment {
        metadata: common::meta(ctx, NAME, Some(COMPONENT)),
        spec: Some(DeploymentSpec {
            replicas: Some(2),
            selector: common::selector(SELECTOR),
            template: common::pod_template(
                ctx,
                COMPONENT,
                &[SELECTOR, &[(network_policy::ACCESS_LABEL, "")]].concat(),
                "kubevirt-ipam-controller keeps the IP addresses of VMs across restarts and migrations",
                pod,
            ),
            ..DeploymentSpec::default()
        }),
        status: None,
    }
}

fn webhook(ctx: &Ctx) -> MutatingWebhookConfiguration {
    let mut metadata = common::cluster_meta(ctx, WEBHOOK, Some(COMPONENT));
    metadata.annotations = Some(if ctx.cluster.openshift {
        common::string_map(&[("service.beta.openshift.io/inject-cabundle", "true")])
    } else {
        common::string_map(&[(
            "cert-manager.io/inject-ca-from",
            &format!("{}/{CERTIFICATE}", ctx.settings.namespace),
        )])
    });
    MutatingWebhookConfiguration {
        metadata,
        webhooks: Some(vec![MutatingWebhook {
            name: "ipam-claims.k8s.cni.cncf.io".to_string(),
            admission_review_versions: common::strings(&["v1"]),
            client_config: WebhookClientConfig {
                service: Some(ServiceReference {
                    name: SERVICE.to_string(),
                    namespace: ctx.settings.namespace.clone(),
                    path: Some("/mutate-v1-pod".to_string()),
                    port: None,
                }),
                ..WebhookClientConfig::default()
            },
            failure_policy: Some("Fail".to_string()),
            // Only virt-launcher pods: every other pod is created without asking it.
            object_selector: Some(LabelSelector {
                match_labels: Some(common::string_map(&[("kubevirt.io", "virt-launcher")])),
                match_expressions: None,
            }),
            rules: Some(vec![RuleWithOperations {
                api_groups: Some(common::strings(&[""])),
                api_versions: Some(common::strings(&["v1"])),
                operations: Some(common::strings(&["CREATE", "UPDATE"])),
                resources: Some(common::strings(&["pods"])),
                scope: None,
            }]),
            side_effects: "None".to_string(),
            ..MutatingWebhook::default()
        }]),
    }
}

/// IPAMClaim (k8s.cni.cncf.io/v1alpha1), as k8snetworkplumbingwg/ipamclaims defines it.
fn ipam_claim_crd(ctx: &Ctx) -> Value {
    let cidrs = |description: &str| {
        json!({"type": "array", "maxItems": 2, "description": description,
               "items": {"type": "string"}})
    };
    let condition = json!({
        "type": "object",
        "required": ["lastTransitionTime", "message", "reason", "status", "type"],
        "properties": {
            "lastTransitionTime": {"type": "string", "format": "date-time"},
            "message": {"type": "string", "maxLength": 32768},
            "observedGeneration": {"type": "integer", "format": "int64"},
            "reason": {"type": "string", "maxLength": 1024, "minLength": 1},
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "type": {"type": "string", "maxLength": 316},
        },
    });
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": common::cluster_meta(ctx, CRD, Some(COMPONENT)),
        "spec": {
            "group": "k8s.cni.cncf.io",
            "names": {"kind": "IPAMClaim", "listKind": "IPAMClaimList",
                      "plural": "ipamclaims", "singular": "ipamclaim"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1alpha1",
                "served": true,
                "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "description": "IPAMClaim is the Schema for the IPAMClaim API",
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "metadata": {"type": "object"},
                        "spec": {
                            "type": "object",
                            "required": ["interface", "network"],
                            "properties": {
                                "interface": {"type": "string", "description": "The pod interface name for which this allocation was created"},
                                "network": {"type": "string", "description": "The network name for which this persistent allocation was created"},
                                "ipRequests": cidrs("The IPs (v4, v6) requested for this network attachment"),
                            },
                        },
                        "status": {
                            "type": "object",
                            "required": ["ips", "ownerPod"],
                            "properties": {
                                "ips": cidrs("The IP addresses (v4, v6) allocated for the pod interface"),
                                "ownerPod": {"type": "string", "description": "The name of the pod holding the IPAMClaim"},
                                "conditions": {"type": "array", "items": condition},
                            },
                        },
                    },
                }},
            }],
        },
    })
}

#[cfg(test)]
mod tests;
