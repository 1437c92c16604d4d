//! The CustomResourceDefinition: `v1` (stored) and `v1alpha1` (served, deprecated), one schema,
//! as upstream ships them.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

use crate::spec::NetworkAddonsConfig;

pub fn crd() -> CustomResourceDefinition {
    let mut crd = NetworkAddonsConfig::crd();
    crd.spec.scope = "Cluster".to_string();
    if let Some(v1) = crd.spec.versions.first().cloned() {
        let mut alpha = v1;
        alpha.name = "v1alpha1".to_string();
        alpha.storage = false;
        alpha.deprecated = Some(true);
        alpha.deprecation_warning = Some(
            "networkaddonsoperator.network.kubevirt.io/v1alpha1 is deprecated; use v1".to_string(),
        );
        crd.spec.versions.push(alpha);
    }
    crd
}
