//! The controller: one reconcile of the NetworkAddonsConfig named `cluster`.
//!
//! 1. validate the spec; 2. fill defaults from the previously applied spec (ConfigMap
//!    [`APPLIED_CONFIGMAP`], key `applied`, the upstream operator's name, so a cluster moving over
//!    keeps its MAC range and intervals) and refuse unsafe changes; 3. render and apply every
//!    object in order, adopting those another manager created; 4. delete the managed objects
//!    (ours, or the upstream operator's) this render lacks; 5. only then record the applied
//!    spec, so a failed deletion is retried from an accurate previous spec; 6. report conditions
//!    from the rendered DaemonSets and Deployments; 7. record events.
//!
//! A failure to validate, read the previous spec, render, apply or delete is reported as
//! Degraded with its reason (and a Warning event when that is news), and the reconcile is
//! retried with a growing delay. A failure to read the DaemonSets' and Deployments' progress or
//! to write the status itself (or a NetworkAddonsConfig without a uid, which no API server
//! serves) leaves the status as it was: it is logged and retried the same way. Otherwise the
//! object is reconciled again every minute, which also undoes changes made behind the
//! operator's back, and whenever one of its DaemonSets or Deployments changes.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use k8s_openapi::jiff::Timestamp;
use kube::api::{ListParams, Patch, PatchParams};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};
use serde_json::{json, Value};

use crate::apply::{self, Applied, Identity, FIELD_MANAGER};
use crate::cluster::ClusterInfo;
use crate::defaults::{check_change_safe, fill_defaults, random_prefix};
use crate::error::{describe, Error, Result};
use crate::events::{self, Events};
use crate::labels;
use crate::metrics;
use crate::render::common::relationship_labels;
use crate::render::render;
use crate::settings::Settings;
use crate::spec::{NetworkAddonsConfig, NetworkAddonsConfigSpec, CONFIG_NAME};
use crate::status::{self, Absent, ComponentHealth, Health, Report, Rollout, RolloutTracker};
use crate::validate;

/// The record of the last applied spec (defaults filled), upstream's name and key.
pub const APPLIED_CONFIGMAP: &str = "cluster-networks-addons-operator-applied-cluster";
pub const APPLIED_KEY: &str = "applied";

/// Reconciled this often even when nothing changed: undoes drift.
pub const RESYNC: Duration = Duration::from_secs(60);

/// The current time; tests move it.
pub type Clock = Arc<dyn Fn() -> Timestamp + Send + Sync>;
/// Two random bytes for a new MAC range; tests fix them.
pub type PrefixSource = Arc<dyn Fn() -> [u8; 2] + Send + Sync>;

/// What every reconcile shares.
pub struct Ctx {
    pub client: Client,
    pub settings: Settings,
    pub clock: Clock,
    pub prefix: PrefixSource,
    /// When each progressing DaemonSet or Deployment last changed.
    pub rollouts: RolloutTracker,
    /// The objects applied so far, known to be ours.
    pub ours: apply::Ours,
    pub events: Events,
    /// What the probes and `/metrics` report.
    pub metrics: Arc<metrics::State>,
    failures: AtomicU32,
}

impl Ctx {
    /// The real clock and the kernel's randomness.
    pub fn new(client: Client, settings: Settings) -> Ctx {
        Ctx {
            events: Events::new(client.clone(), &settings.pod_name),
            metrics: Arc::default(),
            client,
            settings,
            clock: Arc::new(Timestamp::now),
            prefix: Arc::new(random_prefix),
            rollouts: RolloutTracker::default(),
            ours: apply::Ours::default(),
            failures: AtomicU32::new(0),
        }
    }

    pub fn with_clock(mut self, clock: Clock) -> Ctx {
        self.clock = clock;
        self
    }

    pub fn with_prefix(mut self, prefix: PrefixSource) -> Ctx {
        self.prefix = prefix;
        self
    }

    pub fn with_metrics(mut self, metrics: Arc<metrics::State>) -> Ctx {
        self.metrics = metrics;
        self
    }
}

/// Runs the controller until SIGTERM or Ctrl-C: the NetworkAddonsConfig named `cluster`, and
/// the DaemonSets and Deployments carrying the managed-by label in the operand namespace
/// (each change reconciles `cluster`). `metrics` is what the probes and `/metrics` report.
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
    let ctx = Arc::new(Ctx::new(client.clone(), settings).with_metrics(metrics.clone()));
    let configs: Api<NetworkAddonsConfig> = Api::all(client.clone());
    tokio::spawn(mark_ready_when_readable(configs.clone(), metrics.clone()));
    let only_cluster = watcher::Config::default().fields(&format!("metadata.name={CONFIG_NAME}"));
    let managed = watcher::Config::default().labels(&labels::managed_selector());
    Controller::new(configs, only_cluster)
        .watches(
            Api::<DaemonSet>::namespaced(client.clone(), &namespace),
            managed.clone(),
            |_| Some(ObjectRef::new(CONFIG_NAME)),
        )
        .watches(
            Api::<Deployment>::namespaced(client, &namespace),
            managed,
            |_| Some(ObjectRef::new(CONFIG_NAME)),
        )
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
/// it ready too.
async fn mark_ready_when_readable(api: Api<NetworkAddonsConfig>, metrics: Arc<metrics::State>) {
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
        ctx.rollouts.clear();
        ctx.metrics.reset();
        return Ok(Action::await_change());
    }
    let now = (ctx.clock)();

    let errors = validate::validate(&nac.spec);
    if !errors.is_empty() {
        return fail(
            ctx,
            nac,
            "FailedToValidate",
            validate::message(&errors),
            now,
        )
        .await;
    }

    let previous = match read_applied(ctx).await {
        Ok(p) => p,
        Err(e) => {
            return fail(
                ctx,
                nac,
                "FailedToGetPreviousConfigSpec",
                e.to_string(),
                now,
            )
            .await
        }
    };
    let applied = fill_defaults(&nac.spec, previous.as_ref(), (ctx.prefix)());
    if let Some(prev) = &previous {
        let unsafe_changes = check_change_safe(prev, &applied);
        if !unsafe_changes.is_empty() {
            let message = format!(
                "not applying an unsafe change:\n{}",
                unsafe_changes.join("\n")
            );
            return fail(ctx, nac, "UnsafeChange", message, now).await;
        }
    }

    let Some(owner) = owner_reference(nac) else {
        return Err(Error::other(format!(
            "NetworkAddonsConfig {CONFIG_NAME} has no uid to own its objects"
        )));
    };
    ctx.ours.set_owner(&owner.uid);
    let cluster = match ClusterInfo::detect(&ctx.client, &ctx.settings.namespace).await {
        Ok(c) => c,
        Err(e) => return fail(ctx, nac, "FailedToRender", e.to_string(), now).await,
    };
    let record = applied_configmap(&applied, &ctx.settings, &owner)?;
    let objects = match render(&applied, &ctx.settings, &cluster)
        .map(|mut r| {
            relationship_labels(&mut r, nac.labels());
            r
        })
        .and_then(|r| prepare(r.into_iter().map(|r| r.object), &ctx.settings, Some(&owner)))
    {
        // The record is written last, by itself, whatever the render says about it.
        Ok(objects) => objects
            .into_iter()
            .filter(|o| Identity::of(o) != Identity::of(&record))
            .collect::<Vec<_>>(),
        Err(e) => return fail(ctx, nac, "FailedToRender", e.to_string(), now).await,
    };

    for object in &objects {
        match apply::apply(&ctx.client, object, &ctx.ours).await {
            Ok(Applied::Recreated) => {
                tracing::info!(object = %Identity::of(object), "re-created (an immutable field changed)");
            }
            Ok(Applied::Adopted) => {
                tracing::info!(object = %Identity::of(object), "re-created as ours (another manager had created it)");
            }
            Ok(Applied::Created) => {
                tracing::info!(object = %Identity::of(object), "created (create-only)");
            }
            Ok(Applied::Applied | Applied::Kept) => {
                tracing::debug!(object = %Identity::of(object), "applied");
            }
            Err(e) => return fail(ctx, nac, "FailedToApply", e.to_string(), now).await,
        }
    }

    let mut keep: HashSet<Identity> = objects.iter().map(Identity::of).collect();
    keep.insert(Identity::of(&record));
    ctx.ours.retain(&keep);
    let deleted = apply::delete_unrendered(&ctx.client, &keep, &ctx.settings.namespace).await;
    for id in &deleted.deleted {
        tracing::info!(object = %id, "deleted (no longer rendered)");
    }
    if !deleted.errors.is_empty() {
        let message = deleted.errors.join("\n");
        return fail(ctx, nac, "FailedToDeleteObjects", message, now).await;
    }

    if let Err(e) = write_applied(ctx, &record).await {
        return fail(ctx, nac, "FailedToApply", e.to_string(), now).await;
    }
    if previous.as_ref() != Some(&applied) {
        let note = match previous {
            None => "configuration applied for the first time",
            Some(_) => "configuration modified",
        };
        tracing::info!(note, "applied configuration recorded");
        ctx.events.normal(nac, events::MODIFIED, note, now).await;
    }
    ctx.metrics
        .set_kubemacpool_deployed(applied.kube_mac_pool.is_some());

    let progressing = progress(ctx, &objects).await?;
    // A rollout waiting for an image that cannot be pulled, or for nodes that are down, is not
    // hung: the status names the image or the nodes, and it goes on as soon as the image can be
    // had (a mirror, a registry back up) or the nodes return, however long that takes.
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
            progressing: lines.clone(),
            hung: hung.clone(),
        }
    };
    let report = Report {
        health: health.clone(),
        generation: nac.meta().generation,
        version: ctx.settings.operator_version.clone(),
        containers: Some(status::containers(&objects)),
        not_deployed: Some(applied.not_deployed(&cluster)),
        components: Some(component_health(&applied, &cluster, &progressing)),
        now,
    };
    let written = status::write(&ctx.client, CONFIG_NAME, |old| {
        status::next_status(old, &report)
    })
    .await?;
    ctx.metrics
        .set_cr_ready(status::is_true(&written.after, status::AVAILABLE));

    match health {
        Health::Available => {
            if !status::is_true(&written.before, status::AVAILABLE) {
                tracing::info!("available");
                ctx.events
                    .normal(nac, events::AVAILABLE, "all components are available", now)
                    .await;
            }
        }
        Health::Deploying { .. } => {
            if !status::is_true(&written.before, status::PROGRESSING) {
                tracing::info!(objects = lines.len(), "progressing");
                ctx.events
                    .normal(nac, events::PROGRESSING, &lines.join("\n"), now)
                    .await;
            }
            if !hung.is_empty() && status::degraded_anew(&written.before, "RolloutHung") {
                tracing::warn!(objects = ?hung, "a rollout is not making progress");
                ctx.events
                    .failed(nac, "RolloutHung", &hung.join("\n"), now)
                    .await;
            }
        }
        Health::Failing { .. } => {}
    }
    Ok(Action::requeue(RESYNC))
}

/// The controlling owner reference every rendered object gets: garbage collection deletes
/// them with the NetworkAddonsConfig, and foreground deletion of it waits for them.
pub fn owner_reference(nac: &NetworkAddonsConfig) -> Option<OwnerReference> {
    let mut owner = nac.controller_owner_ref(&())?;
    owner.block_owner_deletion = Some(true);
    Some(owner)
}

/// Reports a failure: Degraded with `reason`, a Warning event when Degraded was not already
/// True for this reason, and the error to retry on.
async fn fail(
    ctx: &Ctx,
    nac: &NetworkAddonsConfig,
    reason: &str,
    message: String,
    now: Timestamp,
) -> Result<Action> {
    tracing::warn!(%reason, detail = ?message, "configuration not applied");
    let report = Report {
        health: Health::Failing {
            reason: reason.to_string(),
            message: message.clone(),
        },
        generation: nac.meta().generation,
        version: ctx.settings.operator_version.clone(),
        containers: None,
        not_deployed: None,
        components: None,
        now,
    };
    ctx.metrics.set_cr_ready(false);
    let news = match status::write(&ctx.client, CONFIG_NAME, |old| {
        status::next_status(old, &report)
    })
    .await
    {
        Ok(written) => status::degraded_anew(&written.before, reason),
        Err(e) => {
            tracing::warn!(error = %e, "status not written");
            true
        }
    };
    if news {
        ctx.events.failed(nac, reason, &message, now).await;
    }
    Err(Error::NotApplied {
        reason: reason.to_string(),
        message,
    })
}

/// The previously applied spec, if any.
pub async fn read_applied(ctx: &Ctx) -> Result<Option<NetworkAddonsConfigSpec>> {
    let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ctx.settings.namespace);
    let what = format!(
        "read ConfigMap {}/{APPLIED_CONFIGMAP}",
        ctx.settings.namespace
    );
    let Some(cm) = api
        .get_opt(APPLIED_CONFIGMAP)
        .await
        .map_err(|e| Error::wrap(&what, e))?
    else {
        return Ok(None);
    };
    let Some(text) = cm.data.as_ref().and_then(|d| d.get(APPLIED_KEY)) else {
        return Ok(None);
    };
    serde_json::from_str(text)
        .map_err(|e| Error::wrap(format!("{what}: key {APPLIED_KEY} is not a spec"), e))
        .map(Some)
}

/// The ConfigMap recording `applied`, owned by the NetworkAddonsConfig.
pub fn applied_configmap(
    applied: &NetworkAddonsConfigSpec,
    settings: &Settings,
    owner: &OwnerReference,
) -> Result<Value> {
    let text =
        serde_json::to_string(applied).map_err(|e| Error::wrap("serialize the applied spec", e))?;
    Ok(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": APPLIED_CONFIGMAP,
            "namespace": settings.namespace,
            "labels": {
                labels::MANAGED_BY: labels::MANAGED_BY_VALUE,
                labels::PART_OF: labels::PART_OF_VALUE,
                labels::VERSION: settings.operator_version,
            },
            "ownerReferences": [owner],
        },
        "data": { APPLIED_KEY: text },
    }))
}

async fn write_applied(ctx: &Ctx, record: &Value) -> Result<()> {
    let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ctx.settings.namespace);
    api.patch(
        APPLIED_CONFIGMAP,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(record),
    )
    .await
    .map(|_| ())
    .map_err(|e| {
        Error::wrap(
            format!(
                "write ConfigMap {}/{APPLIED_CONFIGMAP}",
                ctx.settings.namespace
            ),
            e,
        )
    })
}

/// Rendered objects made ready to apply: namespaced ones without a namespace go to the operand
/// namespace, every one carries the managed-by label (the watches find objects by it) and, but for
/// a Namespace or a CRD, the NetworkAddonsConfig as its controlling owner.
pub fn prepare(
    objects: impl IntoIterator<Item = Value>,
    settings: &Settings,
    owner: Option<&OwnerReference>,
) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for mut object in objects {
        let kind = apply::kind_of(&object)?;
        if kind.namespaced && object["metadata"]["namespace"].as_str().is_none() {
            object["metadata"]["namespace"] = Value::String(settings.namespace.clone());
        }
        apply::ensure_label(&mut object, labels::MANAGED_BY, labels::MANAGED_BY_VALUE);
        if let Some(owner) = owner {
            apply::set_owner(&mut object, owner);
        }
        out.push(object);
    }
    Ok(out)
}

/// Each component `applied` turns on, with its objects still rolling out, and each it asks for
/// that is not deployed, with the reason.
fn component_health(
    applied: &NetworkAddonsConfigSpec,
    cluster: &ClusterInfo,
    progressing: &[Progress],
) -> Vec<ComponentHealth> {
    let mut out: Vec<ComponentHealth> = applied
        .deployed_components(cluster)
        .into_iter()
        .map(|c| ComponentHealth {
            key: c.key().to_string(),
            progressing: progressing
                .iter()
                .filter(|p| p.component == c.key())
                .map(|p| p.line.clone())
                .collect(),
            not_deployed: None,
        })
        .collect();
    out.extend(
        applied
            .withheld(cluster)
            .into_iter()
            .map(|w| ComponentHealth {
                key: w.component.key().to_string(),
                progressing: Vec::new(),
                not_deployed: Some(Absent {
                    reason: w.reason.to_string(),
                    message: w.message,
                }),
            }),
    );
    out
}

/// A rendered DaemonSet or Deployment still rolling out.
struct Progress {
    /// The spec key of its component.
    component: String,
    /// Which object: what the rollout tracker keys its clock on.
    object: Identity,
    /// Why, for the status: `DaemonSet "ns/name" is not available (...)`, and the images its
    /// pods cannot pull or the nodes down that its pods wait for.
    line: String,
    /// Changes whenever the object's status or generation does.
    fingerprint: String,
    /// Its pods wait for what no rollout fixes: images that cannot be pulled, nodes that are
    /// down.
    waiting: bool,
}

/// The rendered DaemonSets and Deployments still rolling out.
async fn progress(ctx: &Ctx, objects: &[Value]) -> Result<Vec<Progress>> {
    let mut out = Vec::new();
    // Read once, and only when a DaemonSet is short of pods.
    let mut nodes: Option<Vec<Node>> = None;
    for object in objects {
        let id = Identity::of(object);
        if id.api_version != "apps/v1" {
            continue;
        }
        let mut unavailable_pods = 0;
        let (line, fingerprint, selector) = match id.kind.as_str() {
            "DaemonSet" => {
                let api: Api<DaemonSet> = Api::namespaced(ctx.client.clone(), &id.namespace);
                match api
                    .get_opt(&id.name)
                    .await
                    .map_err(|e| Error::wrap(format!("read {id}"), e))?
                {
                    Some(ds) => match status::daemonset_progress(&ds) {
                        Some(line) => {
                            unavailable_pods = ds
                                .status
                                .as_ref()
                                .and_then(|s| s.number_unavailable)
                                .unwrap_or(0);
                            (
                                line,
                                fingerprint(ds.metadata.generation, &ds.status),
                                ds.spec.map(|s| s.selector),
                            )
                        }
                        None => continue,
                    },
                    None => (format!("{id} is missing"), String::new(), None),
                }
            }
            "Deployment" => {
                let api: Api<Deployment> = Api::namespaced(ctx.client.clone(), &id.namespace);
                match api
                    .get_opt(&id.name)
                    .await
                    .map_err(|e| Error::wrap(format!("read {id}"), e))?
                {
                    Some(d) => match status::deployment_progress(&d) {
                        Some(line) => (
                            line,
                            fingerprint(d.metadata.generation, &d.status),
                            d.spec.map(|s| s.selector),
                        ),
                        None => continue,
                    },
                    None => (format!("{id} is missing"), String::new(), None),
                }
            }
            _ => continue,
        };
        let mut problems = Vec::new();
        if let Some(labels) = selector.as_ref().and_then(match_labels) {
            let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &id.namespace);
            let list = pods
                .list(&ListParams::default().labels(&labels))
                .await
                .map_err(|e| Error::wrap(format!("list the pods of {id}"), e))?;
            problems = status::image_pull_problems(&list.items);
            if problems.is_empty() && unavailable_pods > 0 {
                if nodes.is_none() {
                    let api: Api<Node> = Api::all(ctx.client.clone());
                    let list = api
                        .list(&ListParams::default())
                        .await
                        .map_err(|e| Error::wrap("list the nodes".to_string(), e))?;
                    nodes = Some(list.items);
                }
                let down = status::nodes_down(&list.items, nodes.as_deref().unwrap_or_default());
                if down.len() >= unavailable_pods as usize {
                    problems = down;
                }
            }
        }
        out.push(Progress {
            component: object["metadata"]["labels"][labels::OWN_COMPONENT]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            object: id,
            line: if problems.is_empty() {
                line
            } else {
                format!("{line}: {}", problems.join(", "))
            },
            fingerprint,
            waiting: !problems.is_empty(),
        });
    }
    Ok(out)
}

/// `a=b,c=d` of a selector made of match labels only (the operator renders no other kind).
fn match_labels(selector: &LabelSelector) -> Option<String> {
    let labels = selector.match_labels.as_ref().filter(|l| !l.is_empty())?;
    Some(
        labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(","),
    )
}

fn fingerprint<S: serde::Serialize>(generation: Option<i64>, status: &S) -> String {
    json!({ "generation": generation, "status": status }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_five_minutes() {
        let delays: Vec<u64> = (0..9).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(delays, [5, 10, 20, 40, 80, 160, 300, 300, 300]);
    }
}
