//! The kinds the renderer can produce, in apply order: what the reconciler applies, lists by
//! label and deletes when a render no longer has them.

/// A kind the renderer can produce: the reconciler lists these by label to delete what a
/// render no longer contains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenderedKind {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub namespaced: bool,
    /// Never deleted when a component goes away (the operand Namespace, CRDs: deleting them
    /// would delete what users created in them).
    pub keep: bool,
}

const fn kind(
    api_version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    keep: bool,
) -> RenderedKind {
    RenderedKind {
        api_version,
        kind,
        plural,
        namespaced,
        keep,
    }
}

/// Every kind the renderer can produce. A test checks each rendered object's kind is listed.
pub const RENDERED_KINDS: &[RenderedKind] = &[
    kind("v1", "Namespace", "namespaces", false, true),
    kind(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
        true,
    ),
    kind("v1", "ServiceAccount", "serviceaccounts", true, false),
    kind("rbac.authorization.k8s.io/v1", "Role", "roles", true, false),
    kind(
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        "rolebindings",
        true,
        false,
    ),
    kind("v1", "ConfigMap", "configmaps", true, false),
    kind("v1", "Service", "services", true, false),
    kind(
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        "clusterroles",
        false,
        false,
    ),
    kind(
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
        false,
    ),
    kind("cert-manager.io/v1", "Issuer", "issuers", true, false),
    kind(
        "cert-manager.io/v1",
        "Certificate",
        "certificates",
        true,
        false,
    ),
    kind(
        "networking.k8s.io/v1",
        "NetworkPolicy",
        "networkpolicies",
        true,
        false,
    ),
    kind(
        "security.openshift.io/v1",
        "SecurityContextConstraints",
        "securitycontextconstraints",
        false,
        false,
    ),
    kind("apps/v1", "DaemonSet", "daemonsets", true, false),
    kind(
        "monitoring.coreos.com/v1",
        "ServiceMonitor",
        "servicemonitors",
        true,
        false,
    ),
    kind(
        "monitoring.coreos.com/v1",
        "PrometheusRule",
        "prometheusrules",
        true,
        false,
    ),
    kind("apps/v1", "Deployment", "deployments", true, false),
    kind(
        "policy/v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        true,
        false,
    ),
    kind(
        "policy/v1beta1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        true,
        false,
    ),
    kind(
        "admissionregistration.k8s.io/v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        false,
        false,
    ),
];
