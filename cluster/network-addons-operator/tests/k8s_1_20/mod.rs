//! What Kubernetes 1.20's API accepts from the operator, from its own OpenAPI document
//! (`api-1.20.json`, extracted by `extract.py` from the 1.20.2 source tree): which fields each
//! kind has, and the keys of every associative list, which 1.20's server-side apply requires
//! on every element (newer versions default some, e.g. a port's `protocol`; 1.20 refuses the
//! apply with "associative list with keys has an element that omits key field").

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
struct Api {
    roots: BTreeMap<String, String>,
    definitions: BTreeMap<String, Definition>,
}

#[derive(Deserialize)]
struct Definition {
    #[serde(default)]
    opaque: bool,
    #[serde(default)]
    fields: BTreeMap<String, Field>,
}

#[derive(Deserialize, Default)]
struct Field {
    #[serde(rename = "ref")]
    reference: Option<String>,
    /// Present (possibly `null` for scalars) for a list.
    #[serde(default, deserialize_with = "some")]
    items: Option<Option<String>>,
    map: Option<String>,
    keys: Option<Vec<String>>,
}

fn some<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

fn api() -> &'static Api {
    static API: OnceLock<Api> = OnceLock::new();
    API.get_or_init(|| {
        serde_json::from_str(include_str!("api-1.20.json")).expect("api-1.20.json parses")
    })
}

/// Whether the table has the kind of `object`.
pub fn covers(object: &Value) -> bool {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    api().roots.contains_key(&format!("{api_version} {kind}"))
}

/// Every field of `object` Kubernetes 1.20 does not know (server-side apply refuses them), and
/// every element of an associative list that lacks one of the list's keys, each as
/// `<kind name>: <path>: <what>`.
pub fn problems(object: &Value) -> Vec<String> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let mut out = Vec::new();
    match api().roots.get(&format!("{api_version} {kind}")) {
        Some(root) => walk(object, root, "", &mut out),
        None => out.push(format!(
            "{api_version} {kind} is not a kind this table covers"
        )),
    }
    out.into_iter()
        .map(|p| format!("{kind} {name}: {p}"))
        .collect()
}

/// Every empty string `object` sets in a field of a Kubernetes type (not in a map such as the
/// labels, where "" is a value): the API server does not store them, so an apply that sets one
/// changes the object every time it is applied.
pub fn empty_strings(object: &Value) -> Vec<String> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let mut out = Vec::new();
    if let Some(root) = api().roots.get(&format!("{api_version} {kind}")) {
        find_empty(object, root, "", &mut out);
    }
    out.into_iter()
        .map(|p| format!("{kind} {name}: {p} is \"\""))
        .collect()
}

fn find_empty(value: &Value, definition: &str, path: &str, out: &mut Vec<String>) {
    let Some(def) = api().definitions.get(definition) else {
        return;
    };
    let Value::Object(map) = value else {
        return;
    };
    if def.opaque {
        return;
    }
    for (key, v) in map {
        let child = format!("{path}.{key}");
        let Some(field) = def.fields.get(key) else {
            continue;
        };
        if v.as_str() == Some("") {
            out.push(child);
        } else if let Some(r) = &field.reference {
            find_empty(v, r, &child, out);
        } else if let Some(Some(d)) = &field.items {
            for (i, item) in v.as_array().into_iter().flatten().enumerate() {
                find_empty(item, d, &format!("{child}[{i}]"), out);
            }
        } else if let Some(d) = &field.map {
            for (k, item) in v.as_object().into_iter().flatten() {
                find_empty(item, d, &format!("{child}[{k}]"), out);
            }
        }
    }
}

fn walk(value: &Value, definition: &str, path: &str, out: &mut Vec<String>) {
    let Some(def) = api().definitions.get(definition) else {
        out.push(format!("{path}: no definition {definition}"));
        return;
    };
    if def.opaque {
        return;
    }
    let Value::Object(map) = value else {
        return;
    };
    for (key, v) in map {
        let child = format!("{path}.{key}");
        let Some(field) = def.fields.get(key) else {
            out.push(format!(
                "{child}: not a field of {definition} in Kubernetes 1.20"
            ));
            continue;
        };
        if v.is_null() {
            continue;
        }
        if let Some(r) = &field.reference {
            walk(v, r, &child, out);
        } else if let Some(items) = &field.items {
            for (i, item) in v.as_array().into_iter().flatten().enumerate() {
                let at = format!("{child}[{i}]");
                for k in field.keys.iter().flatten() {
                    if item.get(k).is_none_or(Value::is_null) {
                        out.push(format!(
                            "{at}: element of an associative list without its key field {k:?}"
                        ));
                    }
                }
                if let Some(d) = items {
                    walk(item, d, &at, out);
                }
            }
        } else if let Some(d) = &field.map {
            for (k, item) in v.as_object().into_iter().flatten() {
                walk(item, d, &format!("{child}[{k}]"), out);
            }
        }
    }
}
