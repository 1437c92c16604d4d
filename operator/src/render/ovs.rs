//! ovs: our `ovs` plugin on every node, and the marker that publishes each node's Open vSwitch
//! bridges as `ovs-cni.network.kubevirt.io/<bridge>` resources. Open vSwitch itself must already
//! run on the nodes; the marker reaches it through the host's OVSDB socket.
//!
//! Upstream's DaemonSet has an init container copying its plugin and a marker container from
//! the same image; here both are our installer. The DaemonSet, selector, service account and
//! RBAC names are upstream's.

use k8s_openapi::api::core::v1::PodSpec;

use super::common::{self, Agent, Ctx};
use super::Rendered;
use crate::error::Result;
use crate::spec::Component;

pub const DAEMON_SET: &str = "ovs-cni-amd64";
pub const SERVICE_ACCOUNT: &str = "ovs-cni-marker";
pub const CLUSTER_ROLE: &str = "ovs-cni-marker-cr";
pub const CLUSTER_ROLE_BINDING: &str = "ovs-cni-marker-crb";
pub const PLUGINS: &[&str] = &["ovs"];
/// The host's Open vSwitch run directory, holding `db.sock`.
pub const OVS_RUN_DIR: &str = "/var/run/openvswitch";
const OVS_RUN_VOLUME: &str = "ovs-var-run";
const SELECTOR: &[(&str, &str)] = &[("app", "ovs-cni")];
const COMPONENT: Component = Component::Ovs;

pub fn render(ctx: &Ctx) -> Result<Vec<Rendered>> {
    let mut out = common::marker_rbac(
        ctx,
        COMPONENT,
        SERVICE_ACCOUNT,
        CLUSTER_ROLE,
        CLUSTER_ROLE_BINDING,
    )?;
    let run_dir_in_pod = common::host_path(OVS_RUN_DIR);
    let ovsdb = format!("unix:{run_dir_in_pod}/db.sock");
    let pod = PodSpec {
        service_account_name: Some(SERVICE_ACCOUNT.to_string()),
        host_network: Some(true),
        priority_class_name: Some("system-node-critical".to_string()),
        init_containers: Some(vec![common::install_container(ctx, PLUGINS)]),
        containers: vec![common::agent_container(
            ctx,
            Agent {
                name: "ovs-cni-plugin",
                plugins: PLUGINS,
                mark: "ovs",
                extra_args: &["--ovsdb", &ovsdb],
                extra_mounts: vec![common::mount(OVS_RUN_VOLUME, &run_dir_in_pod)],
            },
        )],
        volumes: Some(vec![
            common::cni_bin_volume(ctx),
            common::host_path_volume(OVS_RUN_VOLUME, OVS_RUN_DIR),
        ]),
        ..PodSpec::default()
    };
    let ds = common::daemon_set(
        ctx,
        COMPONENT,
        DAEMON_SET,
        SELECTOR,
        "Installs the ovs CNI plugin and publishes the node's Open vSwitch bridges",
        pod,
        Some("10%"),
    );
    out.push(common::to_rendered(Some(COMPONENT), &ds)?);
    Ok(out)
}
