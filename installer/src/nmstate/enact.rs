//! One policy on this node, as upstream's handler does it: the enactment written first (so
//! `kubectl get nnce` shows the node progressing), a slot of the policy's `maxUnavailable`
//! claimed, the desired state applied as a transaction and probed, kept or rolled back, the
//! enactment and the policy's conditions written, the slot released. A node that finds no free
//! slot is Pending and tries again at the next change of the policy (a slot released is one).

use std::collections::BTreeMap;
use std::fmt;
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
use super::resources::{self, HANDLER_SELECTOR, NODE_LABEL, POLICY_LABEL};
use super::rollout;
use crate::error::{Error, Result};

/// Upstream's: five tries, the waits doubling from 1 s to at most 30 s.
const TRIES: u32 = 5;
const FIRST_WAIT: Duration = Duration::from_secs(1);
const LONGEST_WAIT: Duration = Duration::from_secs(30);

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

/// What a sync saw.
#[derive(Debug, Default)]
pub struct Synced {
    /// It changed the node (the state report is then refreshed at once).
    pub changed: bool,
    /// Some policy waits here for a slot of its `maxUnavailable`.
    pub pending: bool,
    /// The links the node's policies name (the state report shows them even where it hides
    /// pods' veths).
    pub named: Vec<String>,
    /// Each policy's generation, as listed: a watch event of the same generation (another
    /// node's status write) needs no sync, unless this node waits for a slot.
    pub generations: BTreeMap<String, i64>,
}

/// How one policy went on this node.
#[derive(Debug, Default, PartialEq, Eq)]
struct Reconciled {
    changed: bool,
    pending: bool,
}

/// Why an apply did not keep its change: the enactment's message.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ApplyError {
    /// Nothing was changed, and trying again cannot help.
    Refused(String),
    /// A probe failed and the change was rolled back: not tried again, as the probe already
    /// kept the node cut off for its whole timeout.
    Probe(String),
    /// The change failed (and was rolled back): worth another try.
    Failed(String),
    /// Putting the node back failed: nothing more is tried until the journal is restored.
    RollbackFailed(String),
}

impl fmt::Display for ApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApplyError::Refused(m) => write!(f, "refused: {m}"),
            ApplyError::Probe(m) | ApplyError::Failed(m) | ApplyError::RollbackFailed(m) => {
                f.write_str(m)
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
    /// Every slot is taken: Pending until one is released.
    Full,
    /// The rollout's failures reached `maxUnavailable`.
    Aborted,
    /// The policy changed while this node waited: its new generation is reconciled next.
    Stale,
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

    pub fn node_uid(&self) -> &str {
        &self.node_uid
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
            synced
                .generations
                .insert(name.clone(), policy.metadata.generation.unwrap_or(0));
            match self.reconcile(policy, &labels, reapply).await {
                Ok(r) => {
                    synced.changed |= r.changed;
                    synced.pending |= r.pending;
                }
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
                self.delete_enactment(&name).await?;
                info!("enactment {name} removed: its policy is gone");
            }
        }
        Ok(())
    }

    async fn delete_enactment(&self, name: &str) -> Result<()> {
        match self.enactments.delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(Error::kube(format!("deleting enactment {name}"), e)),
        }
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
    ) -> Result<Reconciled> {
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
                self.release_slot(&name).await?;
                self.delete_enactment(&enactment_name).await?;
                self.write_policy_status(&name).await?;
            }
            return Ok(Reconciled::default());
        }
        let status = existing.as_ref().map(|e| &e.data["status"]);
        let enacted = status
            .filter(|s| s["policyGeneration"].as_i64() == Some(generation))
            .and_then(|s| Enactment::read(&s["conditions"]));
        let desired = &policy.data["spec"]["desiredState"];
        match enacted {
            Some(Enactment::Available) if reapply => {
                return self
                    .apply_again(&name, &enactment_name, generation, desired)
                    .await;
            }
            Some(Enactment::Available | Enactment::Failing(_) | Enactment::Aborted) => {
                return Ok(Reconciled::default())
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
        let outcome = match self.claim_slot(&name, generation).await? {
            Slot::Stale => return Ok(Reconciled::default()),
            Slot::Full => {
                if enacted != Some(Enactment::Pending) {
                    self.write_enactment(&enactment_name, generation, desired, &Enactment::Pending)
                        .await?;
                    self.write_policy_status(&name).await?;
                }
                return Ok(Reconciled {
                    changed: false,
                    pending: true,
                });
            }
            Slot::Aborted => Enactment::Aborted,
            Slot::Claimed => {
                self.write_enactment(
                    &enactment_name,
                    generation,
                    desired,
                    &Enactment::Progressing,
                )
                .await?;
                // At once: a policy just changed says so, not its previous generation's state.
                self.write_policy_status(&name).await?;
                let outcome = match self.apply_with_retries(&name, policy, Started::Fresh).await {
                    Ok(summary) => {
                        info!("policy {name}: configured ({summary})");
                        Enactment::Available
                    }
                    Err(why) => {
                        warn!("policy {name}: {why}");
                        Enactment::Failing(why.to_string())
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
        Ok(Reconciled {
            changed: outcome == Enactment::Available,
            pending: false,
        })
    }

    /// A policy enacted here before the handler started, applied again quietly: when the
    /// kernel still holds it, nothing changes and nothing is probed.
    async fn apply_again(
        &self,
        name: &str,
        enactment: &str,
        generation: i64,
        desired: &Value,
    ) -> Result<Reconciled> {
        let policy = self
            .policies
            .get(name)
            .await
            .map_err(|e| Error::kube(format!("reading policy {name}"), e))?;
        match self.apply(&policy, Started::Again).await {
            Ok(summary) => {
                info!("policy {name}: applied again after start ({summary})");
                Ok(Reconciled {
                    changed: true,
                    pending: false,
                })
            }
            Err(why) => {
                warn!("policy {name}: applying again after start failed: {why}");
                let failed = Enactment::Failing(why.to_string());
                self.write_enactment(enactment, generation, desired, &failed)
                    .await?;
                self.write_policy_status(name).await?;
                Ok(Reconciled::default())
            }
        }
    }

    /// Applies, trying again what may pass next time, as upstream does: not a refusal, a
    /// failed probe or a failed rollback.
    async fn apply_with_retries(
        &self,
        name: &str,
        policy: &DynamicObject,
        started: Started,
    ) -> std::result::Result<String, ApplyError> {
        let mut wait = FIRST_WAIT;
        let mut tries = 0;
        loop {
            tries += 1;
            match self.apply(policy, started).await {
                Ok(summary) => return Ok(summary),
                Err(ApplyError::Failed(why)) if tries < TRIES => {
                    warn!("policy {name}: try {tries} of {TRIES} failed, again in {wait:?}: {why}");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(LONGEST_WAIT);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// One transaction: parse, apply (journal first), probe, then commit or roll back. A
    /// journal an earlier apply left (its rollback failed) is restored first: no new change is
    /// made over a node that is not back.
    async fn apply(
        &self,
        policy: &DynamicObject,
        started: Started,
    ) -> std::result::Result<String, ApplyError> {
        let journal = super::journal_path(&self.opts.state_dir);
        let restore = journal.clone();
        let restored = blocking(move || nmstate_netlink::recover(&restore))
            .await?
            .map_err(|e| {
                ApplyError::RollbackFailed(format!(
                    "an earlier change could not be undone, nothing more is applied: {e}"
                ))
            })?;
        if let Some(what) = restored {
            warn!("an earlier change was undone first: {what}");
        }
        let desired = parse(policy).map_err(ApplyError::Refused)?;
        let mut probes = self.opts.probes.clone();
        if started == Started::Again {
            // A node that just booted may not be Ready until its policies are back (its
            // cluster network may need them): that probe would refuse what makes it Ready.
            probes.retain(|p| *p != Probe::NodeReady);
        }
        let plan = probes::before(&probes).await;
        let applied = blocking(move || nmstate_netlink::apply(&desired, &journal))
            .await?
            .map_err(|e| match e {
                nmstate_netlink::Error::Refused(m) => ApplyError::Refused(m),
                e @ nmstate_netlink::Error::RollbackFailed { .. } => {
                    ApplyError::RollbackFailed(e.to_string())
                }
                e => ApplyError::Failed(e.to_string()),
            })?;
        let summary = applied.summary().replace('\n', "; ");
        // Nothing changed, nothing to probe: a no-op must not fail for an API server that is
        // away for a moment.
        let probed = if applied.changed() {
            plan.run(&self.client, &self.opts.node_name, self.opts.probe_timeout)
                .await
        } else {
            Ok(())
        };
        match probed {
            Ok(()) => {
                blocking(move || applied.commit())
                    .await?
                    .map_err(|e| ApplyError::Failed(e.to_string()))?;
                Ok(summary)
            }
            Err(probe) => match blocking(move || applied.rollback()).await? {
                Ok(()) => Err(ApplyError::Probe(format!("{probe}; rolled back"))),
                Err(e) => Err(ApplyError::RollbackFailed(format!(
                    "{probe}; rolling back failed: {e}"
                ))),
            },
        }
    }

    /// Claims a slot of the policy's `maxUnavailable` for this node, if one is free. Holders
    /// that are no longer configuring (their node gone, without a handler or not matching any
    /// more, or their enactment of this generation finished: a handler that died before it
    /// released) are dropped on the way, so a slot never leaks.
    async fn claim_slot(&self, policy: &str, generation: i64) -> Result<Slot> {
        loop {
            let object = self
                .policies
                .get(policy)
                .await
                .map_err(|e| Error::kube(format!("reading policy {policy}"), e))?;
            if object.metadata.generation.unwrap_or(0) != generation {
                return Ok(Slot::Stale);
            }
            let holders = resources::configuring(&object);
            if holders.contains(&self.opts.node_name) {
                return Ok(Slot::Claimed);
            }
            let observed = self.observe(policy, &object).await?;
            let limit = rollout::max_unavailable(
                &object.data["spec"]["maxUnavailable"],
                observed.rollout.matching,
            )
            .map_err(Error::msg)?;
            if observed.rollout.failing >= limit {
                return Ok(Slot::Aborted);
            }
            let mut live = rollout::live_holders(&holders, &observed.matching, &observed.finished);
            if live.len() >= limit {
                if live != holders && !self.set_holders(&object, &live).await? {
                    continue;
                }
                return Ok(Slot::Full);
            }
            live.push(self.opts.node_name.clone());
            if self.set_holders(&object, &live).await? {
                return Ok(Slot::Claimed);
            }
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

    /// Writes the holders into the policy's status if the policy is still as read; false on a
    /// conflict (read again).
    async fn set_holders(&self, object: &DynamicObject, holders: &[String]) -> Result<bool> {
        let name = object.metadata.name.clone().unwrap_or_default();
        let patch = json!({
            "metadata": { "resourceVersion": object.metadata.resource_version },
            "status": {
                resources::CONFIGURING_FIELD: holders,
                "unavailableNodeCount": holders.len(),
                "lastUnavailableNodeCountUpdate": resources::now(),
            },
        });
        match self
            .policies
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(Error::kube(format!("claiming a slot of policy {name}"), e)),
        }
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
    async fn observe(&self, policy: &str, object: &DynamicObject) -> Result<Observed> {
        let generation = object.metadata.generation.unwrap_or(0);
        let selector = &object.data["spec"]["nodeSelector"];
        let nodes = node_api(&self.client)
            .list(&ListParams::default())
            .await
            .map_err(|e| Error::kube("listing the nodes", e))?;
        let handler_pods: Api<Pod> = Api::all(self.client.clone());
        // Handlers that run: a pod that cannot start would keep every policy progressing.
        let handler_nodes: Vec<String> = handler_pods
            .list(&ListParams::default().labels(HANDLER_SELECTOR))
            .await
            .map_err(|e| Error::kube("listing the handler's pods", e))?
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
            .map_err(|e| Error::kube(format!("listing the enactments of policy {policy}"), e))?;
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

/// A policy's rollout as observed: the counts, the matching nodes, and the nodes whose
/// enactment of the current generation finished.
struct Observed {
    rollout: Rollout,
    matching: Vec<String>,
    finished: Vec<String>,
}

/// The policy's desired state, parsed; what we do not apply is refused by name. `capture`
/// (nmpolicy templates) is not implemented: a policy using it is refused rather than applied
/// with its template text.
fn parse(policy: &DynamicObject) -> std::result::Result<DesiredState, String> {
    let capture = &policy.data["spec"]["capture"];
    if capture.as_object().is_some_and(|c| !c.is_empty()) {
        return Err("spec.capture (nmpolicy captures) is not supported".to_string());
    }
    DesiredState::parse(&policy.data["spec"]["desiredState"]).map_err(|e| e.to_string())
}

/// Runs `f` on a blocking thread (netlink and file system calls).
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> std::result::Result<T, ApplyError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApplyError::Failed(format!("the apply did not finish: {e}")))
}

fn node_api(client: &Client) -> Api<Node> {
    Api::all(client.clone())
}
