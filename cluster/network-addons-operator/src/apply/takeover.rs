//! Taking over an object another manager made, in place.
//!
//! A forced server-side apply takes over only the fields both managers set: the other manager's
//! extra env, args, volumes or labels would stay. Deleting and re-creating the object drops them,
//! but gives it a new uid: a re-created ServiceAccount invalidates every token its pods hold, a
//! re-created Service gets a new ClusterIP. So the object is kept, and its record of who set what
//! (`metadata.managedFields`) is rewritten: every field set by a manager that also set a field we
//! render (the object's previous author: the upstream operator, `kubectl apply`, a Helm chart)
//! becomes ours. The forced apply that follows then removes those of them we do not render, as it
//! would on an object we had always managed. Managers that set none of our fields (the token
//! controller's `secrets` on a ServiceAccount, a Deployment's revision annotation, another
//! controller's annotation) and status writers keep theirs.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry, ObjectMeta};
use kube::api::{Patch, PatchParams};
use kube::Api;
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

use crate::error::{Context, Result};

/// The operation of a server-side apply entry.
const APPLY: &str = "Apply";

/// Makes the fields of the previous authors of `rendered` (in `subresource`, or the object
/// itself when `None`) `manager`'s on `live` (see [`take_over_fields`]), by a merge patch of its
/// `managedFields` on the version read: a change since makes the API server refuse it, and the
/// reconcile is retried. `what` names the object in the error.
pub async fn take_over<K>(
    api: &Api<K>,
    live: &ObjectMeta,
    rendered: &Value,
    manager: &str,
    subresource: Option<&str>,
    what: &str,
) -> Result<()>
where
    K: Clone + DeserializeOwned + std::fmt::Debug,
{
    let managed = live.managed_fields.as_deref().unwrap_or_default();
    let Some(fields) = take_over_fields(managed, rendered, manager, subresource) else {
        return Ok(());
    };
    let patch = json!({"metadata": {
        "resourceVersion": live.resource_version,
        "managedFields": fields,
    }});
    let name = live.name.as_deref().unwrap_or_default();
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(drop)
        .with_context(|| format!("take over the fields of {what}"))
}

/// `managed` with the fields of every previous author of `rendered` (in `subresource`, or the
/// object itself when `None`) moved into one server-side apply entry of `manager`; `None` when
/// there is nothing to move. An author whose entry is for another API version keeps it: field
/// sets of two versions cannot be merged here (the forced apply still takes over the fields
/// both set).
pub fn take_over_fields(
    managed: &[ManagedFieldsEntry],
    rendered: &Value,
    manager: &str,
    subresource: Option<&str>,
) -> Option<Vec<ManagedFieldsEntry>> {
    let api_version = rendered["apiVersion"].as_str()?;
    let subresource = subresource.unwrap_or_default();
    let ours = |e: &ManagedFieldsEntry| {
        e.manager.as_deref() == Some(manager) && e.operation.as_deref() == Some(APPLY)
    };
    let author = |e: &ManagedFieldsEntry, fields: &Value| {
        !ours(e) && e.api_version.as_deref() == Some(api_version) && sets_any(fields, rendered)
    };
    let taken = |e: &ManagedFieldsEntry| {
        let (fields, _) = in_scope(e, subresource)?;
        (author(e, &fields) || (ours(e) && e.api_version.as_deref() == Some(api_version)))
            .then_some(())
    };
    if !managed
        .iter()
        .any(|e| in_scope(e, subresource).is_some_and(|(f, _)| author(e, &f)))
    {
        return None;
    }
    let mut fields = Value::Object(Map::new());
    let mut kept = Vec::new();
    for entry in managed {
        match (taken(entry), in_scope(entry, subresource)) {
            (Some(()), Some((taken_fields, rest))) => {
                union(&mut fields, &taken_fields);
                // What an old API server recorded with it outside the subresource stays its.
                if let Some(rest) = rest {
                    kept.push(ManagedFieldsEntry {
                        fields_v1: Some(FieldsV1(rest)),
                        ..entry.clone()
                    });
                }
            }
            _ => kept.push(entry.clone()),
        }
    }
    kept.push(ManagedFieldsEntry {
        api_version: Some(api_version.to_string()),
        fields_type: Some("FieldsV1".to_string()),
        fields_v1: Some(FieldsV1(fields)),
        manager: Some(manager.to_string()),
        operation: Some(APPLY.to_string()),
        subresource: (!subresource.is_empty()).then(|| subresource.to_string()),
        time: None,
    });
    Some(kept)
}

/// The fields of `entry` in `subresource` (`""`: the object itself), and those it holds outside
/// it; `None` when it holds none there. An API server older than 1.22 records a write of the
/// status in an entry with no subresource, beside what the same manager wrote of the object: of
/// such an entry, only `f:status` is in the status.
fn in_scope(entry: &ManagedFieldsEntry, subresource: &str) -> Option<(Value, Option<Value>)> {
    let fields = &entry.fields_v1.as_ref()?.0;
    match entry.subresource.as_deref().unwrap_or_default() {
        s if s == subresource => Some((fields.clone(), None)),
        "" if subresource == "status" => {
            let mut rest = fields.as_object()?.clone();
            let status = rest.remove("f:status")?;
            let rest = (!rest.is_empty()).then_some(Value::Object(rest));
            Some((json!({ "f:status": status }), rest))
        }
        _ => None,
    }
}

/// Whether the field set `fields` (managedFields' `fieldsV1`) holds a field `rendered` sets.
/// A field set with no member (`{}`) is a field set whole (a scalar, an atomic list or map): it
/// counts when we render that field. A map counts through its keys (`f:<name>`), a list through
/// its items: an item by its key fields (`k:{...}`) counts through its other fields, so a
/// manager that set one field of a list item we render (an injector's `caBundle` in a webhook)
/// is not taken for the list's author; a set's value (`v:...`) counts when we render it.
fn sets_any(fields: &Value, rendered: &Value) -> bool {
    let Some(fields) = fields.as_object() else {
        return false;
    };
    if fields.is_empty() {
        return true;
    }
    match rendered {
        Value::Object(rendered) => rendered.iter().any(|(key, value)| {
            fields
                .get(&format!("f:{key}"))
                .is_some_and(|set| sets_any(set, value))
        }),
        Value::Array(items) => fields.iter().any(|(key, set)| {
            if let Some(keys) = key.strip_prefix("k:") {
                let Ok(Value::Object(keys)) = serde_json::from_str::<Value>(keys) else {
                    return false;
                };
                items
                    .iter()
                    .find(|item| keys.iter().all(|(k, v)| item.get(k) == Some(v)))
                    .is_some_and(|item| sets_any(&without_keys(set, &keys), item))
            } else if let Some(value) = key.strip_prefix("v:") {
                serde_json::from_str::<Value>(value).is_ok_and(|v| items.contains(&v))
            } else {
                false
            }
        }),
        _ => true,
    }
}

/// The field set of a list item without its key fields, which every manager of the item holds.
fn without_keys(set: &Value, keys: &Map<String, Value>) -> Value {
    let mut set = set.clone();
    if let Some(set) = set.as_object_mut() {
        set.remove(".");
        for key in keys.keys() {
            set.remove(&format!("f:{key}"));
        }
    }
    // An item of which only its keys were set sets nothing else.
    if set.as_object().is_some_and(Map::is_empty) {
        return Value::Null;
    }
    set
}

/// Adds every field of `other` to the field set `into`.
fn union(into: &mut Value, other: &Value) {
    let (Some(into), Some(other)) = (into.as_object_mut(), other.as_object()) else {
        return;
    };
    for (key, value) in other {
        match into.get_mut(key) {
            Some(existing) => union(existing, value),
            None => {
                into.insert(key.clone(), value.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests;
