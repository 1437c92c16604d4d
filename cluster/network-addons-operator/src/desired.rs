//! What the cluster should hold for a NetworkAddonsConfig: its spec validated, defaults filled
//! from the previously applied spec (ConfigMap [`APPLIED_CONFIGMAP`], key `applied`, the upstream
//! operator's name, so a cluster moving over keeps its MAC range and intervals), unsafe changes
//! refused, and every object rendered, ready to apply.

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::{Api, Resource, ResourceExt};
use serde_json::{json, Value};

use crate::apply::{self, settled, Identity};
use crate::cluster::ClusterInfo;
use crate::context::Ctx;
use crate::defaults::{check_change_safe, fill_defaults};
use crate::error::{Context, Error, Result};
use crate::labels;
use crate::render::common::relationship_labels;
use crate::render::render;
use crate::settings::Settings;
use crate::spec::{NetworkAddonsConfig, NetworkAddonsConfigSpec};
use crate::status::Reason;
use crate::validate;

/// The record of the last applied spec (defaults filled), upstream's name and key.
pub const APPLIED_CONFIGMAP: &str = "cluster-networks-addons-operator-applied-cluster";
pub const APPLIED_KEY: &str = "applied";

/// Why a spec is not applied: the reason of the Degraded condition, and its message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub reason: Reason,
    pub message: String,
}

impl Failure {
    pub fn new(reason: Reason, message: impl Into<String>) -> Failure {
        Failure {
            reason,
            message: message.into(),
        }
    }

    /// An error as the failure `reason`, its text (which carries its causes) the message:
    /// `.map_err(Failure::because(Reason::FailedToApply))`.
    pub fn because(reason: Reason) -> impl FnOnce(Error) -> Failure {
        move |e| Failure::new(reason, e.to_string())
    }
}

/// The state a spec asks for.
pub struct Desired {
    /// The spec with its defaults filled, as it is applied and recorded.
    pub applied: NetworkAddonsConfigSpec,
    /// The spec applied before, if any.
    pub previous: Option<NetworkAddonsConfigSpec>,
    pub cluster: ClusterInfo,
    /// Every rendered object, in apply order, but for the record.
    pub objects: Vec<Value>,
    /// The ConfigMap recording `applied`, written after everything else.
    pub record: Value,
}

/// The state `nac` asks for, or why it cannot be applied.
pub async fn desired_state(
    ctx: &Ctx,
    nac: &NetworkAddonsConfig,
    owner: &OwnerReference,
) -> std::result::Result<Desired, Failure> {
    let (previous, applied) = applied_spec(
        &ctx.client,
        &ctx.settings.namespace,
        &nac.spec,
        (ctx.prefix)(),
    )
    .await?;
    let cluster = ClusterInfo::detect(&ctx.client, &ctx.settings.namespace)
        .await
        .map_err(Failure::because(Reason::FailedToRender))?;
    let (objects, record) = objects_for(nac, &applied, &ctx.settings, &cluster, Some(owner))
        .map_err(Failure::because(Reason::FailedToRender))?;
    let record = record.ok_or_else(|| Failure::new(Reason::FailedToRender, "no applied record"))?;
    Ok(Desired {
        applied,
        previous,
        cluster,
        objects,
        record,
    })
}

/// The spec previously applied (from `namespace`) and `spec` as it would be applied now:
/// validated, its defaults filled from the previous one (`prefix` makes a new MAC range), and
/// refused when it changes what cannot change in place.
pub async fn applied_spec(
    client: &kube::Client,
    namespace: &str,
    spec: &NetworkAddonsConfigSpec,
    prefix: [u8; 2],
) -> std::result::Result<(Option<NetworkAddonsConfigSpec>, NetworkAddonsConfigSpec), Failure> {
    let errors = validate::validate(spec);
    if !errors.is_empty() {
        return Err(Failure::new(
            Reason::FailedToValidate,
            validate::message(&errors),
        ));
    }
    let previous = read_applied(client, namespace)
        .await
        .map_err(Failure::because(Reason::FailedToGetPreviousConfigSpec))?;
    let applied = fill_defaults(spec, previous.as_ref(), prefix);
    if let Some(prev) = &previous {
        let unsafe_changes = check_change_safe(prev, &applied);
        if !unsafe_changes.is_empty() {
            return Err(Failure::new(
                Reason::UnsafeChange,
                format!(
                    "not applying an unsafe change:\n{}",
                    unsafe_changes.join("\n")
                ),
            ));
        }
    }
    Ok((previous, applied))
}

/// What `applied` (the spec of `nac`, defaults filled) renders to on `cluster`, every object
/// ready to apply, and, when there is an `owner` (the live config), the record of `applied`
/// (written last, by itself, whatever the render says about it).
pub fn objects_for(
    nac: &NetworkAddonsConfig,
    applied: &NetworkAddonsConfigSpec,
    settings: &Settings,
    cluster: &ClusterInfo,
    owner: Option<&OwnerReference>,
) -> Result<(Vec<Value>, Option<Value>)> {
    let mut record = owner
        .map(|owner| applied_configmap(applied, settings, owner))
        .transpose()?;
    let mut rendered = render(applied, settings, cluster)?;
    relationship_labels(&mut rendered, nac.labels());
    let objects: Vec<Value> = prepare(rendered.into_iter().map(|r| r.object), settings, owner)?
        .into_iter()
        .filter(|o| {
            record
                .as_ref()
                .is_none_or(|r| Identity::of(o) != Identity::of(r))
        })
        .collect();
    if let Some(record) = &mut record {
        record["metadata"]["annotations"] =
            json!({ settled::RENDERED: settled::fingerprint(&objects) });
    }
    Ok((objects, record))
}

/// The controlling owner reference every rendered object gets: garbage collection deletes
/// them with the NetworkAddonsConfig, and foreground deletion of it waits for them.
pub fn owner_reference(nac: &NetworkAddonsConfig) -> Option<OwnerReference> {
    let mut owner = nac.controller_owner_ref(&())?;
    owner.block_owner_deletion = Some(true);
    Some(owner)
}

/// The previously applied spec, if any, from `namespace`.
pub async fn read_applied(
    client: &kube::Client,
    namespace: &str,
) -> Result<Option<NetworkAddonsConfigSpec>> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let what = format!("read ConfigMap {namespace}/{APPLIED_CONFIGMAP}");
    let Some(cm) = api.get_opt(APPLIED_CONFIGMAP).await.context(&what)? else {
        return Ok(None);
    };
    let Some(text) = cm.data.as_ref().and_then(|d| d.get(APPLIED_KEY)) else {
        return Ok(None);
    };
    serde_json::from_str(text)
        .with_context(|| format!("{what}: key {APPLIED_KEY} is not a spec"))
        .map(Some)
}

/// The ConfigMap recording `applied`, owned by the NetworkAddonsConfig.
pub fn applied_configmap(
    applied: &NetworkAddonsConfigSpec,
    settings: &Settings,
    owner: &OwnerReference,
) -> Result<Value> {
    let text = serde_json::to_string(applied).context("serialize the applied spec")?;
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
                labels::UPSTREAM_VERSION: settings.operator_version,
            },
            "ownerReferences": [owner],
        },
        "data": { APPLIED_KEY: text },
    }))
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
