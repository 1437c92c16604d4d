//! RBAC builders: policy rules, a component's service account, its ClusterRole and the binding
//! of that role to the account, and the Roles it holds in the operand namespace only.

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};

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

fn cluster_role(
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
fn cluster_role_binding(
    ctx: &Ctx,
    name: &str,
    component: Component,
    role: &str,
    account: &str,
) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: cluster_meta(ctx, name, Some(component)),
        role_ref: role_ref("ClusterRole", role),
        subjects: Some(vec![account_subject(ctx, account)]),
    }
}

fn role(ctx: &Ctx, name: &str, component: Component, rules: Vec<PolicyRule>) -> Role {
    Role {
        metadata: meta(ctx, name, Some(component)),
        rules: Some(rules),
    }
}

/// Binds the Role `role` of the operand namespace to its service account `account`.
fn role_binding(
    ctx: &Ctx,
    name: &str,
    component: Component,
    role: &str,
    account: &str,
) -> RoleBinding {
    RoleBinding {
        metadata: meta(ctx, name, Some(component)),
        role_ref: role_ref("Role", role),
        subjects: Some(vec![account_subject(ctx, account)]),
    }
}

fn role_ref(kind: &str, name: &str) -> RoleRef {
    RoleRef {
        api_group: "rbac.authorization.k8s.io".to_string(),
        kind: kind.to_string(),
        name: name.to_string(),
    }
}

fn account_subject(ctx: &Ctx, account: &str) -> Subject {
    Subject {
        api_group: None,
        kind: "ServiceAccount".to_string(),
        name: account.to_string(),
        namespace: Some(ctx.settings.namespace.clone()),
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

/// A Role of the operand namespace, named `role`, and its binding `binding` to a component's
/// service account: for what the component does only there (its leader election).
pub struct NamespacedRole<'a> {
    pub role: &'a str,
    pub binding: &'a str,
    pub rules: Vec<PolicyRule>,
}

/// A component's ServiceAccount, its ClusterRole of `rules` and the binding of the one to the
/// other, in apply order.
pub fn cluster_identity(
    ctx: &Ctx,
    component: Component,
    names: Identity,
    rules: Vec<PolicyRule>,
) -> Result<Vec<Rendered>> {
    identity(ctx, component, names, Vec::new(), rules)
}

/// [`cluster_identity`] with the Roles `namespaced` too, each followed by its binding, between
/// the ServiceAccount and the ClusterRole.
pub fn identity(
    ctx: &Ctx,
    component: Component,
    names: Identity,
    namespaced: Vec<NamespacedRole>,
    rules: Vec<PolicyRule>,
) -> Result<Vec<Rendered>> {
    let c = Some(component);
    let account = names.account;
    let mut out = vec![to_rendered(c, &service_account(ctx, account, component))?];
    for r in namespaced {
        let binding = role_binding(ctx, r.binding, component, r.role, account);
        out.extend([
            to_rendered(c, &role(ctx, r.role, component, r.rules))?,
            to_rendered(c, &binding)?,
        ]);
    }
    let binding = cluster_role_binding(ctx, names.binding, component, names.role, account);
    out.extend([
        to_rendered(c, &cluster_role(ctx, names.role, component, rules))?,
        to_rendered(c, &binding)?,
    ]);
    Ok(out)
}
