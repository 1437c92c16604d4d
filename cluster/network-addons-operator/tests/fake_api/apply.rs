//! Server-side apply, modelled for a single field manager: the applied body replaces the
//! object (its status and system fields kept), after 1.20's schema and the immutable fields
//! have had their say.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::answers::{not_found, status};
use super::request::Target;
use super::store::State;
use super::writes::keep_status;
use crate::k8s_1_20;

impl State {
    pub(super) fn apply(
        &mut self,
        t: &Target,
        name: &str,
        query: &BTreeMap<String, String>,
        body: &Value,
    ) -> (u16, Value) {
        if query.get("fieldManager").is_none_or(String::is_empty) {
            return status(
                400,
                "BadRequest",
                "PATCH with apply requires a field manager".to_string(),
            );
        }
        if body["metadata"]["name"].as_str() != Some(name) {
            return status(
                400,
                "BadRequest",
                "the name of the object does not match the name on the URL".to_string(),
            );
        }
        if k8s_1_20::covers(body) {
            let problems = k8s_1_20::problems(body);
            if !problems.is_empty() {
                return status(
                    500,
                    "InternalError",
                    format!(
                        "failed to create typed patch object: {}",
                        problems.join("; ")
                    ),
                );
            }
        }
        let k = t.key(name);
        let old = self.objects.get(&k).cloned();
        match t.subresource.as_deref() {
            // the applier owns the whole status: it becomes the one applied
            Some("status") => {
                let Some(mut object) = old.clone() else {
                    return not_found(t, name);
                };
                object["status"] = body["status"].clone();
                let stored = self.stamp(old.as_ref(), object);
                self.objects.insert(k, stored.clone());
                return (200, stored);
            }
            Some(other) => return status(404, "NotFound", format!("no subresource {other}")),
            None => {}
        }
        let mut object = body.clone();
        if let Some(ns) = &t.namespace {
            object["metadata"]["namespace"] = json!(ns);
        }
        if let Some(refused) = old.as_ref().and_then(|o| immutable(t, name, o, &object)) {
            return refused;
        }
        match &old {
            Some(old) => keep_status(old, &mut object),
            None => {
                if let Some(m) = object.as_object_mut() {
                    m.remove("status");
                }
            }
        }
        object["metadata"]["managedFields"] =
            applied_managed_fields(old.as_ref(), &object, &query["fieldManager"]);
        let created = old.is_none();
        let stored = self.stamp(old.as_ref(), object);
        self.objects.insert(k, stored.clone());
        (if created { 201 } else { 200 }, stored)
    }
}

/// The managedFields after an apply by `manager`: the other managers' entries kept (this fake
/// does not track which fields each holds), the applier's own entry replaced.
fn applied_managed_fields(old: Option<&Value>, object: &Value, manager: &str) -> Value {
    let mut entries: Vec<Value> = old
        .and_then(|o| o["metadata"]["managedFields"].as_array())
        .into_iter()
        .flatten()
        .filter(|e| !(e["manager"] == manager && e["operation"] == "Apply"))
        .cloned()
        .collect();
    entries.push(json!({"manager": manager, "operation": "Apply",
                        "apiVersion": object["apiVersion"], "fieldsType": "FieldsV1",
                        "fieldsV1": {}}));
    Value::Array(entries)
}

/// The real server's 422 for a change of a field that cannot change: a workload's selector, a
/// binding's roleRef.
fn immutable(t: &Target, name: &str, old: &Value, new: &Value) -> Option<(u16, Value)> {
    let message = match t.plural.as_str() {
        "daemonsets" | "deployments" if old["spec"]["selector"] != new["spec"]["selector"] => {
            format!(
                "spec.selector: Invalid value: {}: field is immutable",
                new["spec"]["selector"]
            )
        }
        "clusterrolebindings" | "rolebindings" if old["roleRef"] != new["roleRef"] => {
            format!(
                "roleRef: Invalid value: {}: cannot change roleRef",
                new["roleRef"]
            )
        }
        _ => return None,
    };
    Some(status(
        422,
        "Invalid",
        format!("{} \"{name}\" is invalid: {message}", t.plural),
    ))
}
