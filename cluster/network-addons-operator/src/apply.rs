//! Applying rendered objects and deleting those a render no longer contains.
//!
//! Every object goes through server-side apply with one field manager and `force`, so the
//! operator owns every field it renders and drops those it stops rendering, while fields only
//! others set (a Service's clusterIP, an injected webhook caBundle) stay. Three rules on top:
//! - an object annotated [`labels::CREATE_ONLY`] is created when missing and never updated;
//! - an existing object without our managed-by label (created by the upstream operator, by
//!   `kubectl` or by a chart) is taken over in place ([`takeover`]): the fields its
//!   previous author set become ours, so the forced apply removes those we do not render. The
//!   object keeps its uid, a ServiceAccount its tokens, a Service its ClusterIP, a DaemonSet or
//!   Deployment its pods (rolled per its update strategy when the template changes). Objects
//!   already labelled ours are never taken over again, unless replaced by someone since;
//! - an apply refused because it changes an immutable field (a DaemonSet's or Deployment's
//!   selector, a binding's roleRef) deletes the object and creates it again: the only case in
//!   which an object of another manager is not kept.
//!
//! Neither rule ever deletes a Namespace or a CRD (the kinds [`RenderedKind::keep`] marks):
//! deleting them deletes everything in them. They are only applied; an immutable change to one
//! is reported as a failure.
//!
//! Whether an object is ours is read before its first apply in this process; [`Ours`] then keeps
//! the uid the apply returned, so later reconciles apply without reading, and a uid that changed
//! since (someone deleted the object and created another) is taken over like a foreign object.
//!
//! Deletion lists every deletable kind by the managed-by label, ours or the upstream
//! operator's, and removes what this render lacks, but only objects whose owner is a
//! NetworkAddonsConfig: an object someone else labelled the same way is never touched.
//!
//! This file holds the apply; `ours` keeps what this process last applied, `delete` lists what
//! we manage and deletes what a render lacks.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::{json, Value};

use crate::error::{Context, Error, Result};
use crate::labels;
use kinds::{RenderedKind, RENDERED_KINDS};
use takeover::take_over;

mod delete;
pub mod kinds;
mod ours;
pub mod settled;
pub mod takeover;

pub use delete::{delete_unrendered, deletion_order, list_managed, read_live, Listing};
pub use ours::{Live, Ours};

/// The field manager of every apply.
pub const FIELD_MANAGER: &str = "network-addons-operator";

/// Kinds that never get an owner reference: deleting the NetworkAddonsConfig must not take the
/// operand namespace (and whatever users put in it) or a CRD (and every object of it) along.
const NEVER_OWNED: [&str; 2] = ["Namespace", "CustomResourceDefinition"];

/// How often, and how many times, a deleted object is read until it is gone.
const GONE_POLL: Duration = Duration::from_millis(200);
const GONE_ATTEMPTS: u32 = 150;

/// Which object: apiVersion, kind, namespace (empty for cluster-scoped) and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Identity {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

impl Identity {
    pub fn of(object: &Value) -> Identity {
        let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
        Identity {
            api_version: s(&object["apiVersion"]),
            kind: s(&object["kind"]),
            namespace: s(&object["metadata"]["namespace"]),
            name: s(&object["metadata"]["name"]),
        }
    }
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.kind, self.name)
        } else {
            write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
        }
    }
}

/// The entry of [`RENDERED_KINDS`] for `object`'s apiVersion and kind.
pub fn kind_of(object: &Value) -> Result<&'static RenderedKind> {
    let id = Identity::of(object);
    RENDERED_KINDS
        .iter()
        .find(|k| k.api_version == id.api_version && k.kind == id.kind)
        .ok_or_else(|| {
            Error::other(format!(
                "{id}: {} {} is not a kind the renderer declares",
                id.api_version, id.kind
            ))
        })
}

pub fn api_resource(kind: &RenderedKind) -> ApiResource {
    let (group, version) = kind
        .api_version
        .rsplit_once('/')
        .unwrap_or(("", kind.api_version));
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(group, version, kind.kind),
        kind.plural,
    )
}

/// The API of `kind`'s objects, in `namespace` when the kind is namespaced.
pub fn api(client: &Client, kind: &RenderedKind, namespace: &str) -> Api<DynamicObject> {
    let resource = api_resource(kind);
    if kind.namespaced {
        Api::namespaced_with(client.clone(), namespace, &resource)
    } else {
        Api::all_with(client.clone(), &resource)
    }
}

/// Adds `owner` to the object's owner references, except on a Namespace or a CRD.
pub fn set_owner(object: &mut Value, owner: &OwnerReference) {
    let kind = object["kind"].as_str().unwrap_or_default();
    if NEVER_OWNED.contains(&kind) {
        return;
    }
    let Ok(owner) = serde_json::to_value(owner) else {
        return;
    };
    let Some(metadata) = object
        .as_object_mut()
        .map(|o| o.entry("metadata").or_insert_with(|| json!({})))
    else {
        return;
    };
    let Some(refs) = metadata
        .as_object_mut()
        .map(|m| m.entry("ownerReferences").or_insert_with(|| json!([])))
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    if !refs.iter().any(|r| r["uid"] == owner["uid"]) {
        refs.push(owner);
    }
}

/// Sets a label on the object unless it already has that label.
pub fn ensure_label(object: &mut Value, key: &str, value: &str) {
    let Some(metadata) = object
        .as_object_mut()
        .map(|o| o.entry("metadata").or_insert_with(|| json!({})))
    else {
        return;
    };
    if let Some(labels) = metadata
        .as_object_mut()
        .map(|m| m.entry("labels").or_insert_with(|| json!({})))
        .and_then(Value::as_object_mut)
    {
        labels
            .entry(key.to_string())
            .or_insert_with(|| Value::String(value.to_string()));
    }
}

pub fn is_create_only(object: &Value) -> bool {
    object["metadata"]["annotations"][labels::CREATE_ONLY].as_str() == Some("true")
}

/// What [`apply`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applied {
    /// Server-side applied (created or updated, possibly a no-op).
    Applied,
    /// Deleted and created again: the apply changed an immutable field (a selector, a roleRef).
    Recreated,
    /// Taken over in place: it did not carry our managed-by label, or someone replaced it since
    /// the last apply.
    TakenOver,
    /// A create-only object that did not exist, created.
    Created,
    /// A create-only object that exists, left as it is.
    Kept,
}

/// Whether the object carries our managed-by label.
pub fn is_ours(object: &DynamicObject) -> bool {
    object
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(labels::MANAGED_BY))
        .is_some_and(|v| v == labels::MANAGED_BY_VALUE)
}

/// Whether the API server refused an apply because it changes a field that cannot change.
fn is_immutable_change(s: &kube::core::Status) -> bool {
    s.code == 422
        && (s.message.contains("field is immutable") || s.message.contains("cannot change roleRef"))
}

/// Applies one rendered object (which must name its namespace when its kind is namespaced).
/// Returns what it did and the object as the server then had it.
pub async fn apply(
    client: &Client,
    object: &Value,
    ours: &Ours,
) -> Result<(Applied, DynamicObject)> {
    let id = Identity::of(object);
    let kind = kind_of(object)?;
    if kind.namespaced && id.namespace.is_empty() {
        return Err(Error::other(format!("{id}: no namespace")));
    }
    let api = api(client, kind, &id.namespace);
    if is_create_only(object) {
        if let Some(live) = read(&api, &id).await? {
            ours.remember(object, &live);
            return Ok((Applied::Kept, live));
        }
        let created = ssa(&api, &id, object).await?;
        ours.remember(object, &created);
        return Ok((Applied::Created, created));
    }
    // A Namespace or a CRD is only ever applied: the fields others set on it (a namespace's
    // pod-security labels, a CRD's stored versions) are not ours to remove.
    let known_uid = ours.uid(&id);
    if known_uid.is_none() && !kind.keep {
        if let Some(live) = read(&api, &id).await?.filter(|o| !is_ours(o)) {
            tracing::info!(object = %id, "made by another manager; taking it over in place");
            return take_over_and_apply(&api, &id, kind, &live, object, ours).await;
        }
    }
    let (applied, how) = apply_or_recreate(&api, &id, kind, object).await?;
    let replaced = known_uid.is_some_and(|uid| Some(&uid) != applied.metadata.uid.as_ref());
    if replaced && how == Applied::Applied && !kind.keep {
        tracing::info!(object = %id, "replaced by someone else since the last apply; taking it over in place");
        return take_over_and_apply(&api, &id, kind, &applied, object, ours).await;
    }
    ours.remember(object, &applied);
    Ok((how, applied))
}

/// Takes `live` over ([`take_over`]) and applies `object` on it: in place, unless an immutable
/// field makes it re-create the object.
async fn take_over_and_apply(
    api: &Api<DynamicObject>,
    id: &Identity,
    kind: &RenderedKind,
    live: &DynamicObject,
    object: &Value,
    ours: &Ours,
) -> Result<(Applied, DynamicObject)> {
    take_over(
        api,
        &live.metadata,
        object,
        FIELD_MANAGER,
        None,
        &id.to_string(),
    )
    .await?;
    let (applied, how) = apply_or_recreate(api, id, kind, object).await?;
    ours.remember(object, &applied);
    match how {
        Applied::Recreated => Ok((how, applied)),
        _ => Ok((Applied::TakenOver, applied)),
    }
}

async fn read(api: &Api<DynamicObject>, id: &Identity) -> Result<Option<DynamicObject>> {
    api.get_opt(&id.name)
        .await
        .with_context(|| format!("read {id}"))
}

/// Server-side applies `object`; when that is refused because it changes an immutable field,
/// deletes the object and creates it again (never a Namespace or a CRD: that would delete
/// everything in it).
async fn apply_or_recreate(
    api: &Api<DynamicObject>,
    id: &Identity,
    kind: &RenderedKind,
    object: &Value,
) -> Result<(DynamicObject, Applied)> {
    match ssa_raw(api, object).await {
        Ok(applied) => Ok((applied, Applied::Applied)),
        Err(kube::Error::Api(s)) if is_immutable_change(&s) && kind.keep => Err(Error::other(format!(
            "apply {id}: {}; not deleting it to create it again, as that would delete everything in it",
            s.message
        ))),
        Err(kube::Error::Api(s)) if is_immutable_change(&s) => {
            tracing::info!(
                object = %id,
                change = %s.message,
                "an immutable field changed; deleting and creating it again"
            );
            let created = recreate(api, id, object).await?;
            Ok((created, Applied::Recreated))
        }
        Err(e) => Err(Error::wrap(format!("apply {id}"), e)),
    }
}

/// Deletes the object, waits until it is gone (a deletion with finalizers keeps it until the
/// garbage collector is done, and an apply meanwhile would update the object on its way out),
/// and applies it again. Returns the created object.
async fn recreate(
    api: &Api<DynamicObject>,
    id: &Identity,
    object: &Value,
) -> Result<DynamicObject> {
    match api.delete(&id.name, &DeleteParams::background()).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        Err(e) => return Err(Error::wrap(format!("delete {id} to re-create it"), e)),
    }
    wait_gone(api, id).await?;
    ssa(api, id, object).await
}

async fn wait_gone(api: &Api<DynamicObject>, id: &Identity) -> Result<()> {
    for attempt in 0..GONE_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(GONE_POLL).await;
        }
        let existing = api
            .get_opt(&id.name)
            .await
            .with_context(|| format!("read {id} while it is deleted"))?;
        if existing.is_none() {
            return Ok(());
        }
    }
    Err(Error::other(format!(
        "{id}: still being deleted after {} s",
        (GONE_POLL * GONE_ATTEMPTS).as_secs()
    )))
}

async fn ssa(api: &Api<DynamicObject>, id: &Identity, object: &Value) -> Result<DynamicObject> {
    ssa_raw(api, object)
        .await
        .with_context(|| format!("apply {id}"))
}

async fn ssa_raw(
    api: &Api<DynamicObject>,
    object: &Value,
) -> std::result::Result<DynamicObject, kube::Error> {
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let params = PatchParams::apply(FIELD_MANAGER).force();
    api.patch(name, &params, &Patch::Apply(object)).await
}

#[cfg(test)]
mod tests;
