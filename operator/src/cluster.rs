//! What the operator finds in the cluster that changes what it renders, read from the API
//! server's CustomResourceDefinitions on every reconcile (so installing cert-manager later is
//! picked up without a restart):
//! - cert-manager: the IPAM controller's webhook certificate is a cert-manager Certificate, so
//!   without cert-manager (and without OpenShift's service CA) that component is not deployed
//!   and the status says why;
//! - OpenShift: its service CA signs that certificate instead.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{Api, Client};

use crate::error::{Error, Result};

/// CRDs whose presence means cert-manager serves Certificates and Issuers.
pub const CERT_MANAGER_CRDS: [&str; 2] =
    ["certificates.cert-manager.io", "issuers.cert-manager.io"];

/// A CRD every OpenShift 4 cluster has (the config.openshift.io group).
pub const OPENSHIFT_CRD: &str = "infrastructures.config.openshift.io";

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClusterInfo {
    /// OpenShift 4: its service CA issues serving certificates.
    pub openshift: bool,
    /// cert-manager's Certificate and Issuer are served.
    pub cert_manager: bool,
}

impl ClusterInfo {
    /// Kubernetes with cert-manager: every component is rendered there, with the most objects
    /// (the operator's RBAC in deploy/ is computed from it).
    pub const WITH_CERT_MANAGER: ClusterInfo = ClusterInfo {
        openshift: false,
        cert_manager: true,
    };

    /// Whether a webhook can get a serving certificate here (OpenShift's service CA or
    /// cert-manager).
    pub fn issues_serving_certificates(&self) -> bool {
        self.openshift || self.cert_manager
    }

    /// Reads which of the CRDs above exist.
    pub async fn detect(client: &Client) -> Result<ClusterInfo> {
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        let mut cert_manager = true;
        for name in CERT_MANAGER_CRDS {
            cert_manager &= exists(&crds, name).await?;
        }
        Ok(ClusterInfo {
            openshift: exists(&crds, OPENSHIFT_CRD).await?,
            cert_manager,
        })
    }
}

async fn exists(crds: &Api<CustomResourceDefinition>, name: &str) -> Result<bool> {
    crds.get_opt(name)
        .await
        .map(|crd| crd.is_some())
        .map_err(|e| Error::wrap(format!("read CustomResourceDefinition {name}"), e))
}
