//! What the operator finds in the cluster that changes what it renders, read from the API
//! server's CustomResourceDefinitions on every reconcile (so installing cert-manager later is
//! picked up without a restart):
//! - cert-manager: the IPAM controller's webhook certificate is a cert-manager Certificate, so
//!   without cert-manager (and without OpenShift's service CA) that component is not deployed
//!   and the status says why;
//! - OpenShift: its service CA signs that certificate instead;
//! - the Prometheus operator: the operator's ServiceMonitor and PrometheusRule are rendered.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{Api, Client};

use crate::error::{Error, Result};

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

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClusterInfo {
    /// OpenShift 4: its service CA issues serving certificates.
    pub openshift: bool,
    /// cert-manager's Certificate and Issuer are served.
    pub cert_manager: bool,
    /// The Prometheus operator's ServiceMonitor and PrometheusRule are served.
    pub monitoring: bool,
}

impl ClusterInfo {
    /// Kubernetes with cert-manager and the Prometheus operator: every component is rendered
    /// there, with the most objects
    /// (the operator's RBAC in deploy/ is computed from it).
    pub const WITH_CERT_MANAGER: ClusterInfo = ClusterInfo {
        openshift: false,
        cert_manager: true,
        monitoring: true,
    };

    /// Whether a webhook can get a serving certificate here (OpenShift's service CA or
    /// cert-manager).
    pub fn issues_serving_certificates(&self) -> bool {
        self.openshift || self.cert_manager
    }

    /// Reads which of the CRDs above exist.
    pub async fn detect(client: &Client) -> Result<ClusterInfo> {
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        Ok(ClusterInfo {
            openshift: exists(&crds, OPENSHIFT_CRD).await?,
            cert_manager: all_exist(&crds, &CERT_MANAGER_CRDS).await?,
            monitoring: all_exist(&crds, &MONITORING_CRDS).await?,
        })
    }
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
        .map_err(|e| Error::wrap(format!("read CustomResourceDefinition {name}"), e))
}
