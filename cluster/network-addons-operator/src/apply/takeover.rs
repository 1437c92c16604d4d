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
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(manager: &str, operation: &str, fields: Value) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            api_version: Some("apps/v1".into()),
            fields_type: Some("FieldsV1".into()),
            fields_v1: Some(FieldsV1(fields)),
            manager: Some(manager.into()),
            operation: Some(operation.into()),
            subresource: None,
            time: None,
        }
    }

    fn rendered() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "x", "labels": {"app.kubernetes.io/managed-by": "network-addons-operator"}},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}
        })
    }

    fn managers(entries: &[ManagedFieldsEntry]) -> Vec<(String, String)> {
        entries
            .iter()
            .map(|e| {
                (
                    e.manager.clone().unwrap_or_default(),
                    e.operation.clone().unwrap_or_default(),
                )
            })
            .collect()
    }

    #[test]
    fn the_fields_of_the_manager_that_set_ours_become_ours_extra_ones_included() {
        let previous = entry(
            "cluster-network-addons-operator",
            "Update",
            json!({"f:metadata": {"f:labels": {"f:app.kubernetes.io/managed-by": {}}},
                   "f:spec": {"f:template": {"f:spec": {"f:containers": {
                       "k:{\"name\":\"c\"}": {"f:command": {}, "f:image": {}}}}}}}),
        );
        let out = take_over_fields(&[previous], &rendered(), "network-addons-operator", None)
            .expect("taken over");
        assert_eq!(
            managers(&out),
            [("network-addons-operator".into(), "Apply".into())]
        );
        let fields = &out[0].fields_v1.as_ref().expect("fields").0;
        assert!(fields.to_string().contains("f:command"), "{fields}");
    }

    #[test]
    fn a_manager_that_set_none_of_our_fields_keeps_its_own() {
        let token_controller = entry(
            "kube-controller-manager",
            "Update",
            json!({"f:secrets": {".": {}}}),
        );
        assert!(take_over_fields(
            &[token_controller],
            &rendered(),
            "network-addons-operator",
            None
        )
        .is_none());
    }

    #[test]
    fn status_writers_and_other_api_versions_keep_their_entries() {
        let mut status = entry(
            "kube-controller-manager",
            "Update",
            json!({"f:metadata": {"f:labels": {"f:app.kubernetes.io/managed-by": {}}}}),
        );
        status.subresource = Some("status".into());
        let mut old = entry(
            "kubectl",
            "Update",
            json!({"f:metadata": {"f:labels": {"f:app.kubernetes.io/managed-by": {}}}}),
        );
        old.api_version = Some("extensions/v1beta1".into());
        // The status writer and the other version's writer are the only ones that set a field
        // of ours: neither is taken over.
        assert!(take_over_fields(
            &[status.clone(), old.clone()],
            &rendered(),
            "network-addons-operator",
            None
        )
        .is_none());
        let author = entry(
            "kubectl-create",
            "Update",
            json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {}}}}}),
        );
        let out = take_over_fields(
            &[status, old, author],
            &rendered(),
            "network-addons-operator",
            None,
        )
        .expect("taken over");
        assert_eq!(
            managers(&out),
            [
                ("kube-controller-manager".into(), "Update".into()),
                ("kubectl".into(), "Update".into()),
                ("network-addons-operator".into(), "Apply".into()),
            ]
        );
    }

    #[test]
    fn our_earlier_apply_is_merged_not_duplicated() {
        let ours = entry(
            "network-addons-operator",
            "Apply",
            json!({"f:metadata": {"f:labels": {"f:a": {}}}}),
        );
        let author = entry(
            "helm",
            "Update",
            json!({"f:metadata": {"f:labels": {"f:app.kubernetes.io/managed-by": {}, "f:b": {}}}}),
        );
        let out = take_over_fields(
            &[ours, author],
            &rendered(),
            "network-addons-operator",
            None,
        )
        .expect("taken over");
        assert_eq!(out.len(), 1);
        assert_eq!(
            out[0].fields_v1.as_ref().expect("fields").0,
            json!({"f:metadata": {"f:labels": {"f:a": {}, "f:app.kubernetes.io/managed-by": {}, "f:b": {}}}})
        );
    }

    #[test]
    fn the_status_another_manager_wrote_becomes_ours_in_the_status_entry() {
        let mut status_writer = entry(
            "cluster-network-addons-operator",
            "Update",
            json!({"f:status": {"f:conditions": {}, "f:notDeployed": {}}}),
        );
        status_writer.subresource = Some("status".into());
        let spec_writer = entry("kubectl", "Update", json!({"f:spec": {"f:multus": {}}}));
        let body = json!({"apiVersion": "apps/v1", "status": {"conditions": []}});
        let out = take_over_fields(
            &[status_writer, spec_writer],
            &body,
            "network-addons-operator",
            Some("status"),
        )
        .expect("taken over");
        assert_eq!(
            managers(&out),
            [
                ("kubectl".into(), "Update".into()),
                ("network-addons-operator".into(), "Apply".into()),
            ]
        );
        assert_eq!(out[1].subresource.as_deref(), Some("status"));
        assert!(out[1]
            .fields_v1
            .as_ref()
            .expect("fields")
            .0
            .to_string()
            .contains("f:notDeployed"));
    }

    #[test]
    fn an_old_api_servers_status_entry_gives_up_only_its_status() {
        // Before 1.22 a write of the status is recorded with no subresource, in the same entry
        // as the manager's writes of the object.
        let writer = entry(
            "cluster-network-addons-operator",
            "Update",
            json!({"f:metadata": {"f:annotations": {"f:a": {}}},
                   "f:status": {"f:conditions": {}, "f:notDeployed": {}}}),
        );
        let body = json!({"apiVersion": "apps/v1", "status": {"conditions": []}});
        let out = take_over_fields(&[writer], &body, "network-addons-operator", Some("status"))
            .expect("taken over");
        assert_eq!(
            managers(&out),
            [
                ("cluster-network-addons-operator".into(), "Update".into()),
                ("network-addons-operator".into(), "Apply".into()),
            ]
        );
        assert_eq!(
            out[0].fields_v1.as_ref().expect("fields").0,
            json!({"f:metadata": {"f:annotations": {"f:a": {}}}})
        );
        assert_eq!(
            out[1].fields_v1.as_ref().expect("fields").0,
            json!({"f:status": {"f:conditions": {}, "f:notDeployed": {}}})
        );
    }

    /// A webhook configuration as we render it: one webhook, its service, no CA.
    fn webhook() -> Value {
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "w", "labels": {"app.kubernetes.io/managed-by": "network-addons-operator"}},
            "webhooks": [{"name": "mutatepods.example.io", "failurePolicy": "Fail",
                          "clientConfig": {"service": {"name": "s", "namespace": "n"}}}]
        })
    }

    fn webhook_entry(manager: &str, operation: &str, fields: Value) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            api_version: Some("admissionregistration.k8s.io/v1".into()),
            ..entry(manager, operation, fields)
        }
    }

    #[test]
    fn an_injector_that_set_one_field_of_a_list_item_we_render_keeps_it() {
        // By update: only the field changed is recorded.
        let by_update = webhook_entry(
            "cainjector",
            "Update",
            json!({"f:webhooks": {"k:{\"name\":\"mutatepods.example.io\"}":
                {"f:clientConfig": {"f:caBundle": {}}}}}),
        );
        // By server-side apply: the item's key field is the applier's too.
        let by_apply = webhook_entry(
            "cert-manager",
            "Apply",
            json!({"f:webhooks": {"k:{\"name\":\"mutatepods.example.io\"}":
                {".": {}, "f:name": {}, "f:clientConfig": {"f:caBundle": {}}}}}),
        );
        for injector in [by_update, by_apply] {
            assert!(
                take_over_fields(&[injector], &webhook(), "network-addons-operator", None)
                    .is_none()
            );
        }
    }

    #[test]
    fn the_author_of_a_list_item_we_render_is_taken_over() {
        let author = webhook_entry(
            "cluster-network-addons-operator",
            "Update",
            json!({"f:webhooks": {"k:{\"name\":\"mutatepods.example.io\"}":
                {".": {}, "f:name": {}, "f:failurePolicy": {}, "f:sideEffects": {}}}}),
        );
        assert!(take_over_fields(&[author], &webhook(), "network-addons-operator", None).is_some());
    }

    #[test]
    fn an_item_of_a_list_we_do_not_render_is_not_ours_to_take() {
        let other = webhook_entry(
            "someone",
            "Update",
            json!({"f:webhooks": {"k:{\"name\":\"other.example.io\"}":
                {".": {}, "f:name": {}, "f:failurePolicy": {}}}}),
        );
        assert!(take_over_fields(&[other], &webhook(), "network-addons-operator", None).is_none());
    }
}
