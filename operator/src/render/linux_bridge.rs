//! linuxBridge: our `bridge` and `tuning` plugins on every node, and the marker that publishes
//! each node's Linux bridges as `bridge.network.kubevirt.io/<bridge>` resources, so pods asking
//! for a bridge land on nodes that have it.
//!
//! Upstream runs two DaemonSets (a shell script copying the reference plugins, and a separate
//! bridge-marker image); here one DaemonSet of our installer image does both. The names of the
//! DaemonSet, its selector, service account and RBAC are upstream's, so objects upstream created
//! are taken over in place.

use k8s_openapi::api::core::v1::PodSpec;

use super::common::{self, Agent, Ctx};
use super::Rendered;
use crate::error::Result;
use crate::spec::Component;

pub const DAEMON_SET: &str = "kube-cni-linux-bridge-plugin";
pub const SERVICE_ACCOUNT: &str = "bridge-marker";
pub const CLUSTER_ROLE: &str = "bridge-marker-cr";
pub const CLUSTER_ROLE_BINDING: &str = "bridge-marker-crb";
pub const PLUGINS: &[&str] = &["bridge", "tuning"];
const SELECTOR: &[(&str, &str)] = &[("name", DAEMON_SET)];
const COMPONENT: Component = Component::LinuxBridge;

pub fn render(ctx: &Ctx) -> Result<Vec<Rendered>> {
    let mut out = common::marker_rbac(
        ctx,
        COMPONENT,
        SERVICE_ACCOUNT,
        CLUSTER_ROLE,
        CLUSTER_ROLE_BINDING,
    )?;
    let pod = PodSpec {
        service_account_name: Some(SERVICE_ACCOUNT.to_string()),
        // The marker reads the host's links: it must be in the host's network namespace.
        host_network: Some(true),
        priority_class_name: Some("system-node-critical".to_string()),
        init_containers: Some(vec![common::install_container(ctx, PLUGINS)]),
        containers: vec![common::agent_container(
            ctx,
            Agent {
                name: "cni-plugins",
                plugins: PLUGINS,
                mark: "linux-bridge",
                extra_args: &[],
                extra_mounts: Vec::new(),
            },
        )],
        volumes: Some(vec![common::cni_bin_volume(ctx)]),
        ..PodSpec::default()
    };
    let ds = common::daemon_set(
        ctx,
        COMPONENT,
        DAEMON_SET,
        SELECTOR,
        "Installs the bridge and tuning CNI plugins and publishes the node's Linux bridges",
        pod,
        Some("10%"),
    );
    out.push(common::to_rendered(Some(COMPONENT), &ds)?);
    Ok(out)
}
