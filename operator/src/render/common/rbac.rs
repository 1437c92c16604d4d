//! RBAC builders: policy rules, a component's service account, its ClusterRole and the binding
//! of that role to the account.

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};

use super::{cluster_meta, meta, strings, to_rendered, Ctx};
use crate::error::Result;
use crate::render::Rendered;
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

/// The names of a component's identity: its ServiceAccount, and the ClusterRole and binding
/// that grant it its rules across the cluster.
pub struct Identity<'a> {
    pub account: &'a str,
    pub role: &'a str,
    pub binding: &'a str,
}

impl Identity<'_> {
    /// One name for all three, as most components name them.
    pub fn named(name: &str) -> Identity<'_> {
        Identity {
            account: name,
            role: name,
            binding: name,
        }
    }
}

/// A component's ServiceAccount, its ClusterRole of `rules` and the binding of the one to the
/// other, in apply order.
pub fn cluster_identity(
    ctx: &Ctx,
    component: Component,
    names: Identity,
    rules: Vec<PolicyRule>,
) -> Result<Vec<Rendered>> {
    let c = Some(component);
    Ok(vec![
        to_rendered(c, &service_account(ctx, names.account, component))?,
        to_rendered(c, &cluster_role(ctx, names.role, component, rules))?,
        to_rendered(
            c,
            &cluster_role_binding(ctx, names.binding, component, names.role, names.account),
        )?,
    ])
}
