//! kubeMacPool: MAC addresses from the spec's range for the secondary interfaces of VMs (every
//! namespace unless labelled `mutatevirtualmachines.kubemacpool.io=ignore`) and of pods (only
//! namespaces labelled `mutatepods.kubemacpool.io=allocate`), through a mutating webhook.
//!
//! Which allocator runs: ours (`/kubemacpool` in the plugins image, [`ours`]) unless the
//! operator's `KUBEMACPOOL_IMAGE` names an image, which then runs as upstream's KubeMacPool
//! ([`upstream`]; [`crate::images::KUBEMACPOOL`] is the digest the upstream operator pins).
//! Either way the objects and names are upstream's, so a cluster switches either way by setting
//! or clearing that variable, and both read the MACs given out from the pods and VMs:
//! - the Service `kubemacpool-service`, the ConfigMap `kubemacpool-mac-range-config`
//!   (`RANGE_START`, `RANGE_END`, read live by both), the Deployments
//!   `kubemacpool-cert-manager` and `kubemacpool-mac-controller-manager` (labelled
//!   `app=kubemacpool`), the MutatingWebhookConfiguration `kubemacpool-mutator` with
//!   upstream's two webhooks, and the ClusterRole and binding;
//! - the cert manager keeps the webhook's CA and serving certificate (intervals from
//!   `selfSignConfiguration`) in the Secrets `kubemacpool-mutator-ca` and `kubemacpool-service`
//!   and the webhook's `caBundle`, which the render leaves unset.
//!
//! The webhook configuration is the operator's: an edit of its namespaceSelector (switching a
//! webhook between opt-in and opt-out) is put back at the next reconcile, as for every object
//! the operator renders. The mode is the CR's to set, through the render.
//!
//! Differences from upstream's render:
//! - a ServiceAccount of its own (upstream binds the role to the namespace's `default` account,
//!   which every other pod there would share);
//! - no metrics proxy sidecar: the manager serves its metrics over HTTPS itself (upstream's
//!   monitoring objects, [`monitoring`], are rendered where the Prometheus operator's CRDs are);
//! - `tlsSecurityProfile` goes to the webhook server as `--tls-min-version` and
//!   `--tls-cipher-suites` (Go's names), as upstream's current manifests pass it.

mod monitoring;
mod ours;
mod upstream;

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ServiceReference,
    WebhookClientConfig,
};
use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStrategy};
use k8s_openapi::api::core::v1::{ConfigMap, PodSpec, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::common::{self, Ctx};
use super::network_policy;
use super::Rendered;
use crate::error::{Error, Result};
use crate::spec::{Component, KubeMacPool};

pub const SERVICE_ACCOUNT: &str = "kubemacpool";
pub const CLUSTER_ROLE: &str = "kubemacpool-manager-role";
pub const CLUSTER_ROLE_BINDING: &str = "kubemacpool-manager-rolebinding";
pub const SERVICE: &str = "kubemacpool-service";
pub const CERT_MANAGER: &str = "kubemacpool-cert-manager";
pub const MAC_CONTROLLER: &str = "kubemacpool-mac-controller-manager";
pub const WEBHOOK: &str = "kubemacpool-mutator";
/// Written by the cert manager, mounted by the MAC controller.
pub const TLS_SECRET: &str = "kubemacpool-service";
pub const RANGE_CONFIG: &str = "kubemacpool-mac-range-config";
const WEBHOOK_PORT: i32 = 8000;
const CONTROLLER_SELECTOR: &[(&str, &str)] = &[
    ("control-plane", "mac-controller-manager"),
    ("controller-tools.k8s.io", "1.0"),
];
const CERT_MANAGER_SELECTOR: &[(&str, &str)] = &[
    ("control-plane", "cert-manager"),
    ("controller-tools.k8s.io", "1.0"),
];
const COMPONENT: Component = Component::KubeMacPool;

pub fn render(ctx: &Ctx) -> Result<Vec<Rendered>> {
    let c = Some(COMPONENT);
    let pool = range(ctx)?;
    let ours = runs_ours(ctx);
    let (cert_manager, mac_controller) = if ours {
        (ours::cert_manager(ctx), ours::mac_controller(ctx))
    } else {
        (
            upstream::cert_manager(ctx),
            upstream::mac_controller(ctx, pool),
        )
    };
    let mut objects = common::cluster_identity(
        ctx,
        COMPONENT,
        common::Identity {
            account: SERVICE_ACCOUNT,
            role: CLUSTER_ROLE,
            binding: CLUSTER_ROLE_BINDING,
        },
        rules(ours),
    )?;
    objects.extend([
        common::to_rendered(c, &range_config(ctx, pool))?,
        common::to_rendered(c, &service(ctx, ours))?,
        common::to_rendered(c, &cert_manager)?,
        common::to_rendered(c, &mac_controller)?,
    ]);
    if ours {
        objects.push(common::to_rendered(c, &ours::disruption_budget(ctx)?)?);
    }
    objects.extend([
        common::to_rendered(c, &webhook(ctx))?,
        common::to_rendered(
            c,
            &network_policy::allow_ingress(
                ctx,
                COMPONENT,
                "kubemacpool-allow-ingress-to-webhook",
                CONTROLLER_SELECTOR,
                "TCP",
                IntOrString::Int(WEBHOOK_PORT),
            ),
        )?,
        common::to_rendered(
            c,
            &network_policy::allow_ingress(
                ctx,
                COMPONENT,
                "kubemacpool-allow-ingress-to-metrics-endpoint",
                CONTROLLER_SELECTOR,
                "TCP",
                IntOrString::Int(monitoring::METRICS_PORT),
            ),
        )?,
    ]);
    objects.extend(monitoring::render(ctx)?);
    Ok(objects)
}

/// Ours unless `KUBEMACPOOL_IMAGE` names an image.
pub fn runs_ours(ctx: &Ctx) -> bool {
    ctx.settings.kubemacpool_image.is_empty()
}

/// The range, filled by the defaults (the previous one, else the cluster's own).
fn range<'a>(ctx: &'a Ctx<'a>) -> Result<&'a KubeMacPool> {
    ctx.spec
        .kube_mac_pool
        .as_ref()
        .filter(|p| !p.range_start.is_empty() && !p.range_end.is_empty())
        .ok_or_else(|| Error::other("kubeMacPool has no MAC range: fill the defaults first"))
}

/// Read live by both allocators: a range change needs no restart.
fn range_config(ctx: &Ctx, pool: &KubeMacPool) -> ConfigMap {
    ConfigMap {
        metadata: common::meta(ctx, RANGE_CONFIG, Some(COMPONENT)),
        data: Some(BTreeMap::from([
            ("RANGE_START".to_string(), pool.range_start.clone()),
            ("RANGE_END".to_string(), pool.range_end.clone()),
        ])),
        ..ConfigMap::default()
    }
}

/// A Deployment of a KubeMacPool manager, on the infra placement.
fn deployment(
    ctx: &Ctx,
    name: &str,
    selector_labels: &[(&str, &str)],
    description: &str,
    mut pod: PodSpec,
    replicas: i32,
    strategy: DeploymentStrategy,
) -> Deployment {
    let mut labels = selector_labels.to_vec();
    labels.push(("app", "kubemacpool"));
    labels.push((network_policy::ACCESS_LABEL, ""));
    pod.service_account_name = Some(SERVICE_ACCOUNT.to_string());
    pod.priority_class_name = Some("system-cluster-critical".to_string());
    pod.restart_policy = Some("Always".to_string());
    let affinity = pod.affinity.take();
    common::place(&mut pod, &ctx.infra);
    if pod.affinity.is_none() {
        pod.affinity = affinity;
    }
    Deployment {
        metadata: common::meta(ctx, name, Some(COMPONENT)),
        spec: Some(DeploymentSpec {
            replicas: Some(replicas),
            selector: common::selector(selector_labels),
            strategy: Some(strategy),
            template: common::pod_template(ctx, COMPONENT, &labels, description, pod),
            ..DeploymentSpec::default()
        }),
        status: None,
    }
}

/// Upstream's rules; ours also keeps its allocators' Leases (see the crate `kubemacpool`).
fn rules(ours: bool) -> Vec<k8s_openapi::api::rbac::v1::PolicyRule> {
    use common::rule;
    let all_but_deletecollection = [
        "get", "list", "watch", "create", "update", "patch", "delete",
    ];
    let mut rules = vec![
        rule(
            &["admissionregistration.k8s.io"],
            &[
                "mutatingwebhookconfigurations",
                "validatingwebhookconfigurations",
            ],
            &["*"],
        ),
        rule(&[""], &["secrets"], &all_but_deletecollection),
        rule(&[""], &["configmaps"], &["*"]),
        rule(&[""], &["events"], &["get", "list", "create", "update"]),
        rule(&[""], &["services"], &all_but_deletecollection),
        rule(
            &[""],
            &["pods", "pods/status"],
            &["get", "list", "watch", "create", "update", "patch"],
        ),
        rule(
            &["apiextensions.k8s.io"],
            &["customresourcedefinitions"],
            &["get", "list"],
        ),
        rule(
            &["apps"],
            &["deployments"],
            &["get", "create", "update", "patch", "list", "watch"],
        ),
        rule(
            &["kubevirt.io"],
            &["virtualmachines"],
            &["get", "list", "watch", "create", "update", "patch"],
        ),
        rule(
            &["kubevirt.io"],
            &["virtualmachineinstances"],
            &["get", "list", "watch"],
        ),
        rule(&[""], &["namespaces"], &["get", "list", "watch"]),
        rule(&["authentication.k8s.io"], &["tokenreviews"], &["create"]),
        rule(
            &["authorization.k8s.io"],
            &["subjectaccessreviews"],
            &["create"],
        ),
    ];
    if ours {
        rules.push(rule(
            &["coordination.k8s.io"],
            &["leases"],
            &["get", "list", "watch", "create", "update", "delete"],
        ));
    }
    rules
}

fn service(ctx: &Ctx, ours: bool) -> Service {
    let mut service = common::webhook_service(
        ctx,
        COMPONENT,
        SERVICE,
        &[("control-plane", "mac-controller-manager")],
        WEBHOOK_PORT,
    );
    if let Some(spec) = service.spec.as_mut().filter(|_| !ours) {
        // Upstream's webhook must be reachable while its manager is still syncing its pool.
        // Ours is ready in a second, and a replica that stops must leave the endpoints first.
        spec.publish_not_ready_addresses = Some(true);
    }
    service
}

fn not_in(key: &str, values: &[&str]) -> LabelSelectorRequirement {
    LabelSelectorRequirement {
        key: key.to_string(),
        operator: "NotIn".to_string(),
        values: Some(common::strings(values)),
    }
}

/// Never the control plane's own namespaces (run levels 0 and 1), then the opt-in or opt-out
/// label of the resource.
fn namespace_selector(opt: LabelSelectorRequirement) -> LabelSelector {
    LabelSelector {
        match_expressions: Some(vec![
            not_in("runlevel", &["0", "1"]),
            not_in("openshift.io/run-level", &["0", "1"]),
            opt,
        ]),
        match_labels: None,
    }
}

fn hook(
    ctx: &Ctx,
    name: &str,
    path: &str,
    opt: LabelSelectorRequirement,
    rule: RuleWithOperations,
) -> MutatingWebhook {
    MutatingWebhook {
        name: name.to_string(),
        admission_review_versions: common::strings(&["v1", "v1beta1"]),
        client_config: WebhookClientConfig {
            service: Some(ServiceReference {
                name: SERVICE.to_string(),
                namespace: ctx.settings.namespace.clone(),
                path: Some(path.to_string()),
                port: None,
            }),
            ..WebhookClientConfig::default()
        },
        failure_policy: Some("Fail".to_string()),
        namespace_selector: Some(namespace_selector(opt)),
        rules: Some(vec![rule]),
        side_effects: "NoneOnDryRun".to_string(),
        ..MutatingWebhook::default()
    }
}

fn webhook(ctx: &Ctx) -> MutatingWebhookConfiguration {
    let pods = hook(
        ctx,
        "mutatepods.kubemacpool.io",
        "/mutate-pods",
        LabelSelectorRequirement {
            key: "mutatepods.kubemacpool.io".to_string(),
            operator: "In".to_string(),
            values: Some(common::strings(&["allocate"])),
        },
        RuleWithOperations {
            api_groups: Some(common::strings(&[""])),
            api_versions: Some(common::strings(&["v1"])),
            operations: Some(common::strings(&["CREATE"])),
            resources: Some(common::strings(&["pods"])),
            scope: None,
        },
    );
    let vms = hook(
        ctx,
        "mutatevirtualmachines.kubemacpool.io",
        "/mutate-virtualmachines",
        not_in("mutatevirtualmachines.kubemacpool.io", &["ignore"]),
        RuleWithOperations {
            api_groups: Some(common::strings(&["kubevirt.io"])),
            api_versions: Some(common::strings(&["v1"])),
            operations: Some(common::strings(&["CREATE", "UPDATE"])),
            resources: Some(common::strings(&["virtualmachines"])),
            scope: None,
        },
    );
    MutatingWebhookConfiguration {
        metadata: common::cluster_meta(ctx, WEBHOOK, Some(COMPONENT)),
        webhooks: Some(vec![pods, vms]),
    }
}

#[cfg(test)]
mod tests;
