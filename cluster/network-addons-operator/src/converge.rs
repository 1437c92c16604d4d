//! Bringing the cluster to the desired state, writing only what differs from it: an object is
//! applied when this process has not applied it as rendered now, or when it changed on the
//! server since ([`apply::Ours::is_current`]); the managed objects the render lacks are deleted;
//! then, only once those deletions succeeded, the applied spec is recorded, so a failed deletion
//! is retried from an accurate previous spec. A reconcile that finds everything as it left it
//! writes nothing.

use std::collections::{HashMap, HashSet};

use kube::api::DynamicObject;

use crate::apply::{self, settled, Applied, Identity, Live};
use crate::context::Ctx;
use crate::desired::{Desired, Failure};
use crate::status::Reason;

/// What a converge did, and the DaemonSets and Deployments as last seen (listed, or returned by
/// their apply), for the rollout report.
#[derive(Default)]
pub struct Converged {
    pub applied: usize,
    pub deleted: usize,
    pub workloads: HashMap<Identity, DynamicObject>,
}

pub async fn converge(ctx: &Ctx, desired: &Desired) -> Result<Converged, Failure> {
    let namespace = &ctx.settings.namespace;
    let listing = apply::list_managed(&ctx.client, namespace).await;
    let live = listing.by_identity();
    let mut out = Converged {
        workloads: listing.workloads(),
        ..Converged::default()
    };
    let record_live = live.get(&Identity::of(&desired.record)).copied();
    let completed = settled::completed(record_live, &desired.record);
    for object in &desired.objects {
        let id = Identity::of(object);
        let read;
        let now = if apply::kind_of(object).is_ok_and(|k| k.keep) {
            read = apply::read_live(&ctx.client, object)
                .await
                .map_err(Failure::because(Reason::FailedToApply))?;
            read.as_ref()
        } else {
            live.get(&id).copied()
        };
        if ctx.ours.is_current(object, now.map(Live::of).as_ref()) {
            continue;
        }
        if left_as_completed(ctx, completed, object, now) {
            continue;
        }
        let (how, applied) = apply::apply(&ctx.client, object, &ctx.ours)
            .await
            .map_err(Failure::because(Reason::FailedToApply))?;
        log_applied(&id, how);
        out.applied += 1;
        if id.api_version == "apps/v1" {
            out.workloads.insert(id, applied);
        }
    }

    let mut keep: HashSet<Identity> = desired.objects.iter().map(Identity::of).collect();
    keep.insert(Identity::of(&desired.record));
    ctx.ours.retain(&keep);
    let deleted = apply::delete_unrendered(&ctx.client, &listing, &keep, namespace).await;
    for id in &deleted.deleted {
        tracing::info!(object = %id, "deleted (no longer rendered)");
        out.workloads.remove(id);
    }
    out.deleted = deleted.deleted.len();
    if !deleted.errors.is_empty() {
        return Err(Failure::new(
            Reason::FailedToDeleteObjects,
            deleted.errors.join("\n"),
        ));
    }

    if !ctx
        .ours
        .is_current(&desired.record, record_live.map(Live::of).as_ref())
        && !left_as_completed(ctx, completed, &desired.record, record_live)
    {
        let (how, _) = apply::apply(&ctx.client, &desired.record, &ctx.ours)
            .await
            .map_err(Failure::because(Reason::FailedToApply))?;
        log_applied(&Identity::of(&desired.record), how);
        out.applied += 1;
    }
    Ok(out)
}

/// A new leader leaves what the last one completed and nobody changed since unwritten (see
/// [`settled`]); returns whether `object` is such.
fn left_as_completed(
    ctx: &Ctx,
    completed: bool,
    object: &serde_json::Value,
    now: Option<&DynamicObject>,
) -> bool {
    let leave = completed
        && !ctx.ours.knows(&Identity::of(object))
        && now.is_some_and(|now| settled::unchanged(now, object));
    if let (true, Some(now)) = (leave, now) {
        ctx.ours.remember(object, now);
    }
    leave
}

fn log_applied(id: &Identity, how: Applied) {
    match how {
        Applied::Recreated => {
            tracing::info!(object = %id, "re-created (an immutable field changed)");
        }
        Applied::TakenOver => {
            tracing::info!(object = %id, "taken over in place (another manager had made it)");
        }
        Applied::Created => tracing::info!(object = %id, "created (create-only)"),
        Applied::Applied | Applied::Kept => tracing::debug!(object = %id, "applied"),
    }
}
