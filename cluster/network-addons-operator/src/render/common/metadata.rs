//! The labels and metadata of every rendered object, and the fixed selectors: what tells which
//! component an object is of, and that it is ours.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use super::Ctx;
use crate::labels;
use crate::render::Rendered;
use crate::spec::Component;

/// The `app.kubernetes.io/component` value of objects no single component owns.
pub const SHARED_COMPONENT: &str = "network-addons";

/// A label value Kubernetes accepts: at most 63 of `[A-Za-z0-9._-]`, alphanumeric at both ends.
/// Versions such as `1.2.0+abc` become `1.2.0-abc`.
pub fn label_value(s: &str) -> String {
    let mapped: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .take(63)
        .collect();
    mapped
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_string()
}

/// The labels on every object and pod template of `component` (`None`: shared objects).
pub fn labels(ctx: &Ctx, component: Option<Component>) -> BTreeMap<String, String> {
    let version = label_value(&ctx.settings.operator_version);
    BTreeMap::from([
        (
            labels::MANAGED_BY.to_string(),
            labels::MANAGED_BY_VALUE.to_string(),
        ),
        (
            labels::COMPONENT.to_string(),
            component
                .map_or(SHARED_COMPONENT, Component::key)
                .to_string(),
        ),
        (
            labels::PART_OF.to_string(),
            labels::PART_OF_VALUE.to_string(),
        ),
        (labels::VERSION.to_string(), version.clone()),
        (labels::UPSTREAM_VERSION.to_string(), version),
        (
            labels::OWN_COMPONENT.to_string(),
            component
                .map_or(SHARED_COMPONENT, Component::key)
                .to_string(),
        ),
    ])
}

/// Gives every object and pod template the NetworkAddonsConfig's own relationship labels
/// (`app.kubernetes.io/{component,part-of,version}`) where it has them, as the upstream operator
/// does. Selectors keep theirs: they cannot change once created.
pub fn relationship_labels(objects: &mut [Rendered], cr_labels: &BTreeMap<String, String>) {
    let ours: Vec<(&str, &String)> = labels::RELATIONSHIP
        .iter()
        .filter_map(|k| cr_labels.get(*k).map(|v| (*k, v)))
        .collect();
    if ours.is_empty() {
        return;
    }
    for r in objects {
        let mut targets = vec!["/metadata/labels"];
        if r.object["spec"]["template"]["metadata"].is_object() {
            targets.push("/spec/template/metadata/labels");
        }
        for target in targets {
            if let Some(serde_json::Value::Object(map)) = r.object.pointer_mut(target) {
                for (k, v) in &ours {
                    map.insert(k.to_string(), serde_json::Value::String(label_value(v)));
                }
            }
        }
    }
}

/// Metadata of a cluster-scoped object.
pub fn cluster_meta(ctx: &Ctx, name: &str, component: Option<Component>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        labels: Some(labels(ctx, component)),
        ..ObjectMeta::default()
    }
}

/// Metadata of an object in the operand namespace.
pub fn meta(ctx: &Ctx, name: &str, component: Option<Component>) -> ObjectMeta {
    ObjectMeta {
        namespace: Some(ctx.settings.namespace.clone()),
        ..cluster_meta(ctx, name, component)
    }
}

pub fn string_map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A selector over fixed labels only: `spec.selector` cannot change once created, so it never
/// holds the version. The keys are upstream's, so an object upstream created is taken over in
/// place.
pub fn selector(pairs: &[(&str, &str)]) -> LabelSelector {
    LabelSelector {
        match_labels: Some(string_map(pairs)),
        match_expressions: None,
    }
}

#[cfg(test)]
mod tests;
