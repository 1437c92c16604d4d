//! The operator in the cluster: deploy/ applied as the README says, the seed's
//! NetworkAddonsConfigs, what lands on the node, the status and the events.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use kube_tier::daemon::wait_for;
use kube_tier::stand_in::{crds, crds_scoped};

use crate::{check, nac_condition, plugins_image, Ctx, NAMESPACE, OPERATOR};

mod components;
mod metrics_auth;
mod observability;
mod on_node;
mod privilege;

pub use components::{
    component_conditions_and_config_labels, full_cr_progressing,
    ipam_controller_follows_cert_manager, openshift_sccs, own_components_reach_available,
    walkthrough_config,
};
pub use metrics_auth::every_metrics_endpoint_answers_only_a_token_allowed_to_get_it;
pub use observability::{events_in_default, metrics_through_the_service};
pub use on_node::{marker_follows_bridges, plugins_land_on_the_node};
pub use privilege::least_privilege;

/// The seed's first example: every component, `imagePullPolicy: Always`.
pub const FULL_SPEC: &str =
    "multus: {}\nmultusDynamicNetworks: {}\nlinuxBridge: {}\nkubeMacPool: {}\n\
ovs: {}\nmacvtap: {}\nkubeSecondaryDNS: {}\nkubevirtIpamController: {}\nimagePullPolicy: Always\n";
/// Our own components only.
pub const OWN_SPEC: &str = "linuxBridge: {}\novs: {}\n";

pub const LINUX_BRIDGE_DS: &str = "kube-cni-linux-bridge-plugin";
pub const OVS_DS: &str = "ovs-cni-amd64";
/// macvtap-cni's DaemonSet, whose upstream image cannot be pulled here.
pub const MACVTAP_DS: &str = "macvtap-cni";
/// The ConfigMap in which the operator records the spec it applied (upstream's name).
pub const APPLIED_RECORD: &str = "cluster-networks-addons-operator-applied-cluster";

pub fn deploy_applies(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    let pods = ctx.get(&[
        "get",
        "pods",
        "-n",
        NAMESPACE,
        "-l",
        &format!("name={OPERATOR}"),
    ])?;
    let pod = pods["items"]
        .as_array()
        .and_then(|a| a.first())
        .context("no operator pod")?;
    check(pod["spec"]["serviceAccountName"] == OPERATOR, || {
        format!("the operator runs as {}", pod["spec"]["serviceAccountName"])
    })?;
    let image = pod["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap_or_default();
    check(image == plugins_image(ctx)?, || {
        format!("the operator runs image {image}")
    })?;
    check(
        pod["status"]["podIP"]
            .as_str()
            .is_some_and(|ip| ip.starts_with(crate::POD_NETWORK_PREFIX)),
        || {
            format!(
                "the operator pod's IP {} is not from our bridge's range",
                pod["status"]["podIP"]
            )
        },
    )
}

/// Deletes the NetworkAddonsConfig, if any, and waits until the garbage collector took its
/// objects (the applied record included) and its node agents' pods are gone, so the next test
/// starts from a clean cluster. (A node agent's pod left Terminating would hold its host port,
/// and keep the next config's pod on that node from being scheduled.)
pub fn reset(ctx: &Ctx) -> Result<()> {
    ctx.kubectl(&[
        "delete",
        "networkaddonsconfig",
        "cluster",
        "--ignore-not-found",
        "--timeout=60s",
    ])?;
    wait_for(
        "the previous config's objects to be collected",
        Duration::from_secs(120),
        || {
            let left = owned_objects(ctx)?;
            Ok(left.is_empty().then_some(()))
        },
    )
    .with_context(|| format!("left: {:?}", owned_objects(ctx).unwrap_or_default()))?;
    wait_for(
        "the previous config's node agents to be gone",
        Duration::from_secs(120),
        || {
            let pods = ctx.get(&["get", "pods", "-n", NAMESPACE])?;
            let agents: Vec<Value> = pods["items"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|p| p["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet")
                .cloned()
                .collect();
            ctx.delete_stopped_pods(&agents)?;
            Ok(agents.is_empty().then_some(()))
        },
    )
}

/// Objects in the operand namespace or cluster-wide that carry the operator's component label.
pub fn owned_objects(ctx: &Ctx) -> Result<Vec<String>> {
    let out = ctx.kubectl(&[
        "get",
        "daemonsets,deployments,configmaps,services,serviceaccounts,clusterroles,clusterrolebindings,\
         roles,rolebindings,mutatingwebhookconfigurations,networkpolicies",
        "-A", "-l", "networkaddonsoperator.network.kubevirt.io/version", "-o", "name",
    ])?;
    Ok(out.lines().map(str::to_string).collect())
}
