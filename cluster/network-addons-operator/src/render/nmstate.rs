//! nmstate: kubernetes-nmstate's API, served by our handler. Users declare a node's network
//! (bridges, bonds, VLANs, addresses) in a NodeNetworkConfigurationPolicy; the handler on each
//! node it selects applies it, reports per node in a NodeNetworkConfigurationEnactment, and
//! publishes the node's current network in a NodeNetworkState.
//!
//! The three CRDs are kubernetes-nmstate's (group `nmstate.io`, names, short names, versions,
//! fields), so the policies written for it apply unchanged, the walkthrough's `nmstate.io/v1alpha1`
//! ones included. Every version of a CRD has the same schema, so none needs a conversion webhook.
//! They are never deleted by the operator (a CRD's deletion deletes every policy): removing
//! `nmstate` from the config removes the handler and its RBAC only.
//!
//! Upstream runs a handler image of its own with NetworkManager; here the handler is our
//! image's `node-agent nmstate`, like every other component's node agent. Its DaemonSet and
//! selector carry upstream's names, so a handler the upstream operator left is taken over in
//! place; where kubernetes-nmstate is installed by other means nothing is rendered
//! ([`crate::cluster::ForeignNmstate`]).

use k8s_openapi::api::core::v1::{
    Container, ExecAction, HostPathVolumeSource, PodSpec, Probe, Volume,
};
use k8s_openapi::api::rbac::v1::PolicyRule;

use super::common::{self, Ctx, Identity, NODE_AGENT};
use super::Rendered;
use crate::error::Result;
use crate::settings::DEFAULT_NMSTATE_PROBE_TIMEOUT;
use crate::spec::Component;
use net_types::format_go_duration;

mod crds;

use crate::nmstate_names::{DAEMON_SET, GROUP};
pub use crds::status_columns;
use crds::{enactment_crd, policy_crd, state_crd};

pub const SERVICE_ACCOUNT: &str = "nmstate-handler";
pub const CLUSTER_ROLE: &str = "nmstate-handler";
pub const CLUSTER_ROLE_BINDING: &str = "nmstate-handler";
/// The handler's journal and lock, on the node so they outlive the pod: a new handler pod
/// finds what the previous one was applying, and two never apply at once.
pub const RUN_DIR: &str = "/run/kubernetes-nmstate";
const RUN_VOLUME: &str = "nmstate-run";
/// Upstream's selector, fixed once created.
const SELECTOR: &[(&str, &str)] = &[("name", DAEMON_SET)];
/// Upstream's pod labels: its handlers count the nodes that run a handler pod by `component`.
pub const POD_LABELS: &[(&str, &str)] = &[
    ("app", "kubernetes-nmstate"),
    ("component", "kubernetes-nmstate-handler"),
];
const COMPONENT: Component = Component::Nmstate;

pub fn render(ctx: &Ctx) -> Result<Vec<Rendered>> {
    let c = Some(COMPONENT);
    let mut out = vec![
        common::to_rendered(c, &policy_crd(ctx))?,
        common::to_rendered(c, &enactment_crd(ctx))?,
        common::to_rendered(c, &state_crd(ctx))?,
    ];
    out.extend(common::cluster_identity(
        ctx,
        COMPONENT,
        Identity {
            account: SERVICE_ACCOUNT,
            role: CLUSTER_ROLE,
            binding: CLUSTER_ROLE_BINDING,
        },
        handler_rules(),
    )?);
    out.push(common::to_rendered(c, &daemon_set(ctx))?);
    Ok(out)
}

/// What the handler does through the API, and nothing more.
fn handler_rules() -> Vec<PolicyRule> {
    vec![
        // The policies to enact on its node: read only, so that no node can change what every
        // other node applies.
        common::rule(
            &[GROUP],
            &["nodenetworkconfigurationpolicies"],
            &["get", "list", "watch"],
        ),
        // A policy's conditions, aggregated over its enactments, and the nodes configuring it
        // (`configuringNodes`, counted in `unavailableNodeCount`): a handler takes a slot by
        // writing them under the policy's resourceVersion, and a conflicting write is what
        // keeps more than `maxUnavailable` nodes from configuring at once.
        common::rule(
            &[GROUP],
            &["nodenetworkconfigurationpolicies/status"],
            &["get", "update", "patch"],
        ),
        // One enactment per node and policy, one state per node: created, kept and deleted
        // (when a policy stops selecting the node, or is gone) by the node's handler.
        common::rule(
            &[GROUP],
            &["nodenetworkconfigurationenactments", "nodenetworkstates"],
            &[
                "get", "list", "watch", "create", "update", "patch", "delete",
            ],
        ),
        // Their status: what the handler applied and found.
        common::rule(
            &[GROUP],
            &[
                "nodenetworkconfigurationenactments/status",
                "nodenetworkstates/status",
            ],
            &["get", "update", "patch"],
        ),
        // The nodes' labels against a policy's nodeSelector, and how many nodes it selects
        // (`maxUnavailable` is a share of them); enactments and states are owned by the Node.
        common::rule(&[""], &["nodes"], &["get", "list", "watch"]),
        // The handler pods (by POD_LABELS): a selected node without one counts as not
        // configuring, so a policy's status can say when it is done.
        common::rule(&[""], &["pods"], &["list", "watch"]),
        // Events on the policies, as upstream's handler records them.
        common::rule(&[""], &["events"], &["create", "patch"]),
    ]
}

/// The handler on every node of the workloads placement, in the host's network namespace
/// (it changes the node's links), privileged, rolled out to 10% of the nodes at a time like
/// the other node agents. Ready only once it has applied its node's policies again after
/// starting: a rollout moves on to the next nodes only when this one's network is back.
fn daemon_set(ctx: &Ctx) -> k8s_openapi::api::apps::v1::DaemonSet {
    let pod = PodSpec {
        service_account_name: Some(SERVICE_ACCOUNT.to_string()),
        host_network: Some(true),
        priority_class_name: Some("system-node-critical".to_string()),
        containers: vec![handler_container(ctx)],
        volumes: Some(vec![Volume {
            host_path: Some(HostPathVolumeSource {
                path: RUN_DIR.to_string(),
                type_: Some("DirectoryOrCreate".to_string()),
            }),
            ..common::host_path_volume(RUN_VOLUME, RUN_DIR)
        }]),
        ..PodSpec::default()
    };
    let mut ds = common::daemon_set(
        ctx,
        COMPONENT,
        DAEMON_SET,
        SELECTOR,
        "Applies the NodeNetworkConfigurationPolicies to its node and reports its network state",
        pod,
        Some("10%"),
    );
    let pod_labels = ds
        .spec
        .as_mut()
        .and_then(|s| s.template.metadata.as_mut())
        .map(|m| m.labels.get_or_insert_with(Default::default));
    if let Some(labels) = pod_labels {
        labels.extend(common::string_map(POD_LABELS));
    }
    ds
}

fn handler_container(ctx: &Ctx) -> Container {
    Container {
        command: Some(common::strings(&[NODE_AGENT, "nmstate"])),
        // The handler's own default is upstream's; only another value is rendered.
        args: (ctx.settings.nmstate_probe_timeout != DEFAULT_NMSTATE_PROBE_TIMEOUT).then(|| {
            vec![
                "--probe-timeout".to_string(),
                format_go_duration(ctx.settings.nmstate_probe_timeout),
            ]
        }),
        env: Some(vec![common::field_env("NODE_NAME", "spec.nodeName")]),
        readiness_probe: Some(Probe {
            exec: Some(ExecAction {
                command: Some(common::strings(&[NODE_AGENT, "nmstate-ready"])),
            }),
            period_seconds: Some(10),
            ..Probe::default()
        }),
        resources: Some(common::requests("10m", "50Mi")),
        security_context: Some(common::privileged()),
        volume_mounts: Some(vec![common::mount(RUN_VOLUME, RUN_DIR)]),
        // Whatever the spec's pull policy: a handler killed while its apply had cut the node
        // off must start again from the image the node has, to put the node back; it could
        // not pull one.
        image_pull_policy: Some("IfNotPresent".to_string()),
        ..common::container(ctx, "nmstate-handler", &ctx.settings.plugins_image)
    }
}

#[cfg(test)]
mod tests;
