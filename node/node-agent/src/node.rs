//! The Node object's status, through the API server: read its capacity, patch it. The node is
//! read with a plain GET of the Node (`GET /api/v1/nodes/<name>`, the `get` verb on `nodes`),
//! not of its status subresource, which RBAC would authorise as `get` on `nodes/status`; it is
//! changed with a merge patch of the status subresource (`patch` on `nodes/status`). Those two
//! are all the DaemonSet's service account needs: `get` on `nodes`, `patch` on `nodes/status`.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use kube::Client;
use serde_json::Value;

use crate::error::{Context, Result};
use crate::marker::{self, Mark, Plan};

pub struct NodeStatus {
    api: Api<Node>,
    name: String,
}

impl NodeStatus {
    pub fn new(client: Client, name: &str) -> NodeStatus {
        NodeStatus {
            api: Api::all(client),
            name: name.to_string(),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `status.capacity`, quantities as the API server wrote them. A GET of the Node itself,
    /// which carries its status too.
    pub async fn capacity(&self) -> Result<BTreeMap<String, String>> {
        let node = self
            .api
            .get(&self.name)
            .await
            .with_context(|| format!("reading node {}", self.name))?;
        Ok(node
            .status
            .and_then(|s| s.capacity)
            .unwrap_or_default()
            .into_iter()
            .map(|(k, q)| (k, q.0))
            .collect())
    }

    /// A JSON merge patch of the status subresource (null removes a key).
    pub async fn patch(&self, patch: &Value) -> Result<()> {
        self.api
            .patch_status(&self.name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .with_context(|| format!("patching the status of node {} with {patch}", self.name))?;
        Ok(())
    }

    /// One round: reads the capacity, and patches it when it does not list exactly `bridges`
    /// under `mark`'s prefix. Returns what changed.
    pub async fn publish(&self, mark: Mark, bridges: &BTreeSet<String>) -> Result<Plan> {
        let capacity = self.capacity().await?;
        let plan = marker::plan(mark, bridges, &capacity);
        if let Some(patch) = plan.patch(mark) {
            self.patch(&patch).await?;
        }
        Ok(plan)
    }
}
