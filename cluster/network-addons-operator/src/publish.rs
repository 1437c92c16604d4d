//! Publishing what a reconcile found: the status report that follows from it, the status
//! written when it changed, the metrics, and an event for each thing that is news.
//!
//! A reconcile ends here either way: with the rollouts of a converged configuration, or with
//! the failure that kept it from being applied.

use k8s_openapi::jiff::Timestamp;
use kube::Resource;

use crate::context::Ctx;
use crate::desired::{Desired, Failure};
use crate::error::Result;
use crate::events;
use crate::progress::{component_health, Progress};
use crate::spec::{NetworkAddonsConfig, NetworkAddonsConfigStatus};
use crate::status::{
    containers, degraded_anew, is_true, next_status, write, Health, Reason, Report, Rollout,
    AVAILABLE, PROGRESSING,
};

/// What a reconcile found.
pub enum Found<'a> {
    /// The configuration converged; these are its rollouts, as observed.
    Rollouts {
        desired: &'a Desired,
        progressing: &'a [Progress],
    },
    /// The configuration could not be applied.
    Failure(&'a Failure),
}

/// Reports what was found: the status that follows from it, written when it changed, the
/// metrics, and the events of what is news. For rollouts, a status that cannot be written is
/// the error; for a failure it is only logged (the failure is the error to retry on).
pub async fn publish(
    ctx: &Ctx,
    nac: &NetworkAddonsConfig,
    found: Found<'_>,
    now: Timestamp,
) -> Result<()> {
    let report = match &found {
        Found::Rollouts {
            desired,
            progressing,
        } => rollouts_report(ctx, nac, desired, progressing, now),
        Found::Failure(failure) => failure_report(ctx, nac, failure, now),
    };
    let before = nac.status.clone().unwrap_or_default();
    let after = next_status(&before, &report);
    match &found {
        Found::Rollouts { desired, .. } => {
            write(&ctx.client, nac, &after).await?;
            ctx.metrics
                .set_kubemacpool_deployed(desired.applied.kube_mac_pool.is_some());
            ctx.metrics.set_cr_ready(is_true(&after, AVAILABLE));
        }
        Found::Failure(_) => {
            ctx.metrics.set_cr_ready(false);
            if let Err(e) = write(&ctx.client, nac, &after).await {
                tracing::warn!(error = %e, "status not written");
            }
        }
    }
    announce(ctx, nac, &before, &report.health, now).await;
    Ok(())
}

/// The report of converged rollouts. A rollout waiting for an image that cannot be pulled, or
/// for nodes that are down, is not hung: the status names the image or the nodes, and it goes
/// on as soon as the image can be had (a mirror, a registry back up) or the nodes return,
/// however long that takes.
fn rollouts_report(
    ctx: &Ctx,
    nac: &NetworkAddonsConfig,
    desired: &Desired,
    progressing: &[Progress],
    now: Timestamp,
) -> Report {
    let tracked: Vec<Rollout> = progressing
        .iter()
        .filter(|p| !p.waiting)
        .map(|p| Rollout {
            object: p.object.clone(),
            line: p.line.clone(),
            fingerprint: p.fingerprint.clone(),
        })
        .collect();
    let hung = ctx
        .rollouts
        .observe(&tracked, now, ctx.settings.progress_timeout);
    let lines: Vec<String> = progressing.iter().map(|p| p.line.clone()).collect();
    let health = if lines.is_empty() {
        Health::Available
    } else {
        Health::Deploying {
            progressing: lines,
            hung,
        }
    };
    Report {
        health,
        generation: nac.meta().generation,
        version: ctx.settings.operator_version.clone(),
        containers: Some(containers(&desired.objects)),
        not_deployed: Some(desired.applied.not_deployed(&desired.cluster)),
        components: Some(component_health(
            &desired.applied,
            &desired.cluster,
            progressing,
        )),
        now,
    }
}

/// The report of a failure: nothing was rendered or applied, so what the status says of the
/// containers and components stays.
fn failure_report(
    ctx: &Ctx,
    nac: &NetworkAddonsConfig,
    failure: &Failure,
    now: Timestamp,
) -> Report {
    Report {
        health: Health::Failing {
            reason: failure.reason,
            message: failure.message.clone(),
        },
        generation: nac.meta().generation,
        version: ctx.settings.operator_version.clone(),
        containers: None,
        not_deployed: None,
        components: None,
        now,
    }
}

/// The events of what is news in `health`, given the status `before`: Available or
/// Progressing when it turns so, and a Warning when Degraded turns True or changes reason.
async fn announce(
    ctx: &Ctx,
    nac: &NetworkAddonsConfig,
    before: &NetworkAddonsConfigStatus,
    health: &Health,
    now: Timestamp,
) {
    match health {
        Health::Available => {
            if !is_true(before, AVAILABLE) {
                tracing::info!("available");
                ctx.events
                    .normal(nac, events::AVAILABLE, "all components are available", now)
                    .await;
            }
        }
        Health::Deploying { progressing, hung } => {
            if !is_true(before, PROGRESSING) {
                tracing::info!(objects = progressing.len(), "progressing");
                ctx.events
                    .normal(nac, events::PROGRESSING, &progressing.join("\n"), now)
                    .await;
            }
            if !hung.is_empty() && degraded_anew(before, Reason::RolloutHung) {
                tracing::warn!(objects = ?hung, "a rollout is not making progress");
                ctx.events
                    .failed(nac, Reason::RolloutHung.as_str(), &hung.join("\n"), now)
                    .await;
            }
        }
        Health::Failing { reason, message } => {
            if degraded_anew(before, *reason) {
                ctx.events.failed(nac, reason.as_str(), message, now).await;
            }
        }
    }
}
