//! What the operator finds in the cluster that changes what it renders, read from the API
//! server's CustomResourceDefinitions on every reconcile (so installing cert-manager later is
//! picked up without a restart):
//! - cert-manager: the IPAM controller's webhook certificate is a cert-manager Certificate, so
//!   without cert-manager (and without OpenShift's service CA) that component is not deployed
//!   and the status says why;
//! - OpenShift: its service CA signs that certificate instead;
//! - the Prometheus operator: the operator's ServiceMonitor and PrometheusRule are rendered;
//! - the PodDisruptionBudget version: `policy/v1` from Kubernetes 1.21, `policy/v1beta1` before
//!   (read from discovery);
//! - kubernetes-nmstate installed by other means (its own operator, its manifests): then
//!   `nmstate` renders nothing, as two handlers would apply the same policies to a node at
//!   once, and the status says why.

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::ListParams;
use kube::{Api, Client};

use crate::error::{Context, Error, Result};
use crate::labels::{self, UPSTREAM_MANAGED_BY_VALUE};
use crate::nmstate_names::{DAEMON_SET as NMSTATE_HANDLER, POLICY_CRD as NMSTATE_POLICY_CRD};

/// CRDs whose presence means cert-manager serves Certificates and Issuers.
pub const CERT_MANAGER_CRDS: [&str; 2] =
    ["certificates.cert-manager.io", "issuers.cert-manager.io"];

/// CRDs whose presence means the Prometheus operator serves ServiceMonitors and
/// PrometheusRules.
pub const MONITORING_CRDS: [&str; 2] = [
    "servicemonitors.monitoring.coreos.com",
    "prometheusrules.monitoring.coreos.com",
];

/// A CRD every OpenShift 4 cluster has (the config.openshift.io group).
pub const OPENSHIFT_CRD: &str = "infrastructures.config.openshift.io";

/// The CRDs that tell what the cluster offers: their coming or going changes what is rendered,
/// so the controller watches them and reconciles at once instead of at its next resync.
/// (kubernetes-nmstate's policy CRD is left to the resync: the operator applies it itself.)
pub const OFFER_CRDS: [&str; 5] = [
    OPENSHIFT_CRD,
    CERT_MANAGER_CRDS[0],
    CERT_MANAGER_CRDS[1],
    MONITORING_CRDS[0],
    MONITORING_CRDS[1],
];

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClusterInfo {
    /// OpenShift 4: its service CA issues serving certificates.
    pub openshift: bool,
    /// cert-manager's Certificate and Issuer are served.
    pub cert_manager: bool,
    /// The Prometheus operator's ServiceMonitor and PrometheusRule are served.
    pub monitoring: bool,
    /// kubernetes-nmstate runs here, installed by something other than a NetworkAddonsConfig.
    pub foreign_nmstate: Option<ForeignNmstate>,
    /// PodDisruptionBudgets are served only as `policy/v1beta1` (Kubernetes before 1.21).
    pub pdb_v1beta1: bool,
}

/// What shows that kubernetes-nmstate is installed by something other than a
/// NetworkAddonsConfig.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForeignNmstate {
    /// Its policy CRD exists without the labels a NetworkAddonsConfig's operator puts on it.
    PolicyCrd,
    /// A handler DaemonSet runs outside the operand namespace, or in it without those labels.
    Handler,
}

impl ForeignNmstate {
    /// What was found, for the status.
    pub fn describe(self) -> &'static str {
        match self {
            ForeignNmstate::PolicyCrd => {
                "the CustomResourceDefinition nodenetworkconfigurationpolicies.nmstate.io was not created by a NetworkAddonsConfig"
            }
            ForeignNmstate::Handler => {
                "a DaemonSet nmstate-handler not managed by a NetworkAddonsConfig runs"
            }
        }
    }
}

impl ClusterInfo {
    /// Kubernetes with cert-manager and the Prometheus operator: every component is rendered
    /// there, with the most objects
    /// (the operator's RBAC in deploy/ is computed from it).
    pub const WITH_CERT_MANAGER: ClusterInfo = ClusterInfo {
        openshift: false,
        cert_manager: true,
        monitoring: true,
        foreign_nmstate: None,
        pdb_v1beta1: false,
    };

    /// Whether a webhook can get a serving certificate here (OpenShift's service CA or
    /// cert-manager).
    pub fn issues_serving_certificates(&self) -> bool {
        self.openshift || self.cert_manager
    }

    /// Reads which of the CRDs above exist, and whether kubernetes-nmstate runs without a
    /// NetworkAddonsConfig (`namespace`: the operand namespace, where ours runs).
    pub async fn detect(client: &Client, namespace: &str) -> Result<ClusterInfo> {
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        let policy_crd = crds
            .get_opt(NMSTATE_POLICY_CRD)
            .await
            .with_context(|| format!("read CustomResourceDefinition {NMSTATE_POLICY_CRD}"))?;
        let handlers = Api::<DaemonSet>::all(client.clone())
            .list(&ListParams::default().fields(&format!("metadata.name={NMSTATE_HANDLER}")))
            .await
            .with_context(|| format!("list DaemonSets {NMSTATE_HANDLER}"))?;
        let handlers: Vec<ObjectMeta> = handlers.items.into_iter().map(|d| d.metadata).collect();
        Ok(ClusterInfo {
            openshift: exists(&crds, OPENSHIFT_CRD).await?,
            cert_manager: all_exist(&crds, &CERT_MANAGER_CRDS).await?,
            monitoring: all_exist(&crds, &MONITORING_CRDS).await?,
            foreign_nmstate: foreign_nmstate(
                policy_crd.as_ref().map(|c| &c.metadata),
                &handlers,
                namespace,
            ),
            pdb_v1beta1: !serves(client, "policy/v1").await?,
        })
    }
}

/// Whether the API server serves `api_version` (discovery answers 404 when it does not).
async fn serves(client: &Client, api_version: &str) -> Result<bool> {
    match client.list_api_group_resources(api_version).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
        Err(e) => Err(Error::wrap(format!("discover {api_version}"), e)),
    }
}

/// Whether kubernetes-nmstate runs without a NetworkAddonsConfig, from its policy CRD and the
/// DaemonSets named like its handler. A handler DaemonSet in the operand namespace made by a
/// NetworkAddonsConfig's operator is ours to update (or, from the upstream operator, to adopt),
/// and so is such a CRD; anything else belongs to another installation.
pub fn foreign_nmstate(
    policy_crd: Option<&ObjectMeta>,
    handlers: &[ObjectMeta],
    namespace: &str,
) -> Option<ForeignNmstate> {
    if policy_crd.is_some_and(|crd| !made_by_a_config(crd)) {
        return Some(ForeignNmstate::PolicyCrd);
    }
    let ours =
        |ds: &&ObjectMeta| ds.namespace.as_deref() == Some(namespace) && made_by_a_config(ds);
    if handlers.iter().any(|ds| !ours(&ds)) {
        return Some(ForeignNmstate::Handler);
    }
    None
}

/// Whether this operator or the upstream one (which deployed kubernetes-nmstate in its older
/// releases) made the object: its managed-by label, or the version label both stamp on
/// everything. kubernetes-nmstate's own operator sets neither.
fn made_by_a_config(meta: &ObjectMeta) -> bool {
    let Some(l) = meta.labels.as_ref() else {
        return false;
    };
    let managed_by = l.get(labels::MANAGED_BY).map(String::as_str);
    managed_by == Some(labels::MANAGED_BY_VALUE)
        || managed_by == Some(UPSTREAM_MANAGED_BY_VALUE)
        || l.contains_key(labels::UPSTREAM_VERSION)
}

async fn all_exist(crds: &Api<CustomResourceDefinition>, names: &[&str]) -> Result<bool> {
    for name in names {
        if !exists(crds, name).await? {
            return Ok(false);
        }
    }
    Ok(true)
}

async fn exists(crds: &Api<CustomResourceDefinition>, name: &str) -> Result<bool> {
    crds.get_opt(name)
        .await
        .map(|crd| crd.is_some())
        .with_context(|| format!("read CustomResourceDefinition {name}"))
}

#[cfg(test)]
mod tests;
