//! The slots of a policy's `maxUnavailable`: the nodes configuring its current generation, in
//! the policy's status and written over the policy as it was read (its resourceVersion is the
//! lock; a conflict reads it again). What the slots allow is `transitions`' to say.

use kube::api::{DynamicObject, Patch, PatchParams};
use serde_json::json;

use super::enact::Handler;
use super::resources;
use super::rollout;
use super::transitions::{self, Claim, Slot, Slots};
use crate::error::{Context, Result};

impl Handler {
    /// Claims a slot of the policy's `maxUnavailable` for this node, if one is free. Holders
    /// that are no longer configuring (their node gone, without a handler or not matching any
    /// more, or their enactment of this generation finished: a handler that died before it
    /// released) are dropped on the way, so a slot never leaks.
    pub(super) async fn claim_slot(&self, policy: &str, generation: i64) -> Result<Slot> {
        let me = &self.opts.node_name;
        loop {
            let object = self.read_policy(policy).await?;
            let holders = resources::configuring(&object);
            let read_generation = object.metadata.generation.unwrap_or(0);
            if let Some(answer) =
                transitions::slot_settled(read_generation, generation, &holders, me)
            {
                return Ok(answer);
            }
            let observed = self.observe(policy, &object).await?;
            let limit = rollout::max_unavailable(
                &object.data["spec"]["maxUnavailable"],
                observed.rollout.matching,
            )?;
            let slots = Slots {
                holders: &holders,
                limit,
                failing: observed.rollout.failing,
                matching: &observed.matching,
                finished: &observed.finished,
            };
            match transitions::claim(slots, me) {
                Claim::Aborted => return Ok(Slot::Aborted),
                Claim::Full { prune: None } => return Ok(Slot::Full),
                Claim::Full { prune: Some(live) } => {
                    if self.set_holders(&object, &live).await? {
                        return Ok(Slot::Full);
                    }
                }
                Claim::Take(live) => {
                    if self.set_holders(&object, &live).await? {
                        return Ok(Slot::Claimed);
                    }
                }
            }
        }
    }

    pub(super) async fn release_slot(&self, policy: &str) -> Result<()> {
        loop {
            let object = self.read_policy(policy).await?;
            let holders = resources::configuring(&object);
            let Some(rest) = transitions::release(&holders, &self.opts.node_name) else {
                return Ok(());
            };
            if self.set_holders(&object, &rest).await? {
                return Ok(());
            }
        }
    }

    async fn read_policy(&self, policy: &str) -> Result<DynamicObject> {
        self.policies
            .get(policy)
            .await
            .with_context(|| format!("reading policy {policy}"))
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
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            written => written
                .map(|_| true)
                .with_context(|| format!("claiming a slot of policy {name}")),
        }
    }
}
