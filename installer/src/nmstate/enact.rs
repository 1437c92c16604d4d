//! One policy on this node, as upstream's handler does it: the enactment written first (so
//! `kubectl get nnce` shows the node progressing), a slot of the policy's `maxUnavailable`
//! claimed, the desired state applied as a transaction and probed, kept or rolled back, the
//! enactment and the policy's conditions written, the slot released.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::Client;
use nmstate_netlink::DesiredState;
use serde_json::{json, Value};
use tracing::{info, warn};

use super::conditions::{self, Enactment, Rollout};
use super::probes::{self, Probe};
use super::resources::{self, CONFIGURING_ANNOTATION, HANDLER_SELECTOR, NODE_LABEL, POLICY_LABEL};
use super::rollout;
use crate::error::{Error, Result};

/// Upstream's: five tries, the waits doubling from 1 s to at most 30 s.
const TRIES: u32 = 5;
const FIRST_WAIT: Duration = Duration::from_secs(1);
const LONGEST_WAIT: Duration = Duration::from_secs(30);
/// How often a node waiting for a slot of `maxUnavailable` asks again.
const SLOT_POLL: Duration = Duration::from_secs(3);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub node_name: String,
    /// Where the apply's journal and the ready mark live (the node's, so that a handler killed
    /// mid-apply finds its journal when it starts again).
    pub state_dir: PathBuf,
    pub probes: Vec<Probe>,
    pub probe_timeout: Duration,
}

pub struct Handler {
    client: Client,
    opts: Options,
    node_uid: String,
    policies: Api<DynamicObject>,
    enactments: Api<DynamicObject>,
}

/// Whether a sync changed the node (the state report is then refreshed at once).
pub type Changed = bool;

/// What a sync saw: whether it changed the node, and the links the node's policies name (the
/// state report shows them even where it hides pods' veths).
#[derive(Debug, Default)]
pub struct Synced {
    pub changed: Changed,
    pub named: Vec<String>,
}

impl Handler {
    pub async fn new(client: Client, opts: Options) -> Result<Handler> {
        let node = node_api(&client)
            .get(&opts.node_name)
            .await
            .map_err(|e| Error::kube(format!("reading node {}", opts.node_name), e))?;
        Ok(Handler {
            policies: resources::policies(&client),
            enactments: resources::enactments(&client),
            node_uid: node.metadata.uid.unwrap_or_default(),
            client,
            opts,
        })
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn node_uid(&self) -> &str {
        &self.node_uid
    }

    fn journal(&self) -> PathBuf {
        self.opts.state_dir.join("apply.journal")
    }

    /// Every policy, oldest first (as upstream orders them). With `reapply`, policies already
    /// enacted here are applied again too: after the handler starts, the kernel may have
    /// forgotten them (a reboot).
    pub async fn sync(&self, reapply: bool) -> Result<Synced> {
        let mut list = self
            .policies
            .list(&ListParams::default())
            .await
            .map_err(|e| Error::kube("listing the NodeNetworkConfigurationPolicies", e))?
            .items;
        list.sort_by(|a, b| {
            (
                a.metadata.creation_timestamp.as_ref().map(|t| t.0),
                &a.metadata.name,
            )
                .cmp(&(
                    b.metadata.creation_timestamp.as_ref().map(|t| t.0),
                    &b.metadata.name,
                ))
        });
        self.remove_orphans(&list).await?;
        let labels = self.node_labels().await?;
        let mut synced = Synced::default();
        for policy in &list {
            let name = policy.metadata.name.clone().unwrap_or_default();
            match self.reconcile(policy, &labels, reapply).await {
                Ok(c) => synced.changed |= c,
                Err(e) => warn!("policy {name}: {}", e.report()),
            }
            if rollout::matches(&policy.data["spec"]["nodeSelector"], &labels) {
                if let Ok(desired) = DesiredState::parse(&policy.data["spec"]["desiredState"]) {
                    synced.named.extend(desired.interface_names());
                }
            }
        }
        synced.named.sort();
        synced.named.dedup();
        Ok(synced)
    }

    /// This node's enactments of policies that were deleted go with them (the change they
    /// made stays, as upstream: undoing is a policy of its own, `state: absent`).
    async fn remove_orphans(&self, policies: &[DynamicObject]) -> Result<()> {
        let mine = ListParams::default().labels(&format!("{NODE_LABEL}={}", self.opts.node_name));
        let enactments = self
            .enactments
            .list(&mine)
            .await
            .map_err(|e| Error::kube("listing this node's enactments", e))?;
        for e in enactments.items {
            let policy = e.metadata.labels.as_ref().and_then(|l| l.get(POLICY_LABEL));
            let gone = !policies.iter().any(|p| p.metadata.name.as_ref() == policy);
            let name = e.metadata.name.unwrap_or_default();
            if gone {
                match self
                    .enactments
                    .delete(&name, &DeleteParams::default())
                    .await
                {
                    Ok(_) => info!("enactment {name} removed: its policy is gone"),
                    Err(kube::Error::Api(s)) if s.code == 404 => {}
                    Err(e) => return Err(Error::kube(format!("deleting enactment {name}"), e)),
                }
            }
        }
        Ok(())
    }

    async fn node_labels(&self) -> Result<BTreeMap<String, String>> {
        let node = node_api(&self.client)
            .get(&self.opts.node_name)
            .await
            .map_err(|e| Error::kube(format!("reading node {}", self.opts.node_name), e))?;
        Ok(node.metadata.labels.unwrap_or_default())
    }

    async fn reconcile(
        &self,
        policy: &DynamicObject,
        labels: &BTreeMap<String, String>,
        reapply: bool,
    ) -> Result<Changed> {
        let name = policy.metadata.name.clone().unwrap_or_default();
        let generation = policy.metadata.generation.unwrap_or(0);
        let enactment_name = resources::enactment_name(&self.opts.node_name, &name);
        let existing = self
            .enactments
            .get_opt(&enactment_name)
            .await
            .map_err(|e| Error::kube(format!("reading enactment {enactment_name}"), e))?;
        if !rollout::matches(&policy.data["spec"]["nodeSelector"], labels) {
            if existing.is_some() {
                info!("policy {name} no longer matches this node: enactment removed");
                self.enactments
                    .delete(&enactment_name, &DeleteParams::default())
                    .await
                    .map_err(|e| Error::kube(format!("deleting enactment {enactment_name}"), e))?;
                self.write_policy_status(&name).await?;
            }
            return Ok(false);
        }
        let status = existing.as_ref().map(|e| &e.data["status"]);
        let enacted = status
            .filter(|s| s["policyGeneration"].as_i64() == Some(generation))
            .and_then(|s| Enactment::read(&s["conditions"]));
        let desired = &policy.data["spec"]["desiredState"];
        match enacted {
            Some(Enactment::Available) if reapply => {
                // Applied again quietly: when the kernel still holds it, nothing changes.
                return match self.apply(desired, Started::Again).await {
                    Ok(summary) => {
                        info!("policy {name}: applied again after start ({summary})");
                        Ok(true)
                    }
                    Err(why) => {
                        warn!("policy {name}: applying again after start failed: {why}");
                        self.write_enactment(
                            &enactment_name,
                            generation,
                            desired,
                            &Enactment::Failing(why),
                        )
                        .await?;
                        self.write_policy_status(&name).await?;
                        Ok(false)
                    }
                };
            }
            Some(Enactment::Available | Enactment::Failing(_) | Enactment::Aborted) => {
                return Ok(false)
            }
            _ => {}
        }
        if existing.is_none() {
            let object = resources::new_enactment(&self.opts.node_name, &self.node_uid, &name);
            let object: DynamicObject = serde_json::from_value(object)
                .map_err(|e| Error::msg(format!("enactment {enactment_name}: {e}")))?;
            self.enactments
                .create(&PostParams::default(), &object)
                .await
                .map_err(|e| Error::kube(format!("creating enactment {enactment_name}"), e))?;
        }
        let outcome = match self
            .claim_slot(&name, generation, &enactment_name, desired)
            .await?
        {
            Slot::Aborted => Enactment::Aborted,
            Slot::Claimed => {
                self.write_enactment(
                    &enactment_name,
                    generation,
                    desired,
                    &Enactment::Progressing,
                )
                .await?;
                let outcome = match self.apply_with_retries(&name, desired).await {
                    Ok(summary) => {
                        info!("policy {name}: configured ({summary})");
                        Enactment::Available
                    }
                    Err(why) => {
                        warn!("policy {name}: {why}");
                        Enactment::Failing(why)
                    }
                };
                // The enactment's result first: a node that finished is no longer counted as
                // configuring by the others.
                self.write_enactment(&enactment_name, generation, desired, &outcome)
                    .await?;
                self.release_slot(&name).await?;
                outcome
            }
        };
        if outcome == Enactment::Aborted {
            self.write_enactment(&enactment_name, generation, desired, &outcome)
                .await?;
        }
        self.write_policy_status(&name).await?;
        Ok(outcome == Enactment::Available)
    }

    /// Applies, retrying what may pass next time (not a refusal), as upstream does.
    async fn apply_with_retries(
        &self,
        policy: &str,
        desired: &Value,
    ) -> std::result::Result<String, String> {
        let mut wait = FIRST_WAIT;
        let mut tries = 0;
        loop {
            tries += 1;
            match self.apply(desired, Started::Fresh).await {
                Ok(summary) => return Ok(summary),
                // A refusal changed nothing, and a failed probe already cut the node off for
                // the whole probe timeout: neither is tried again.
                Err(why)
                    if tries >= TRIES || why.starts_with(REFUSED) || why.starts_with(PROBE) =>
                {
                    return Err(why)
                }
                Err(why) => {
                    warn!(
                        "policy {policy}: try {tries} of {TRIES} failed, again in {wait:?}: {why}"
                    );
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(LONGEST_WAIT);
                }
            }
        }
    }

    /// One transaction: parse, apply (journal first), probe, then commit or roll back. The
    /// error is the enactment's message.
    async fn apply(
        &self,
        desired: &Value,
        started: Started,
    ) -> std::result::Result<String, String> {
        let desired = DesiredState::parse(desired).map_err(|e| format!("{REFUSED}{e}"))?;
        let mut probes = self.opts.probes.clone();
        if started == Started::Again {
            // A node that just booted may not be Ready until its policies are back (its
            // cluster network may need them): that probe would refuse what makes it Ready.
            probes.retain(|p| *p != Probe::NodeReady);
        }
        let plan = probes::before(&probes).await;
        let journal = self.journal();
        let applied =
            tokio::task::spawn_blocking(move || nmstate_netlink::apply(&desired, &journal))
                .await
                .map_err(|e| format!("the apply did not finish: {e}"))?
                .map_err(|e| match e {
                    nmstate_netlink::Error::Refused(_) => format!("{REFUSED}{e}"),
                    e => e.to_string(),
                })?;
        let summary = applied.summary().replace('\n', "; ");
        match plan
            .run(&self.client, &self.opts.node_name, self.opts.probe_timeout)
            .await
        {
            Ok(()) => {
                tokio::task::spawn_blocking(move || applied.commit())
                    .await
                    .map_err(|e| e.to_string())?
                    .map_err(|e| e.to_string())?;
                Ok(summary)
            }
            Err(probe) => {
                let rolled_back = tokio::task::spawn_blocking(move || applied.rollback())
                    .await
                    .map_err(|e| e.to_string())?;
                match rolled_back {
                    Ok(()) => Err(format!("{probe}; rolled back")),
                    Err(e) => Err(format!("{probe}; rolling back failed: {e}")),
                }
            }
        }
    }

    /// Waits for a slot of the policy's `maxUnavailable` (the enactment Pending meanwhile),
    /// or gives up when the rollout's failures reached it.
    async fn claim_slot(
        &self,
        policy: &str,
        generation: i64,
        enactment: &str,
        desired: &Value,
    ) -> Result<Slot> {
        let mut pending_written = false;
        loop {
            let object = self
                .policies
                .get(policy)
                .await
                .map_err(|e| Error::kube(format!("reading policy {policy}"), e))?;
            let mut holders = resources::configuring(&object);
            if holders.contains(&self.opts.node_name) {
                return Ok(Slot::Claimed);
            }
            let rollout = self.rollout(policy, &object).await?;
            let limit =
                rollout::max_unavailable(&object.data["spec"]["maxUnavailable"], rollout.matching)
                    .map_err(Error::msg)?;
            if rollout.failing >= limit {
                return Ok(Slot::Aborted);
            }
            if holders.len() < limit {
                holders.push(self.opts.node_name.clone());
                if self.set_holders(&object, &holders).await? {
                    return Ok(Slot::Claimed);
                }
                continue;
            }
            if !pending_written {
                self.write_enactment(enactment, generation, desired, &Enactment::Pending)
                    .await?;
                pending_written = true;
            }
            tokio::time::sleep(SLOT_POLL).await;
        }
    }

    async fn release_slot(&self, policy: &str) -> Result<()> {
        loop {
            let object = self
                .policies
                .get(policy)
                .await
                .map_err(|e| Error::kube(format!("reading policy {policy}"), e))?;
            let mut holders = resources::configuring(&object);
            if !holders.contains(&self.opts.node_name) {
                return Ok(());
            }
            holders.retain(|h| *h != self.opts.node_name);
            if self.set_holders(&object, &holders).await? {
                return Ok(());
            }
        }
    }

    /// Writes the holders if the policy is still as read; false on a conflict (read again).
    async fn set_holders(&self, object: &DynamicObject, holders: &[String]) -> Result<bool> {
        let name = object.metadata.name.clone().unwrap_or_default();
        let value = if holders.is_empty() {
            Value::Null
        } else {
            json!(holders.join(" "))
        };
        let patch = json!({
            "metadata": {
                "resourceVersion": object.metadata.resource_version,
                "annotations": { CONFIGURING_ANNOTATION: value },
            },
        });
        match self
            .policies
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => return Ok(false),
            Err(e) => return Err(Error::kube(format!("claiming a slot of policy {name}"), e)),
        }
        let status = json!({
            "status": {
                "unavailableNodeCount": holders.len(),
                "lastUnavailableNodeCountUpdate": resources::now(),
            },
        });
        self.policies
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .map_err(|e| Error::kube(format!("writing the status of policy {name}"), e))?;
        Ok(true)
    }

    /// The enactment's status: what was asked, for which generation, and how it went.
    async fn write_enactment(
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
            .map_err(|e| Error::kube(format!("reading enactment {name}"), e))?
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
            .map_err(|e| Error::kube(format!("writing the status of enactment {name}"), e))?;
        Ok(())
    }

    /// What the enactments of the policy's generation say, over the nodes that match it and
    /// run a handler (upstream counts the same nodes).
    async fn rollout(&self, policy: &str, object: &DynamicObject) -> Result<Rollout> {
        let generation = object.metadata.generation.unwrap_or(0);
        let selector = &object.data["spec"]["nodeSelector"];
        let nodes = node_api(&self.client)
            .list(&ListParams::default())
            .await
            .map_err(|e| Error::kube("listing the nodes", e))?;
        let handler_pods: Api<Pod> = Api::all(self.client.clone());
        let handler_nodes: Vec<String> = handler_pods
            .list(&ListParams::default().labels(HANDLER_SELECTOR))
            .await
            .map_err(|e| Error::kube("listing the handler's pods", e))?
            .items
            .into_iter()
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
            .map_err(|e| Error::kube(format!("listing the enactments of policy {policy}"), e))?;
        let mut rollout = Rollout {
            matching: matching.len(),
            ..Rollout::default()
        };
        for e in enactments.items {
            let node = e
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(NODE_LABEL))
                .cloned();
            let status = &e.data["status"];
            if !node.is_some_and(|n| matching.contains(&n))
                || status["policyGeneration"].as_i64() != Some(generation)
            {
                continue;
            }
            match Enactment::read(&status["conditions"]) {
                Some(Enactment::Available) => rollout.available += 1,
                Some(Enactment::Failing(_)) => rollout.failing += 1,
                Some(Enactment::Aborted) => rollout.aborted += 1,
                _ => {}
            }
        }
        Ok(rollout)
    }

    /// The policy's conditions from its enactments; written only when they say something new,
    /// and only over the policy as it was read (a handler that finished later writes last).
    async fn write_policy_status(&self, policy: &str) -> Result<()> {
        loop {
            let Some(object) = self
                .policies
                .get_opt(policy)
                .await
                .map_err(|e| Error::kube(format!("reading policy {policy}"), e))?
            else {
                return Ok(());
            };
            let rollout = self.rollout(policy, &object).await?;
            let old = &object.data["status"]["conditions"];
            let next = rollout.conditions(old, &resources::now());
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
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(e) => {
                    return Err(Error::kube(
                        format!("writing the status of policy {policy}"),
                        e,
                    ))
                }
            }
        }
    }
}

/// Whether an apply is a policy's first on this node, or its state put back at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Started {
    Fresh,
    Again,
}

enum Slot {
    Claimed,
    Aborted,
}

/// Marks a message as a refusal: nothing was changed and trying again cannot help.
const REFUSED: &str = "refused: ";
/// Starts the message of an apply that a probe rolled back (`probes::Plan::run`'s words).
const PROBE: &str = "probe ";

fn node_api(client: &Client) -> Api<Node> {
    Api::all(client.clone())
}
