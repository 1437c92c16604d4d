//! Pod templates, their placement, and the DaemonSet of node agents: what every DaemonSet and
//! Deployment of a component is built from.

use k8s_openapi::api::apps::v1::{
    DaemonSet, DaemonSetSpec, DaemonSetUpdateStrategy, RollingUpdateDaemonSet,
};
use k8s_openapi::api::core::v1::{PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::{labels, meta, selector, string_map, Ctx};
use crate::spec::{Component, Placement};

/// A pod template carrying our labels plus the selector's, and a one-line description.
pub fn pod_template(
    ctx: &Ctx,
    component: Component,
    selector_labels: &[(&str, &str)],
    description: &str,
    spec: PodSpec,
) -> PodTemplateSpec {
    let mut pod_labels = labels(ctx, Some(component));
    pod_labels.extend(string_map(selector_labels));
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(pod_labels),
            annotations: Some(string_map(&[("description", description)])),
            ..ObjectMeta::default()
        }),
        spec: Some(spec),
    }
}

/// Sets node selector, affinity and tolerations; an empty part of the placement leaves the
/// field unset.
pub fn place(spec: &mut PodSpec, placement: &Placement) {
    spec.node_selector = placement.node_selector.clone().filter(|m| !m.is_empty());
    spec.affinity = placement.affinity.clone();
    spec.tolerations = placement.tolerations.clone().filter(|t| !t.is_empty());
}

/// A DaemonSet of node agents: workloads placement, rolled out `max_unavailable` at a time
/// (`None`: the API's default of one node).
pub fn daemon_set(
    ctx: &Ctx,
    component: Component,
    name: &str,
    selector_labels: &[(&str, &str)],
    description: &str,
    mut spec: PodSpec,
    max_unavailable: Option<&str>,
) -> DaemonSet {
    place(&mut spec, &ctx.workloads);
    DaemonSet {
        metadata: meta(ctx, name, Some(component)),
        spec: Some(DaemonSetSpec {
            selector: selector(selector_labels),
            template: pod_template(ctx, component, selector_labels, description, spec),
            update_strategy: Some(DaemonSetUpdateStrategy {
                type_: Some("RollingUpdate".to_string()),
                rolling_update: max_unavailable.map(|m| RollingUpdateDaemonSet {
                    max_unavailable: Some(IntOrString::String(m.to_string())),
                    max_surge: None,
                }),
            }),
            ..DaemonSetSpec::default()
        }),
        status: None,
    }
}
