//! RBAC builders: policy rules, a component's service account, its ClusterRole and the binding
//! of that role to the account.

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};

use super::{cluster_meta, meta, strings, Ctx};
use crate::spec::Component;

pub fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(strings(groups)),
        resources: Some(strings(resources)),
        verbs: strings(verbs),
        ..PolicyRule::default()
    }
}

pub fn service_account(ctx: &Ctx, name: &str, component: Component) -> ServiceAccount {
    ServiceAccount {
        metadata: meta(ctx, name, Some(component)),
        ..ServiceAccount::default()
    }
}

pub fn cluster_role(
    ctx: &Ctx,
    name: &str,
    component: Component,
    rules: Vec<PolicyRule>,
) -> ClusterRole {
    ClusterRole {
        metadata: cluster_meta(ctx, name, Some(component)),
        rules: Some(rules),
        aggregation_rule: None,
    }
}

/// Binds `role` to the service account `account` of the operand namespace.
pub fn cluster_role_binding(
    ctx: &Ctx,
    name: &str,
    component: Component,
    role: &str,
    account: &str,
) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: cluster_meta(ctx, name, Some(component)),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_string(),
            kind: "ClusterRole".to_string(),
            name: role.to_string(),
        },
        subjects: Some(vec![Subject {
            api_group: None,
            kind: "ServiceAccount".to_string(),
            name: account.to_string(),
            namespace: Some(ctx.settings.namespace.clone()),
        }]),
    }
}
