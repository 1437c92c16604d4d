//! Which rendered DaemonSets and Deployments are still rolling out, and why: from the objects
//! as last seen (listed, or returned by their apply), the pods of those short of pods (images
//! that cannot be pulled) and, when pods are missing, the nodes (down ones).

use std::collections::HashMap;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{DynamicObject, ListParams};
use kube::{Api, Client};
use serde_json::{json, Value};

use crate::apply::Identity;
use crate::cluster::ClusterInfo;
use crate::error::{Context, Result};
use crate::labels;
use crate::spec::NetworkAddonsConfigSpec;
use crate::status::{self, Absent, ComponentHealth};

/// A rendered DaemonSet or Deployment still rolling out.
pub struct Progress {
    /// The spec key of its component.
    pub component: String,
    /// Which object: what the rollout tracker keys its clock on.
    pub object: Identity,
    /// Why, for the status: `DaemonSet "ns/name" is not available (...)`, and the images its
    /// pods cannot pull or the nodes down that its pods wait for.
    pub line: String,
    /// Changes whenever the object's status or generation does.
    pub fingerprint: String,
    /// Its pods wait for what no rollout fixes: images that cannot be pulled, nodes that are
    /// down.
    pub waiting: bool,
}

/// The rendered DaemonSets and Deployments (of `objects`) still rolling out, judged on
/// `workloads`, the objects as last seen.
pub async fn progress(
    client: &Client,
    objects: &[Value],
    workloads: &HashMap<Identity, DynamicObject>,
) -> Result<Vec<Progress>> {
    let mut out = Vec::new();
    // Read once, and only when a DaemonSet is short of pods.
    let mut nodes: Option<Vec<Node>> = None;
    for object in objects {
        let id = Identity::of(object);
        if id.api_version != "apps/v1" {
            continue;
        }
        let seen = workloads.get(&id).map(serde_json::to_value).transpose();
        let seen = seen.with_context(|| format!("read {id}"))?;
        let mut unavailable_pods = 0;
        let (line, fingerprint, selector) = match (id.kind.as_str(), seen) {
            (_, None) => (format!("{id} is missing"), String::new(), None),
            ("DaemonSet", Some(seen)) => {
                let ds: DaemonSet =
                    serde_json::from_value(seen).with_context(|| format!("read {id}"))?;
                let Some(line) = status::daemonset_progress(&ds) else {
                    continue;
                };
                unavailable_pods = ds
                    .status
                    .as_ref()
                    .and_then(|s| s.number_unavailable)
                    .unwrap_or(0);
                (
                    line,
                    fingerprint(ds.metadata.generation, &ds.status),
                    ds.spec.map(|s| s.selector),
                )
            }
            ("Deployment", Some(seen)) => {
                let d: Deployment =
                    serde_json::from_value(seen).with_context(|| format!("read {id}"))?;
                let Some(line) = status::deployment_progress(&d) else {
                    continue;
                };
                (
                    line,
                    fingerprint(d.metadata.generation, &d.status),
                    d.spec.map(|s| s.selector),
                )
            }
            _ => continue,
        };
        let mut problems = Vec::new();
        if let Some(labels) = selector.as_ref().and_then(match_labels) {
            let pods: Api<Pod> = Api::namespaced(client.clone(), &id.namespace);
            let list = pods
                .list(&ListParams::default().labels(&labels))
                .await
                .with_context(|| format!("list the pods of {id}"))?;
            problems = status::image_pull_problems(&list.items);
            if problems.is_empty() && unavailable_pods > 0 {
                if nodes.is_none() {
                    let api: Api<Node> = Api::all(client.clone());
                    let list = api
                        .list(&ListParams::default())
                        .await
                        .context("list the nodes")?;
                    nodes = Some(list.items);
                }
                let down = status::nodes_down(&list.items, nodes.as_deref().unwrap_or_default());
                if down.len() >= unavailable_pods as usize {
                    problems = down;
                }
            }
        }
        out.push(Progress {
            component: object["metadata"]["labels"][labels::OWN_COMPONENT]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            object: id,
            line: if problems.is_empty() {
                line
            } else {
                format!("{line}: {}", problems.join(", "))
            },
            fingerprint,
            waiting: !problems.is_empty(),
        });
    }
    Ok(out)
}

/// Each component `applied` turns on, with its objects still rolling out, and each it asks for
/// that is not deployed, with the reason.
pub fn component_health(
    applied: &NetworkAddonsConfigSpec,
    cluster: &ClusterInfo,
    progressing: &[Progress],
) -> Vec<ComponentHealth> {
    let mut out: Vec<ComponentHealth> = applied
        .deployed_components(cluster)
        .into_iter()
        .map(|c| ComponentHealth {
            key: c.key().to_string(),
            progressing: progressing
                .iter()
                .filter(|p| p.component == c.key())
                .map(|p| p.line.clone())
                .collect(),
            not_deployed: None,
        })
        .collect();
    out.extend(
        applied
            .withheld(cluster)
            .into_iter()
            .map(|w| ComponentHealth {
                key: w.component.key().to_string(),
                progressing: Vec::new(),
                not_deployed: Some(Absent {
                    reason: w.reason.to_string(),
                    message: w.message,
                }),
            }),
    );
    out
}

/// `a=b,c=d` of a selector made of match labels only (the operator renders no other kind).
fn match_labels(selector: &LabelSelector) -> Option<String> {
    let labels = selector.match_labels.as_ref().filter(|l| !l.is_empty())?;
    Some(
        labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(","),
    )
}

fn fingerprint<S: serde::Serialize>(generation: Option<i64>, status: &S) -> String {
    json!({ "generation": generation, "status": status }).to_string()
}
