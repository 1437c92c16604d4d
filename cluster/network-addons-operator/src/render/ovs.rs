//! ovs: our `ovs` plugin on every node, and the marker that publishes each node's Open vSwitch
//! bridges as `ovs-cni.network.kubevirt.io/<bridge>` resources. Open vSwitch itself must already
//! run on the nodes; the marker reaches it through the host's OVSDB socket.
//!
//! Upstream's DaemonSet has an init container copying its plugin and a marker container from
//! the same image; here both are our installer. The DaemonSet, selector, service account and
//! RBAC names are upstream's.

use super::common::{self, Agent, Ctx, PluginDaemonSet};
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
    let run_dir_in_pod = common::host_path(OVS_RUN_DIR);
    let ovsdb = format!("unix:{run_dir_in_pod}/db.sock");
    common::marker(
        ctx,
        CLUSTER_ROLE,
        CLUSTER_ROLE_BINDING,
        PluginDaemonSet {
            component: COMPONENT,
            name: DAEMON_SET,
            selector: SELECTOR,
            service_account: SERVICE_ACCOUNT,
            description:
                "Installs the ovs CNI plugin and publishes the node's Open vSwitch bridges",
            plugins: PLUGINS,
            extra_volumes: vec![common::host_path_volume(OVS_RUN_VOLUME, OVS_RUN_DIR)],
            host_pid: false,
        },
        Agent {
            name: "ovs-cni-plugin",
            mark: "ovs",
            extra_args: &["--ovsdb", &ovsdb],
            extra_mounts: vec![common::mount(OVS_RUN_VOLUME, &run_dir_in_pod)],
            metrics_port_offset: 1,
        },
    )
}
