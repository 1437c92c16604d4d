//! The controller: one reconcile of the NetworkAddonsConfig named `cluster`, as a list of steps:
//! the desired state ([`crate::desired`]: validate, defaults from the previous spec, render),
//! converge the cluster to it writing only what differs ([`crate::converge`]), the rollouts'
//! progress ([`crate::progress`]), and publish what was found: the status, metrics and events
//! ([`crate::publish`]).
//!
//! A failure to validate, read the previous spec, render, apply or delete is reported as
//! Degraded with its reason (and a Warning event when that is news), and the reconcile is
//! retried with a growing delay. A failure to read the DaemonSets' and Deployments' progress or
//! to write the status itself (or a NetworkAddonsConfig without a uid, which no API server
//! serves) leaves the status as it was: it is logged and retried the same way. Otherwise the
//! object is reconciled again every minute (an object changed behind the operator's back, as
//! `apply::Live` tells, is applied again then), whenever it changes, and whenever one of its
//! DaemonSets or Deployments changes. Most of those reconciles write nothing, or the status alone.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::jiff::Timestamp;
use kube::api::ListParams;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};

use crate::cluster::OFFER_CRDS;
pub use crate::context::{Clock, Ctx, PrefixSource};
use crate::converge::converge;
use crate::defaults::cluster_mac_prefix;
use crate::desired::{desired_state, owner_reference, Desired, Failure};
use crate::error::{describe, Error, Result};
use crate::events;
use crate::labels;
use crate::metrics;
use crate::progress::progress;
use crate::publish::{publish, Found};
use crate::settings::Settings;
use crate::spec::{NetworkAddonsConfig, CONFIG_NAME};

/// Reconciled this often even when nothing changed: undoes drift.
pub const RESYNC: Duration = Duration::from_secs(60);

/// Runs the controller until SIGTERM or Ctrl-C: the NetworkAddonsConfig named `cluster`, the
/// DaemonSets and Deployments carrying the managed-by label in the operand namespace, and the
/// CRDs that tell what the cluster offers (each change reconciles `cluster`). `metrics` is what
/// the probes and `/metrics` report.
pub async fn run(client: Client, settings: Settings, metrics: Arc<metrics::State>) -> Result<()> {
    let namespace = settings.namespace.clone();
    tracing::info!(
        version = %settings.operator_version,
        config = CONFIG_NAME,
        %namespace,
        instance = %settings.pod_name,
        "starting the network addons operator"
    );
    for (var, value) in &settings.superseded {
        tracing::warn!(
            variable = %var,
            %value,
            plugins_image = %settings.plugins_image,
            "not used: the plugins image provides this component"
        );
    }
    metrics.set_leading();
    // The controller cannot run without the API server either: wait for it as long as it takes.
    let prefix = cluster_mac_prefix(&client, u32::MAX).await;
    let ctx = Arc::new(
        Ctx::new(client.clone(), settings)
            .with_prefix(Arc::new(move || prefix))
            .with_metrics(metrics.clone()),
    );
    let configs: Api<NetworkAddonsConfig> = Api::all(client.clone());
    let only_cluster = watcher::Config::default().fields(&format!("metadata.name={CONFIG_NAME}"));
    let managed = watcher::Config::default().labels(&labels::managed_selector());
    let mut controller = Controller::new(configs, only_cluster)
        .watches(
            Api::<DaemonSet>::namespaced(client.clone(), &namespace),
            managed.clone(),
            |_| Some(ObjectRef::new(CONFIG_NAME)),
        )
        .watches(
            Api::<Deployment>::namespaced(client.clone(), &namespace),
            managed,
            |_| Some(ObjectRef::new(CONFIG_NAME)),
        );
    // cert-manager or the Prometheus operator installed (or removed) later is acted upon at
    // once: one watch per CRD, by name (a field selector takes one name).
    for crd in OFFER_CRDS {
        controller = controller.watches(
            Api::<CustomResourceDefinition>::all(client.clone()),
            watcher::Config::default().fields(&format!("metadata.name={crd}")),
            |_| Some(ObjectRef::new(CONFIG_NAME)),
        );
    }
    controller
        .with_config(controller::Config::default().debounce(Duration::from_secs(1)))
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx)
        .for_each(|result| {
            let metrics = metrics.clone();
            async move {
                match result {
                    Ok(_) => {}
                    // a DaemonSet or Deployment changed while no NetworkAddonsConfig exists, or
                    // it was deleted
                    Err(controller::Error::ObjectNotFound(object)) => {
                        tracing::debug!(%object, "no NetworkAddonsConfig to reconcile");
                        metrics.reset();
                    }
                    Err(controller::Error::ReconcilerFailed(..)) => {} // logged by error_policy
                    Err(e) => tracing::warn!(error = %describe(&e), "controller"),
                }
            }
        })
        .await;
    tracing::info!("stopped");
    Ok(())
}

/// Marks the operator ready once NetworkAddonsConfigs can be listed (the API server answers,
/// the CRD is served and the operator may read it), retrying every 5 seconds; a reconcile marks
/// it ready too. A replica that is not leading is ready by this alone.
pub async fn mark_ready_when_readable(api: Api<NetworkAddonsConfig>, metrics: Arc<metrics::State>) {
    loop {
        match api.list_metadata(&ListParams::default().limit(1)).await {
            Ok(_) => {
                metrics.set_ready();
                return;
            }
            Err(e) => {
                tracing::warn!(error = %describe(&e), "cannot list NetworkAddonsConfigs yet");
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
        }
    }
}

async fn reconcile(nac: Arc<NetworkAddonsConfig>, ctx: Arc<Ctx>) -> Result<Action> {
    let result = reconcile_once(&ctx, &nac).await;
    ctx.metrics.count_reconcile(result.is_ok());
    if result.is_ok() {
        ctx.failures.store(0, Ordering::Relaxed);
    }
    result
}

fn error_policy(nac: Arc<NetworkAddonsConfig>, error: &Error, ctx: Arc<Ctx>) -> Action {
    let failures = ctx.failures.fetch_add(1, Ordering::Relaxed);
    let delay = backoff(failures);
    tracing::warn!(
        name = %nac.name_any(),
        retry_in_seconds = delay.as_secs(),
        error = ?error.to_string(),
        "reconcile failed"
    );
    Action::requeue(delay)
}

/// The delay before retrying after `failures` failed reconciles in a row: 5 s, doubling, at
/// most 5 minutes.
pub fn backoff(failures: u32) -> Duration {
    let delay = Duration::from_secs(5).saturating_mul(1 << failures.min(6));
    delay.min(Duration::from_secs(300))
}

/// One reconcile of `nac`; everything [`run`] does per event, callable from tests.
/// Returns the requeue action, or the error after reporting it in the status and as an event.
/// Everything it logs is in a `reconcile` span naming the object and the generation seen.
#[tracing::instrument(
    name = "reconcile",
    skip_all,
    fields(name = %nac.name_any(), generation = nac.meta().generation.unwrap_or_default())
)]
pub async fn reconcile_once(ctx: &Ctx, nac: &NetworkAddonsConfig) -> Result<Action> {
    if nac.name_any() != CONFIG_NAME {
        return Ok(Action::await_change());
    }
    if nac.meta().deletion_timestamp.is_some() {
        // Everything rendered is owned by it and goes with it.
        forget(ctx);
        return Ok(Action::await_change());
    }
    let now = (ctx.clock)();
    let Some(owner) = owner_reference(nac) else {
        return Err(Error::other(format!(
            "NetworkAddonsConfig {CONFIG_NAME} has no uid to own its objects"
        )));
    };
    ctx.ours.set_owner(&owner.uid);
    let desired = match desired_state(ctx, nac, &owner).await {
        Ok(desired) => desired,
        Err(failure) => return fail(ctx, nac, failure, now).await,
    };
    let converged = match converge(ctx, &desired).await {
        Ok(converged) => converged,
        Err(failure) => return fail(ctx, nac, failure, now).await,
    };
    tracing::debug!(
        applied = converged.applied,
        deleted = converged.deleted,
        "converged"
    );
    announce_applied(ctx, nac, &desired, now).await;
    let progressing = progress(&ctx.client, &desired.objects, &converged.workloads).await?;
    let found = Found::Rollouts {
        desired: &desired,
        progressing: &progressing,
    };
    publish(ctx, nac, found, now).await?;
    Ok(Action::requeue(RESYNC))
}

/// The NetworkAddonsConfig is going: nothing of it is deployed or tracked any more.
fn forget(ctx: &Ctx) {
    ctx.rollouts.clear();
    ctx.ours.clear();
    ctx.metrics.reset();
}

/// A Normal event when the applied spec is new or changed.
async fn announce_applied(ctx: &Ctx, nac: &NetworkAddonsConfig, desired: &Desired, now: Timestamp) {
    if desired.previous.as_ref() == Some(&desired.applied) {
        return;
    }
    let note = match desired.previous {
        None => "configuration applied for the first time",
        Some(_) => "configuration modified",
    };
    tracing::info!(note, "applied configuration recorded");
    ctx.events.normal(nac, events::MODIFIED, note, now).await;
}

/// Reports a failure: Degraded with its reason, a Warning event when Degraded was not already
/// True for this reason, and the error to retry on.
async fn fail(
    ctx: &Ctx,
    nac: &NetworkAddonsConfig,
    failure: Failure,
    now: Timestamp,
) -> Result<Action> {
    tracing::warn!(reason = %failure.reason, detail = ?failure.message, "configuration not applied");
    publish(ctx, nac, Found::Failure(&failure), now).await?;
    let Failure { reason, message } = failure;
    Err(Error::NotApplied {
        reason: reason.to_string(),
        message,
    })
}

#[cfg(test)]
mod tests;
