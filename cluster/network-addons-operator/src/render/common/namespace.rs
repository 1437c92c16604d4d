//! The operand Namespace, labelled so Pod Security admission lets the privileged node agents in.

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{labels, Ctx};

/// The operand namespace. Its node agents are privileged (they write the host's CNI directory,
/// read its links, talk to OVSDB), so Pod Security admission must allow privileged pods here.
pub fn namespace(ctx: &Ctx) -> Namespace {
    let mut ns_labels = labels(ctx, None);
    for mode in ["enforce", "audit", "warn"] {
        ns_labels.insert(
            format!("pod-security.kubernetes.io/{mode}"),
            "privileged".to_string(),
        );
    }
    Namespace {
        metadata: ObjectMeta {
            name: Some(ctx.settings.namespace.clone()),
            labels: Some(ns_labels),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    }
}
