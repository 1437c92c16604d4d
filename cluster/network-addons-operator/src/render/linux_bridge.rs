//! linuxBridge: our `bridge` and `tuning` plugins on every node, and the marker that publishes
//! each node's Linux bridges as `bridge.network.kubevirt.io/<bridge>` resources, so pods asking
//! for a bridge land on nodes that have it.
//!
//! Upstream runs two DaemonSets (a shell script copying the reference plugins, and a separate
//! bridge-marker image); here one DaemonSet of our plugins image does both. The names of the
//! DaemonSet, its selector, service account and RBAC are upstream's, so objects upstream created
//! are taken over in place.

use super::common::{self, Agent, Ctx, PluginDaemonSet};
use super::Rendered;
use crate::error::Result;
use crate::spec::Component;

pub const DAEMON_SET: &str = "kube-cni-linux-bridge-plugin";
pub const SERVICE_ACCOUNT: &str = "bridge-marker";
pub const CLUSTER_ROLE: &str = "bridge-marker-cr";
pub const CLUSTER_ROLE_BINDING: &str = "bridge-marker-crb";
/// Also under the names the upstream operator gives them, which NetworkAttachmentDefinitions
/// written for it use (`"type": "cnv-bridge"`): separate copies of the same binaries.
pub const PLUGINS: &[&str] = &["bridge", "tuning", "cnv-bridge=bridge", "cnv-tuning=tuning"];
const SELECTOR: &[(&str, &str)] = &[("name", DAEMON_SET)];
const COMPONENT: Component = Component::LinuxBridge;

pub fn render(ctx: &Ctx) -> Result<Vec<Rendered>> {
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
                "Installs the bridge and tuning CNI plugins and publishes the node's Linux bridges",
            plugins: PLUGINS,
            extra_volumes: Vec::new(),
            host_pid: false,
        },
        Agent {
            name: "cni-plugins",
            mark: "linux-bridge",
            extra_args: &[],
            extra_mounts: Vec::new(),
            metrics_port_offset: 0,
        },
    )
}
