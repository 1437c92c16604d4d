//! The statuses the handler writes: its enactment's (what was asked, for which generation, how
//! it went) and the policy's conditions, counted over the enactments of the policy's current
//! generation on the nodes that match it and run a handler.

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::{json, Value};

use super::conditions::{self, Enactment, Rollout};
use super::enact::{node_api, Handler};
use super::resources::{self, HANDLER_SELECTOR, NODE_LABEL, POLICY_LABEL};
use super::rollout;
use crate::error::{Context, Result};

/// A policy's rollout as observed: the counts, the matching nodes, and the nodes whose
/// enactment of the current generation finished.
pub(super) struct Observed {
    pub rollout: Rollout,
    pub matching: Vec<String>,
    pub finished: Vec<String>,
}

impl Handler {
    /// The enactment's status: what was asked, for which generation, and how it went.
    pub(super) async fn write_enactment(
        &self,
        name: &str,
        generation: i64,
        desired: &Value,
        state: &Enactment,
    ) -> Result<()> {
        let old = self
            .enactments
            .get_opt(name)
            .await
            .with_context(|| format!("reading enactment {name}"))?
            .map(|e| e.data["status"]["conditions"].clone())
            .unwrap_or(Value::Null);
        let patch = json!({
            "status": {
                "desiredState": desired,
                "policyGeneration": generation,
                "conditions": state.conditions(&old, &resources::now()),
            },
        });
        self.enactments
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .with_context(|| format!("writing the status of enactment {name}"))?;
        Ok(())
    }

    /// What the enactments of the policy's generation say, over the nodes that match it and
    /// run a handler (upstream counts the same nodes).
    pub(super) async fn observe(&self, policy: &str, object: &DynamicObject) -> Result<Observed> {
        let generation = object.metadata.generation.unwrap_or(0);
        let selector = &object.data["spec"]["nodeSelector"];
        let nodes = node_api(&self.client)
            .list(&ListParams::default())
            .await
            .context("listing the nodes")?;
        let handler_pods: Api<Pod> = Api::all(self.client.clone());
        // Handlers that run: a pod that cannot start would keep every policy progressing.
        let handler_nodes: Vec<String> = handler_pods
            .list(&ListParams::default().labels(HANDLER_SELECTOR))
            .await
            .context("listing the handler's pods")?
            .items
            .into_iter()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .filter_map(|p| p.spec.and_then(|s| s.node_name))
            .collect();
        let matching: Vec<String> = nodes
            .items
            .into_iter()
            .filter(|n| {
                let labels = n.metadata.labels.clone().unwrap_or_default();
                rollout::matches(selector, &labels)
            })
            .filter_map(|n| n.metadata.name)
            .filter(|n| handler_nodes.contains(n))
            .collect();
        let enactments = self
            .enactments
            .list(&ListParams::default().labels(&format!("{POLICY_LABEL}={policy}")))
            .await
            .with_context(|| format!("listing the enactments of policy {policy}"))?;
        let mut observed = Observed {
            rollout: Rollout {
                matching: matching.len(),
                ..Rollout::default()
            },
            matching,
            finished: Vec::new(),
        };
        for e in enactments.items {
            let node = e
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(NODE_LABEL))
                .cloned();
            let status = &e.data["status"];
            let Some(node) = node.filter(|n| observed.matching.contains(n)) else {
                continue;
            };
            if status["policyGeneration"].as_i64() != Some(generation) {
                continue;
            }
            let finished = match Enactment::read(&status["conditions"]) {
                Some(Enactment::Available) => &mut observed.rollout.available,
                Some(Enactment::Failing(_)) => &mut observed.rollout.failing,
                Some(Enactment::Aborted) => &mut observed.rollout.aborted,
                _ => continue,
            };
            *finished += 1;
            observed.finished.push(node);
        }
        Ok(observed)
    }

    /// The policy's conditions from its enactments; written only when they say something new,
    /// and only over the policy as it was read (a handler that finished later writes last).
    pub(super) async fn write_policy_status(&self, policy: &str) -> Result<()> {
        loop {
            let Some(object) = self
                .policies
                .get_opt(policy)
                .await
                .with_context(|| format!("reading policy {policy}"))?
            else {
                return Ok(());
            };
            let observed = self.observe(policy, &object).await?;
            let old = &object.data["status"]["conditions"];
            let next = observed.rollout.conditions(old, &resources::now());
            if conditions::same(old, &next) {
                return Ok(());
            }
            let patch = json!({
                "metadata": { "resourceVersion": object.metadata.resource_version },
                "status": { "conditions": next },
            });
            match self
                .policies
                .patch_status(policy, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                written => {
                    written.with_context(|| format!("writing the status of policy {policy}"))?;
                    return Ok(());
                }
            }
        }
    }
}
