//! Labels stamped on every object the operator renders. Deletion of a removed component's
//! objects works by these labels (list what carries ours, delete what this render lacks), not
//! by a record that can go stale.

pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
pub const MANAGED_BY_VALUE: &str = "network-addons-operator";
pub const COMPONENT: &str = "app.kubernetes.io/component";
pub const PART_OF: &str = "app.kubernetes.io/part-of";
pub const PART_OF_VALUE: &str = "network-addons";
pub const VERSION: &str = "app.kubernetes.io/version";
/// The upstream operator's version label, kept so its leftover checks and dashboards work.
pub const UPSTREAM_VERSION: &str = "networkaddonsoperator.network.kubevirt.io/version";

/// The selector that finds everything this operator manages.
pub fn managed_selector() -> String {
    format!("{MANAGED_BY}={MANAGED_BY_VALUE}")
}

/// Annotation on a rendered object that is created when missing and never updated, because
/// the administrator is expected to edit it (the macvtap device plugin's ConfigMap).
pub const CREATE_ONLY: &str = "networkaddonsoperator.network.kubevirt.io/create-only";
