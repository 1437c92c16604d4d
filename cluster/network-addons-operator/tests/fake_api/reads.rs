//! GET of one object, and LIST filtered by label and field selectors (its items without their
//! type, as the API server lists them).

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::answers::not_found;
use super::request::Target;
use super::selectors::{field_selector_matches, selector_matches};
use super::store::State;

impl State {
    pub(super) fn list(&self, t: &Target, query: &BTreeMap<String, String>) -> (u16, Value) {
        let labels = query.get("labelSelector").cloned().unwrap_or_default();
        let fields = query.get("fieldSelector").cloned().unwrap_or_default();
        let items: Vec<Value> = self
            .objects
            .iter()
            .filter(|(k, _)| {
                k.group_version == t.group_version
                    && k.plural == t.plural
                    && t.namespace.as_ref().is_none_or(|ns| *ns == k.namespace)
            })
            .map(|(_, v)| v)
            .filter(|v| selector_matches(&labels, &v["metadata"]["labels"]))
            .filter(|v| field_selector_matches(&fields, v))
            .map(without_type)
            .collect();
        (
            200,
            json!({
                "apiVersion": t.group_version,
                "kind": "List",
                "metadata": {"resourceVersion": self.revision.to_string()},
                "items": items,
            }),
        )
    }

    pub(super) fn read(&self, t: &Target, name: &str) -> (u16, Value) {
        match self.objects.get(&t.key(name)) {
            Some(o) => (200, o.clone()),
            None => not_found(t, name),
        }
    }
}

/// A list's item as the API server returns it: without `apiVersion` and `kind`, which only
/// the list carries.
fn without_type(object: &Value) -> Value {
    let mut item = object.clone();
    if let Some(fields) = item.as_object_mut() {
        fields.remove("apiVersion");
        fields.remove("kind");
    }
    item
}
