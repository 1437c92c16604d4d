//! The node's NodeNetworkState: its current network state in nmstate's format, written when it
//! changed and only then, so an idle node costs the API server nothing. Refreshed after every
//! apply, on link notifications (debounced by the caller) and at each resync.

use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::Client;
use serde_json::{json, Value};

use super::resources;
use crate::error::{Context, Result};

/// Our version, where upstream names its NetworkManager and nmstate versions.
pub const HANDLER_VERSION: &str = concat!("nmstate-netlink ", env!("CARGO_PKG_VERSION"));

pub struct StateReport {
    api: Api<DynamicObject>,
    node: String,
    node_uid: String,
    /// What was written last (or read at start): a state equal to it is not written again.
    written: Option<Value>,
    /// The links the node's policies name, shown even where pods' veths are hidden.
    named: Vec<String>,
    pub writes: u64,
}

impl StateReport {
    pub fn new(client: &Client, node: &str, node_uid: &str) -> StateReport {
        StateReport {
            api: resources::states(client),
            node: node.to_string(),
            node_uid: node_uid.to_string(),
            written: None,
            named: Vec::new(),
            writes: 0,
        }
    }

    /// The links the node's policies name now.
    pub fn set_named(&mut self, named: Vec<String>) {
        self.named = named;
    }

    /// Reads the node's state and writes it when it differs from what the object holds.
    pub async fn refresh(&mut self) -> Result<bool> {
        let named = self.named.clone();
        // The state's own errors say what they were reading.
        let current =
            tokio::task::spawn_blocking(move || nmstate_netlink::current_state_showing(&named))
                .await
                .context("reading the node's network state")??;
        if self.written.is_none() {
            self.written = self.read_or_create().await?;
        }
        if self.written.as_ref() == Some(&current) {
            return Ok(false);
        }
        let patch = json!({
            "status": {
                "currentState": current,
                "lastSuccessfulUpdateTime": resources::now(),
                // No NetworkManager anywhere: its two version fields are left out.
                "handlerNmstateVersion": HANDLER_VERSION,
            },
        });
        // A merge patch replaces lists whole, and every key of a state is always there (its
        // lists may be empty): what was written before does not linger.
        let written = self
            .api
            .patch_status(&self.node, &PatchParams::default(), &Patch::Merge(&patch))
            .await;
        // Deleted behind our back: made again at the next refresh.
        if matches!(&written, Err(kube::Error::Api(s)) if s.code == 404) {
            self.written = None;
        }
        written.with_context(|| format!("writing the state of node {}", self.node))?;
        self.written = Some(current);
        self.writes += 1;
        Ok(true)
    }

    /// The state the object holds now, creating the object when there is none.
    async fn read_or_create(&self) -> Result<Option<Value>> {
        let found = self
            .api
            .get_opt(&self.node)
            .await
            .with_context(|| format!("reading the state of node {}", self.node))?;
        if let Some(object) = found {
            let current = &object.data["status"]["currentState"];
            return Ok((!current.is_null()).then(|| current.clone()));
        }
        let object: DynamicObject =
            serde_json::from_value(resources::new_state(&self.node, &self.node_uid))
                .with_context(|| format!("node state {}", self.node))?;
        self.api
            .create(&PostParams::default(), &object)
            .await
            .with_context(|| format!("creating the state of node {}", self.node))?;
        Ok(None)
    }
}
