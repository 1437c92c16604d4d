//! Applying rendered objects and deleting those a render no longer contains.
//!
//! Every object goes through server-side apply with one field manager and `force`, so the
//! operator owns every field it renders and drops those it stops rendering, while fields set by
//! others (a Service's clusterIP, a webhook's caBundle) stay. Three rules on top:
//! - an object annotated [`labels::CREATE_ONLY`] is created when missing and never updated;
//! - an existing object without our managed-by label (created by the upstream operator, or by
//!   hand) is adopted by deleting it with `propagationPolicy: Orphan`, waiting until it is gone
//!   and applying it again: a forced apply would only take over the fields both set, leaving the
//!   other manager's extra env, args or volumes in place. Orphaning keeps a DaemonSet's or
//!   Deployment's pods running; the new object, with the same selector, adopts them and rolls
//!   them per its update strategy. Objects already labelled ours are never re-created for this;
//! - an apply refused because it changes an immutable field (a DaemonSet's selector, a binding's
//!   roleRef) deletes the object and creates it again.
//!
//! Neither rule ever deletes a Namespace or a CRD (the kinds [`RenderedKind::keep`] marks):
//! deleting them deletes everything in them. They are only applied; an immutable change to one
//! is reported as a failure.
//!
//! Whether an object is ours is read before its first apply in this process; [`Ours`] then keeps
//! the uid the apply returned, so later reconciles apply without reading, and a uid that changed
//! since (someone deleted the object and created another) is adopted like a foreign object.
//!
//! Deletion lists every deletable kind by the managed-by label, ours or the upstream
//! operator's, and removes what this render lacks, but only objects whose owner is a
//! NetworkAddonsConfig: an object someone else labelled the same way is never touched.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
};
use kube::{Api, Client};
use serde_json::{json, Value};

use crate::error::{describe, Error, Result};
use crate::labels;
use crate::render::{RenderedKind, RENDERED_KINDS};
use crate::spec::GROUP;

/// The field manager of every apply.
pub const FIELD_MANAGER: &str = "network-addons-operator";

/// Kinds that never get an owner reference: deleting the NetworkAddonsConfig must not take the
/// operand namespace (and whatever users put in it) or a CRD (and every object of it) along.
const NEVER_OWNED: [&str; 2] = ["Namespace", "CustomResourceDefinition"];

/// Deleted before anything else: a webhook whose service is gone blocks every pod creation.
/// When one of them cannot be deleted, nothing else is, so the Deployment serving it stays.
const DELETE_FIRST: [&str; 1] = ["MutatingWebhookConfiguration"];

/// The managed-by value of the upstream operator (cluster-network-addons-operator) on the
/// objects it creates. Those it left and this render lacks are deleted like ours, when a
/// NetworkAddonsConfig owns them.
pub const UPSTREAM_MANAGED_BY_VALUE: &str = "cnao-operator";

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
    /// Deleted, keeping its pods, and created again: it did not carry our managed-by label, or
    /// someone replaced it since the last apply.
    Adopted,
    /// A create-only object that did not exist, created.
    Created,
    /// A create-only object that exists, left as it is.
    Kept,
}

/// The uid each object had after this process last applied it, for the NetworkAddonsConfig
/// whose uid is `owner`.
#[derive(Debug, Default)]
pub struct Ours {
    state: Mutex<OursState>,
}

#[derive(Debug, Default)]
struct OursState {
    owner: String,
    uids: HashMap<Identity, String>,
}

impl Ours {
    fn lock(&self) -> std::sync::MutexGuard<'_, OursState> {
        match self.state.lock() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Forgets every object when the owner changed: a NetworkAddonsConfig deleted and created
    /// again had its objects garbage-collected.
    pub fn set_owner(&self, owner_uid: &str) {
        let mut state = self.lock();
        if state.owner != owner_uid {
            state.owner = owner_uid.to_string();
            state.uids.clear();
        }
    }

    /// Forgets the objects a render no longer contains: created again later, they are new.
    pub fn retain(&self, keep: &HashSet<Identity>) {
        self.lock().uids.retain(|id, _| keep.contains(id));
    }

    fn uid(&self, id: &Identity) -> Option<String> {
        self.lock().uids.get(id).cloned()
    }

    fn record(&self, id: &Identity, object: &DynamicObject) {
        let uid = object.metadata.uid.clone().unwrap_or_default();
        self.lock().uids.insert(id.clone(), uid);
    }
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
pub async fn apply(client: &Client, object: &Value, ours: &Ours) -> Result<Applied> {
    let id = Identity::of(object);
    let kind = kind_of(object)?;
    if kind.namespaced && id.namespace.is_empty() {
        return Err(Error::other(format!("{id}: no namespace")));
    }
    let api = api(client, kind, &id.namespace);
    if is_create_only(object) {
        let existing = api
            .get_opt(&id.name)
            .await
            .map_err(|e| Error::wrap(format!("read {id}"), e))?;
        if existing.is_some() {
            return Ok(Applied::Kept);
        }
        ssa(&api, &id, object).await?;
        return Ok(Applied::Created);
    }
    // A Namespace or a CRD is never deleted: that would delete everything in it.
    let known_uid = ours.uid(&id);
    if known_uid.is_none() && !kind.keep {
        let existing = api
            .get_opt(&id.name)
            .await
            .map_err(|e| Error::wrap(format!("read {id}"), e))?;
        if existing.is_some_and(|o| !is_ours(&o)) {
            tracing::info!(object = %id, "not created by this operator; deleting it, keeping its pods, and creating it again");
            let created = recreate(&api, &id, object, &DeleteParams::orphan()).await?;
            ours.record(&id, &created);
            return Ok(Applied::Adopted);
        }
    }
    let applied = match ssa_raw(&api, object).await {
        Ok(applied) => applied,
        Err(kube::Error::Api(s)) if is_immutable_change(&s) && kind.keep => {
            return Err(Error::other(format!(
                "apply {id}: {}; not deleting it to create it again, as that would delete everything in it",
                s.message
            )));
        }
        Err(kube::Error::Api(s)) if is_immutable_change(&s) => {
            tracing::info!(
                object = %id,
                change = %s.message,
                "an immutable field changed; deleting and creating it again"
            );
            let created = recreate(&api, &id, object, &DeleteParams::background()).await?;
            ours.record(&id, &created);
            return Ok(Applied::Recreated);
        }
        Err(e) => return Err(Error::wrap(format!("apply {id}"), e)),
    };
    let replaced = known_uid.is_some_and(|uid| Some(&uid) != applied.metadata.uid.as_ref());
    if replaced && !kind.keep {
        tracing::info!(object = %id, "deleted and created again by someone else since the last apply; deleting it, keeping its pods, and creating it again");
        let created = recreate(&api, &id, object, &DeleteParams::orphan()).await?;
        ours.record(&id, &created);
        return Ok(Applied::Adopted);
    }
    ours.record(&id, &applied);
    Ok(Applied::Applied)
}

/// Deletes the object with `params`, waits until it is gone (an orphaning or foreground
/// deletion keeps it until the garbage collector is done, and an apply meanwhile would update
/// the object on its way out), and applies it again. Returns the created object.
async fn recreate(
    api: &Api<DynamicObject>,
    id: &Identity,
    object: &Value,
    params: &DeleteParams,
) -> Result<DynamicObject> {
    match api.delete(&id.name, params).await {
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
            .map_err(|e| Error::wrap(format!("read {id} while it is deleted"), e))?;
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
        .map_err(|e| Error::wrap(format!("apply {id}"), e))
}

async fn ssa_raw(
    api: &Api<DynamicObject>,
    object: &Value,
) -> std::result::Result<DynamicObject, kube::Error> {
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let params = PatchParams::apply(FIELD_MANAGER).force();
    api.patch(name, &params, &Patch::Apply(object)).await
}

/// What [`delete_unrendered`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Deleted {
    pub deleted: Vec<Identity>,
    pub errors: Vec<String>,
}

/// Kinds to list for deletion, in deletion order: webhooks first, then the reverse of the
/// render's kind order (workloads before the RBAC and config they use). Kept kinds are left out.
pub fn deletion_order() -> Vec<&'static RenderedKind> {
    let mut kinds: Vec<&'static RenderedKind> =
        RENDERED_KINDS.iter().rev().filter(|k| !k.keep).collect();
    kinds.sort_by_key(|k| !DELETE_FIRST.contains(&k.kind));
    kinds
}

/// Whether a NetworkAddonsConfig owns the object.
pub fn owned_by_config(object: &DynamicObject) -> bool {
    object
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|r| r.kind == "NetworkAddonsConfig" && r.api_version.starts_with(GROUP))
}

/// The selector of what [`delete_unrendered`] considers: what carries the version label both
/// we and the upstream operator stamp on everything (its older releases took managed-by from
/// the NetworkAddonsConfig, so that label does not find all of theirs).
pub fn deletable_selector() -> String {
    labels::UPSTREAM_VERSION.to_string()
}

/// Every object managed by us or by the upstream operator (see [`deletable_selector`]), owned
/// by a NetworkAddonsConfig and not in `keep` (the objects this render produced), in deletion
/// order, with its kind; and what could not be listed. Namespaced kinds are listed in
/// `namespace`; a kind the API server does not serve has nothing to delete.
pub async fn unrendered(
    client: &Client,
    keep: &HashSet<Identity>,
    namespace: &str,
) -> (Vec<(&'static RenderedKind, Identity)>, Vec<String>) {
    let selector = deletable_selector();
    let (mut found, mut errors) = (Vec::new(), Vec::new());
    for kind in deletion_order() {
        let list = match api(client, kind, namespace)
            .list(&ListParams::default().labels(&selector))
            .await
        {
            Ok(list) => list,
            Err(kube::Error::Api(s)) if s.code == 404 => continue,
            Err(e) => {
                errors.push(format!("list {}: {}", kind.plural, describe(&e)));
                continue;
            }
        };
        for object in list.items {
            let id = Identity {
                api_version: kind.api_version.to_string(),
                kind: kind.kind.to_string(),
                namespace: object.metadata.namespace.clone().unwrap_or_default(),
                name: object.metadata.name.clone().unwrap_or_default(),
            };
            if !keep.contains(&id) && owned_by_config(&object) {
                found.push((kind, id));
            }
        }
    }
    (found, errors)
}

/// Deletes what [`unrendered`] finds. An object already gone counts as done; every other
/// failure is reported and the remaining objects are still tried, except after a failure on a
/// webhook configuration (listing or deleting): then nothing else is deleted (a webhook left
/// behind whose Deployment is gone fails every pod creation it intercepts).
pub async fn delete_unrendered(
    client: &Client,
    keep: &HashSet<Identity>,
    namespace: &str,
) -> Deleted {
    let (found, list_errors) = unrendered(client, keep, namespace).await;
    let webhook_plurals: Vec<&str> = RENDERED_KINDS
        .iter()
        .filter(|k| DELETE_FIRST.contains(&k.kind))
        .map(|k| k.plural)
        .collect();
    let webhook_failed = list_errors.iter().any(|e| {
        webhook_plurals
            .iter()
            .any(|p| e.starts_with(&format!("list {p}:")))
    });
    let mut out = Deleted {
        errors: list_errors,
        ..Deleted::default()
    };
    let (webhooks, rest): (Vec<_>, Vec<_>) = found
        .into_iter()
        .partition(|(kind, _)| DELETE_FIRST.contains(&kind.kind));
    let failures_before = out.errors.len();
    delete_each(client, namespace, webhooks, &mut out).await;
    if webhook_failed || out.errors.len() > failures_before {
        out.errors
            .push("nothing else deleted while a webhook configuration remains".to_string());
        return out;
    }
    delete_each(client, namespace, rest, &mut out).await;
    out
}

async fn delete_each(
    client: &Client,
    namespace: &str,
    objects: Vec<(&'static RenderedKind, Identity)>,
    out: &mut Deleted,
) {
    for (kind, id) in objects {
        match api(client, kind, namespace)
            .delete(&id.name, &DeleteParams::background())
            .await
        {
            Ok(_) => out.deleted.push(id),
            Err(kube::Error::Api(s)) if s.code == 404 => out.deleted.push(id),
            Err(e) => out.errors.push(format!("delete {id}: {}", describe(&e))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner() -> OwnerReference {
        OwnerReference {
            api_version: format!("{GROUP}/v1"),
            kind: "NetworkAddonsConfig".to_string(),
            name: "cluster".to_string(),
            uid: "u1".to_string(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    #[test]
    fn namespaces_and_crds_get_no_owner() {
        let mut ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}});
        set_owner(&mut ns, &owner());
        assert!(ns["metadata"].get("ownerReferences").is_none());
        let mut crd = json!({"apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition", "metadata": {"name": "x"}});
        set_owner(&mut crd, &owner());
        assert!(crd["metadata"].get("ownerReferences").is_none());
    }

    #[test]
    fn the_owner_is_added_once() {
        let mut ds =
            json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "x"}});
        set_owner(&mut ds, &owner());
        set_owner(&mut ds, &owner());
        let refs = ds["metadata"]["ownerReferences"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(refs.len(), 1);
        assert_eq!(refs[0]["controller"], true);
        assert_eq!(refs[0]["blockOwnerDeletion"], true);
        assert_eq!(refs[0]["kind"], "NetworkAddonsConfig");
    }

    #[test]
    fn a_label_already_set_is_not_replaced() {
        let mut o = json!({"metadata": {"labels": {"a": "mine"}}});
        ensure_label(&mut o, "a", "other");
        ensure_label(&mut o, "b", "new");
        assert_eq!(o["metadata"]["labels"], json!({"a": "mine", "b": "new"}));
    }

    #[test]
    fn webhooks_are_deleted_first_and_kept_kinds_never() {
        let order = deletion_order();
        let first_other = order
            .iter()
            .position(|k| !DELETE_FIRST.contains(&k.kind))
            .unwrap_or(order.len());
        assert!(order[first_other..]
            .iter()
            .all(|k| !DELETE_FIRST.contains(&k.kind)));
        assert!(order.iter().all(|k| !k.keep));
        for kind in DELETE_FIRST {
            assert!(order.iter().any(|k| k.kind == kind), "{kind} is rendered");
        }
    }

    #[test]
    fn api_resources_split_group_and_version() {
        let k = RenderedKind {
            api_version: "apps/v1",
            kind: "DaemonSet",
            plural: "daemonsets",
            namespaced: true,
            keep: false,
        };
        let r = api_resource(&k);
        assert_eq!((r.group.as_str(), r.version.as_str()), ("apps", "v1"));
        let core = RenderedKind {
            api_version: "v1",
            kind: "ConfigMap",
            plural: "configmaps",
            namespaced: true,
            keep: false,
        };
        let r = api_resource(&core);
        assert_eq!((r.group.as_str(), r.version.as_str()), ("", "v1"));
        assert_eq!(r.api_version, "v1");
    }
}
