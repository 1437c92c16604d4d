//! Rendering: the applied spec (defaults filled) to the Kubernetes objects of each component.
//! Pure: no API calls, so `render` prints offline exactly what the reconciler applies.
//!
//! Objects are built from the k8s-openapi types, one file per component, in apply order: the
//! operand Namespace, then each component in `Component::ALL` order, its CRDs, accounts, RBAC
//! and ConfigMaps before its workloads, and webhooks after the Deployment serving them.
//! Components the operator does not deploy (`spec.not_deployed()`) render nothing.

pub mod common;
pub mod kube_secondary_dns;
pub mod kubemacpool;
pub mod kubevirt_ipam_controller;
pub mod linux_bridge;
pub mod macvtap;
pub mod monitoring;
pub mod multus;
pub mod multus_dynamic_networks;
pub mod network_policy;
pub mod nmstate;
pub mod ovs;
pub mod scc;
pub mod tls;

use serde_json::Value;

use crate::cluster::ClusterInfo;
use crate::error::{Context, Result};
use crate::settings::Settings;
use crate::spec::{Component, NetworkAddonsConfigSpec};

pub use crate::apply::kinds::{RenderedKind, RENDERED_KINDS};

/// One object to apply, and the component it belongs to (`None`: shared by all, e.g. the
/// operand Namespace).
#[derive(Clone, Debug, PartialEq)]
pub struct Rendered {
    pub component: Option<Component>,
    pub object: Value,
}

/// All objects of `applied` on `cluster`, in apply order.
pub fn render(
    applied: &NetworkAddonsConfigSpec,
    settings: &Settings,
    cluster: &ClusterInfo,
) -> Result<Vec<Rendered>> {
    let ctx = common::Ctx::new(applied, settings, cluster);
    let mut out = vec![common::to_rendered(None, &common::namespace(&ctx))?];
    for component in applied.deployed_components(cluster) {
        let objects = match component {
            Component::Multus => multus::render(&ctx)?,
            Component::MultusDynamicNetworks => multus_dynamic_networks::render(&ctx)?,
            Component::LinuxBridge => linux_bridge::render(&ctx)?,
            Component::KubeMacPool => kubemacpool::render(&ctx)?,
            Component::Ovs => ovs::render(&ctx)?,
            Component::Nmstate => nmstate::render(&ctx)?,
            Component::Macvtap => macvtap::render(&ctx)?,
            Component::KubeSecondaryDns => kube_secondary_dns::render(&ctx)?,
            Component::KubevirtIpamController => kubevirt_ipam_controller::render(&ctx)?,
        };
        let sccs = if cluster.openshift {
            node_agent_sccs(&ctx, component, &objects)?
        } else {
            Vec::new()
        };
        // before the DaemonSets, whose pods OpenShift admits only through them
        out.extend(sccs);
        out.extend(objects);
    }
    out.extend(monitoring::render(&ctx)?);
    out.extend(network_policy::render(&ctx)?);
    Ok(out)
}

/// On OpenShift, an SCC for the service account of each DaemonSet of `component`.
fn node_agent_sccs(
    ctx: &common::Ctx,
    component: Component,
    objects: &[Rendered],
) -> Result<Vec<Rendered>> {
    objects
        .iter()
        .filter(|r| r.object["kind"] == "DaemonSet")
        .filter_map(|r| r.object["spec"]["template"]["spec"]["serviceAccountName"].as_str())
        .map(|account| {
            common::to_rendered(Some(component), &scc::node_agent(ctx, component, account))
        })
        .collect()
}

/// The objects as a multi-document YAML stream, each document starting with `---`: what
/// `render` prints and the golden tests compare. Deterministic: the same objects give the same
/// text.
pub fn to_yaml(objects: &[Rendered]) -> Result<String> {
    let mut out = String::new();
    for r in objects {
        out.push_str("---\n");
        out.push_str(&crate::yaml::to_string(&r.object).context("serialise an object as YAML")?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
