//! Labels stamped on every object the operator renders. Deletion of a removed component's
//! objects works by these labels (list what carries ours, delete what this render lacks), not
//! by a record that can go stale.
//!
//! `app.kubernetes.io/{component,part-of,version}` are the NetworkAddonsConfig's own when it has
//! them (the hyperconverged operator tracks its upgrade by them), as upstream does; managed-by
//! stays ours, as upstream's stays its own. The component an object belongs to is also kept
//! under a label of our group that nobody else sets.

pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
pub const MANAGED_BY_VALUE: &str = "network-addons-operator";
/// The managed-by value of the upstream operator (cluster-network-addons-operator) on the
/// objects it creates: made by a NetworkAddonsConfig too, so they are ours to take over, and
/// those this render lacks are deleted like ours when a NetworkAddonsConfig owns them.
pub const UPSTREAM_MANAGED_BY_VALUE: &str = "cnao-operator";
pub const COMPONENT: &str = "app.kubernetes.io/component";
pub const PART_OF: &str = "app.kubernetes.io/part-of";
pub const PART_OF_VALUE: &str = "network-addons";
pub const VERSION: &str = "app.kubernetes.io/version";
/// The labels a NetworkAddonsConfig's own values replace on every object it owns.
pub const RELATIONSHIP: [&str; 3] = [COMPONENT, PART_OF, VERSION];
/// The upstream operator's version label, kept so its leftover checks and dashboards work.
/// Both operators stamp it on everything they render.
pub const UPSTREAM_VERSION: &str = "networkaddonsoperator.network.kubevirt.io/version";
/// The spec key of the component an object belongs to, whatever `app.kubernetes.io/component`
/// says; the per-component conditions are computed from it.
pub const OWN_COMPONENT: &str = "networkaddonsoperator.network.kubevirt.io/component";

/// Pods whose `/metrics` the monitoring Service exposes (the operator's), upstream's key.
pub const PROMETHEUS: &str = "prometheus.cnao.io";

/// The selector that finds everything this operator manages.
pub fn managed_selector() -> String {
    format!("{MANAGED_BY}={MANAGED_BY_VALUE}")
}

/// Annotation on a rendered object that is created when missing and never updated, because
/// the administrator is expected to edit it (the macvtap device plugin's ConfigMap).
pub const CREATE_ONLY: &str = "networkaddonsoperator.network.kubevirt.io/create-only";
