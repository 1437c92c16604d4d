//! What every component's objects share: labels and metadata, placement, small builders for
//! containers, volumes and RBAC, the operand Namespace, the two containers of our node agent
//! image (an init container that installs, a long-running one that keeps the binaries in place
//! and marks the node), and the DaemonSet around them.
//!
//! Each file is named for what it builds: `context` (what a render reads), `metadata` (labels,
//! metadata, selectors), `workloads` (pod templates, placement, the DaemonSet), `containers`
//! (containers, probes, volumes, variables), `rbac`, `service`, `namespace`, `install` (the
//! install container and the DaemonSet of our plugins) and `marker` (the bridge markers).

use serde::Serialize;

use super::Rendered;
use crate::error::{Context, Result};
use crate::spec::Component;

mod containers;
mod context;
mod install;
mod marker;
mod metadata;
mod namespace;
mod rbac;
mod service;
mod workloads;

pub use containers::{
    container, container_port, field_env, host_path_volume, http_probe, mount, privileged,
    requests, restricted, strings, value_env,
};
pub use context::{host_path, Ctx};
pub use install::{
    cni_bin_volume, install_container, plugin_daemon_set, PluginDaemonSet, CNI_BIN_VOLUME,
    IMAGE_PLUGINS_DIR, NODE_AGENT,
};
pub use marker::{marker, Agent, HOST_ROOT, HOST_ROOT_VOLUME};
pub use metadata::{
    cluster_meta, label_value, labels, meta, relationship_labels, selector, string_map,
    SHARED_COMPONENT,
};
pub use namespace::namespace;
pub use rbac::{cluster_identity, identity, rule, service_account, Identity, NamespacedRole};
pub use service::webhook_service;
pub use workloads::{daemon_set, place, pod_template};

pub fn to_rendered<T: Serialize>(component: Option<Component>, object: &T) -> Result<Rendered> {
    Ok(Rendered {
        component,
        object: serde_json::to_value(object).context("serialise a rendered object")?,
    })
}
