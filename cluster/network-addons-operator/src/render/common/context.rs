//! What a component's render reads ([`Ctx`]): the applied spec with its defaults resolved once,
//! and where the host's directories are as our containers see them.

use crate::cluster::ClusterInfo;
use crate::defaults::{default_infra_placement, default_workloads_placement, DEFAULT_PULL_POLICY};
use crate::settings::{
    Settings, DEFAULT_CNI_BIN_DIR, DEFAULT_CNI_CONF_DIR, OPENSHIFT_CNI_BIN_DIR,
    OPENSHIFT_CNI_CONF_DIR,
};
use crate::spec::{NetworkAddonsConfigSpec, Placement};

/// Everything a component's render reads: the applied spec with its defaults resolved once.
pub struct Ctx<'a> {
    pub spec: &'a NetworkAddonsConfigSpec,
    pub settings: &'a Settings,
    /// What the cluster offers (OpenShift, cert-manager).
    pub cluster: ClusterInfo,
    /// The nodes' CNI directories: the settings', or OpenShift's where the settings keep the
    /// vanilla defaults.
    pub cni_bin_dir: String,
    pub cni_conf_dir: String,
    pub pull_policy: String,
    /// Cluster-wide controllers (Deployments).
    pub infra: Placement,
    /// Node agents (DaemonSets).
    pub workloads: Placement,
}

impl<'a> Ctx<'a> {
    /// `applied` normally has every default filled; an unfilled field still renders with the
    /// operator's default rather than an empty value.
    pub fn new(
        applied: &'a NetworkAddonsConfigSpec,
        settings: &'a Settings,
        cluster: &ClusterInfo,
    ) -> Ctx<'a> {
        let pull_policy = applied
            .image_pull_policy
            .clone()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| DEFAULT_PULL_POLICY.to_string());
        let placement = applied.placement_configuration.as_ref();
        let on_openshift = |dir: &String, vanilla: &str, openshift: &str| {
            if cluster.openshift && dir == vanilla {
                openshift.to_string()
            } else {
                dir.clone()
            }
        };
        Ctx {
            spec: applied,
            settings,
            cluster: *cluster,
            cni_bin_dir: on_openshift(
                &settings.cni_bin_dir,
                DEFAULT_CNI_BIN_DIR,
                OPENSHIFT_CNI_BIN_DIR,
            ),
            cni_conf_dir: on_openshift(
                &settings.cni_conf_dir,
                DEFAULT_CNI_CONF_DIR,
                OPENSHIFT_CNI_CONF_DIR,
            ),
            pull_policy,
            infra: placement
                .and_then(|p| p.infra.clone())
                .unwrap_or_else(default_infra_placement),
            workloads: placement
                .and_then(|p| p.workloads.clone())
                .unwrap_or_else(default_workloads_placement),
        }
    }

    /// The host's CNI binary directory as our containers see it: `/host<cni_bin_dir>`.
    pub fn host_bin_dir(&self) -> String {
        host_path(&self.cni_bin_dir)
    }
}

/// `/host` + an absolute host path (a relative one is taken from `/`).
pub fn host_path(path: &str) -> String {
    format!("/host/{}", path.trim_start_matches('/'))
}

#[cfg(test)]
mod tests;
