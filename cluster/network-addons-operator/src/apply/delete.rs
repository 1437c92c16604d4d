//! Deleting what a render no longer contains: listing what we or the upstream operator manage,
//! and deleting what a NetworkAddonsConfig owns and this render lacks, webhooks first.

use std::collections::{HashMap, HashSet};

use kube::api::{DeleteParams, DynamicObject, ListParams, TypeMeta};
use kube::Client;
use serde_json::Value;

use super::kinds::{RenderedKind, RENDERED_KINDS};
use super::{api, kind_of, read, Identity};
use crate::error::{describe, Result};
use crate::labels;
use crate::spec::GROUP;

/// Deleted before anything else: a webhook whose service is gone blocks every pod creation.
/// When one of them cannot be deleted, nothing else is, so the Deployment serving it stays.
const DELETE_FIRST: [&str; 1] = ["MutatingWebhookConfiguration"];

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

/// The selector of what [`list_managed`] lists: what carries the version label both we and the
/// upstream operator stamp on everything (its older releases took managed-by from the
/// NetworkAddonsConfig, so that label does not find all of theirs).
pub fn deletable_selector() -> String {
    labels::UPSTREAM_VERSION.to_string()
}

/// The objects managed by us or by the upstream operator (see [`deletable_selector`]) of every
/// deletable kind, in deletion order, and what could not be listed. Namespaced kinds are listed
/// in `namespace`; a kind the API server does not serve has none. Each object carries the
/// apiVersion and kind it was listed as.
#[derive(Debug, Default)]
pub struct Listing {
    pub objects: Vec<(&'static RenderedKind, DynamicObject)>,
    pub errors: Vec<String>,
}

fn identity(kind: &RenderedKind, object: &DynamicObject) -> Identity {
    Identity {
        api_version: kind.api_version.to_string(),
        kind: kind.kind.to_string(),
        namespace: object.metadata.namespace.clone().unwrap_or_default(),
        name: object.metadata.name.clone().unwrap_or_default(),
    }
}

impl Listing {
    /// The listed DaemonSets and Deployments.
    pub fn workloads(&self) -> HashMap<Identity, DynamicObject> {
        self.objects
            .iter()
            .filter(|(kind, _)| kind.api_version == "apps/v1")
            .map(|(kind, o)| (identity(kind, o), o.clone()))
            .collect()
    }

    /// Each listed object, by identity.
    pub fn by_identity(&self) -> HashMap<Identity, &DynamicObject> {
        self.objects
            .iter()
            .map(|(kind, o)| (identity(kind, o), o))
            .collect()
    }

    /// The listed objects a NetworkAddonsConfig owns and `keep` (the objects this render
    /// produced) lacks, in deletion order, with their kind: an object someone else labelled the
    /// same way is never touched.
    pub fn unrendered(&self, keep: &HashSet<Identity>) -> Vec<(&'static RenderedKind, Identity)> {
        self.objects
            .iter()
            .map(|(kind, o)| (*kind, identity(kind, o), o))
            .filter(|(_, id, o)| !keep.contains(id) && owned_by_config(o))
            .map(|(kind, id, _)| (kind, id))
            .collect()
    }
}

pub async fn list_managed(client: &Client, namespace: &str) -> Listing {
    let selector = deletable_selector();
    let mut out = Listing::default();
    for kind in deletion_order() {
        match api(client, kind, namespace)
            .list(&ListParams::default().labels(&selector))
            .await
        {
            Ok(list) => out
                .objects
                .extend(list.items.into_iter().map(|o| (kind, typed(kind, o)))),
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => out
                .errors
                .push(format!("list {}: {}", kind.plural, describe(&e))),
        }
    }
    out
}

/// `object`, listed as one of `kind`'s, with its type: the API server names it on the list, not
/// on each item, and whatever reads an item as a whole object (compares it with the render,
/// reads it as a DaemonSet) needs it there.
fn typed(kind: &RenderedKind, mut object: DynamicObject) -> DynamicObject {
    object.types = Some(TypeMeta {
        api_version: kind.api_version.to_string(),
        kind: kind.kind.to_string(),
    });
    object
}

/// Reads an object of a kind [`list_managed`] does not list (a Namespace, a CRD).
pub async fn read_live(client: &Client, object: &Value) -> Result<Option<DynamicObject>> {
    let id = Identity::of(object);
    let api = api(client, kind_of(object)?, &id.namespace);
    read(&api, &id).await
}

/// Deletes what [`Listing::unrendered`] finds. An object already gone counts as done; every
/// other failure is reported and the remaining objects are still tried, except after a failure
/// on a webhook configuration (listing or deleting): then nothing else is deleted (a webhook
/// left behind whose Deployment is gone fails every pod creation it intercepts).
pub async fn delete_unrendered(
    client: &Client,
    listing: &Listing,
    keep: &HashSet<Identity>,
    namespace: &str,
) -> Deleted {
    let found = listing.unrendered(keep);
    let webhook_plurals: Vec<&str> = RENDERED_KINDS
        .iter()
        .filter(|k| DELETE_FIRST.contains(&k.kind))
        .map(|k| k.plural)
        .collect();
    let webhook_failed = listing.errors.iter().any(|e| {
        webhook_plurals
            .iter()
            .any(|p| e.starts_with(&format!("list {p}:")))
    });
    let mut out = Deleted {
        errors: listing.errors.clone(),
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
mod tests;
