//! One policy on this node, as upstream's handler does it: the enactment written first (so
//! `kubectl get nnce` shows the node progressing), a slot of the policy's `maxUnavailable`
//! claimed, the desired state applied as a transaction and probed, kept or rolled back, the
//! enactment and the policy's conditions written, the slot released. A node that finds no free
//! slot is Pending and tries again at the next change of the policy (a slot released is one).
//!
//! Which of these a policy needs next is `transitions`' choice; here the steps are carried out
//! over the API (`slots`, `status`) and the node (`transaction`).

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::time::Duration;

use error_context::report;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::Client;
use nmstate_netlink::DesiredState;
use serde_json::Value;
use tracing::{info, warn};

use super::conditions::Enactment;
use super::probes::Probe;
use super::resources::{self, NODE_LABEL, POLICY_LABEL};
use super::rollout;
use super::transitions::{self, Facts, Known, Started, Step};
use crate::error::{Context, Result};

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
    pub(super) client: Client,
    pub(super) opts: Options,
    node_uid: String,
    pub(super) policies: Api<DynamicObject>,
    pub(super) enactments: Api<DynamicObject>,
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

impl Handler {
    pub async fn new(client: Client, opts: Options) -> Result<Handler> {
        let node = node_api(&client)
            .get(&opts.node_name)
            .await
            .with_context(|| format!("reading node {}", opts.node_name))?;
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
            .context("listing the NodeNetworkConfigurationPolicies")?
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
                Err(e) => warn!("policy {name}: {}", report(&e)),
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
            .context("listing this node's enactments")?;
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
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            deleted => deleted
                .map(drop)
                .with_context(|| format!("deleting enactment {name}")),
        }
    }

    async fn node_labels(&self) -> Result<BTreeMap<String, String>> {
        let node = node_api(&self.client)
            .get(&self.opts.node_name)
            .await
            .with_context(|| format!("reading node {}", self.opts.node_name))?;
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
            .with_context(|| format!("reading enactment {enactment_name}"))?;
        let status = existing.as_ref().map(|e| &e.data["status"]);
        let facts = Facts {
            matches: rollout::matches(&policy.data["spec"]["nodeSelector"], labels),
            exists: existing.is_some(),
            enacted: status
                .filter(|s| s["policyGeneration"].as_i64() == Some(generation))
                .and_then(|s| Enactment::read(&s["conditions"])),
            reapply,
        };
        let enactment = Enacting {
            policy,
            name: &name,
            enactment: &enactment_name,
            generation,
            desired: &policy.data["spec"]["desiredState"],
            was: facts.enacted.clone(),
        };
        let mut known = Known::Read(facts);
        loop {
            match self.execute(&enactment, transitions::next(&known)).await? {
                ControlFlow::Continue(answer) => known = answer,
                ControlFlow::Break(reconciled) => return Ok(reconciled),
            }
        }
    }

    /// Carries one step out: what it answered, for the next step to be chosen on, or how the
    /// policy went when it was the last.
    async fn execute(
        &self,
        enactment: &Enacting<'_>,
        step: Step,
    ) -> Result<ControlFlow<Reconciled, Known>> {
        let done = |changed, pending| ControlFlow::Break(Reconciled { changed, pending });
        Ok(match step {
            Step::Done { changed } => done(changed, false),
            Step::Withdraw => {
                self.withdraw(enactment).await?;
                done(false, false)
            }
            Step::ApplyAgain => ControlFlow::Continue(self.apply_again(enactment).await?),
            Step::TakeSlot { create } => {
                if create {
                    self.create_enactment(enactment).await?;
                }
                ControlFlow::Continue(Known::Slot {
                    answer: self
                        .claim_slot(enactment.name, enactment.generation)
                        .await?,
                    was: enactment.was.clone(),
                })
            }
            Step::Wait { report } => {
                if report {
                    self.report(enactment, &Enactment::Pending).await?;
                }
                done(false, true)
            }
            Step::Apply => ControlFlow::Continue(self.apply_fresh(enactment).await?),
            Step::Report { state, free_slot } => {
                self.write(enactment, &state).await?;
                if free_slot {
                    self.release_slot(enactment.name).await?;
                }
                self.write_policy_status(enactment.name).await?;
                done(state == Enactment::Available, false)
            }
        })
    }

    /// The policy no longer matches this node: its slot, its enactment and the node's part in
    /// its conditions go.
    async fn withdraw(&self, enactment: &Enacting<'_>) -> Result<()> {
        let name = enactment.name;
        info!("policy {name} no longer matches this node: enactment removed");
        self.release_slot(name).await?;
        self.delete_enactment(enactment.enactment).await?;
        self.write_policy_status(name).await
    }

    async fn create_enactment(&self, enactment: &Enacting<'_>) -> Result<()> {
        let name = enactment.enactment;
        let object = resources::new_enactment(&self.opts.node_name, &self.node_uid, enactment.name);
        let object: DynamicObject =
            serde_json::from_value(object).with_context(|| format!("enactment {name}"))?;
        self.enactments
            .create(&PostParams::default(), &object)
            .await
            .with_context(|| format!("creating enactment {name}"))?;
        Ok(())
    }

    /// Progressing written, then the transaction with its retries.
    async fn apply_fresh(&self, enactment: &Enacting<'_>) -> Result<Known> {
        let name = enactment.name;
        // At once: a policy just changed says so, not its previous generation's state.
        self.report(enactment, &Enactment::Progressing).await?;
        let result = match self
            .apply_with_retries(name, enactment.policy, Started::Fresh)
            .await
        {
            Ok(summary) => {
                info!("policy {name}: configured ({summary})");
                Ok(())
            }
            Err(why) => {
                warn!("policy {name}: {}", report(&why));
                Err(why)
            }
        };
        Ok(Known::Applied {
            started: Started::Fresh,
            result,
        })
    }

    /// A policy enacted here before the handler started, applied again quietly: when the
    /// kernel still holds it, nothing changes and nothing is probed.
    async fn apply_again(&self, enactment: &Enacting<'_>) -> Result<Known> {
        let name = enactment.name;
        let policy = self
            .policies
            .get(name)
            .await
            .with_context(|| format!("reading policy {name}"))?;
        let result = match self.apply(&policy, Started::Again).await {
            Ok(summary) => {
                info!("policy {name}: applied again after start ({summary})");
                Ok(())
            }
            Err(why) => {
                warn!(
                    "policy {name}: applying again after start failed: {}",
                    report(&why)
                );
                Err(why)
            }
        };
        Ok(Known::Applied {
            started: Started::Again,
            result,
        })
    }

    /// The enactment's `state`, then the policy's conditions.
    async fn report(&self, enactment: &Enacting<'_>, state: &Enactment) -> Result<()> {
        self.write(enactment, state).await?;
        self.write_policy_status(enactment.name).await
    }

    async fn write(&self, enactment: &Enacting<'_>, state: &Enactment) -> Result<()> {
        let Enacting {
            enactment: name,
            generation,
            desired,
            ..
        } = enactment;
        self.write_enactment(name, *generation, desired, state)
            .await
    }
}

/// One policy on this node, as the steps of its reconcile need it.
struct Enacting<'a> {
    policy: &'a DynamicObject,
    /// The policy's name.
    name: &'a str,
    /// The enactment's name.
    enactment: &'a str,
    generation: i64,
    desired: &'a Value,
    /// The enactment's state for this generation, as read.
    was: Option<Enactment>,
}

pub(super) fn node_api(client: &Client) -> Api<Node> {
    Api::all(client.clone())
}
