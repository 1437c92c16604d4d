#![allow(clippy::unwrap_used)]
//! The example CRs of the upstream documentation (cluster/network-addons-operator/examples/) apply unchanged: the API
//! server would keep every field they set (none pruned by the CRD's structural schema), and the
//! operator reads every one of them (none dropped by deserialisation).

use std::path::{Path, PathBuf};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use network_addons_operator::crd::crd;
use network_addons_operator::spec::NetworkAddonsConfig;
use serde_json::Value;

fn examples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 10,
        "expected the documented examples in {}",
        dir.display()
    );
    files
}

/// Paths in `value` the schema does not declare (the API server would prune them) or declares
/// with another type.
fn undeclared(value: &Value, schema: &JSONSchemaProps, path: &str, out: &mut Vec<String>) {
    if schema.x_kubernetes_preserve_unknown_fields == Some(true) {
        return;
    }
    let ty = schema.type_.as_deref().unwrap_or("");
    let matches = match value {
        Value::Object(_) => ty == "object",
        Value::Array(_) => ty == "array",
        Value::String(_) => ty == "string" || schema.x_kubernetes_int_or_string == Some(true),
        Value::Bool(_) => ty == "boolean",
        Value::Number(n) => ty == "number" || (ty == "integer" && n.is_i64()),
        Value::Null => schema.nullable == Some(true),
    };
    if !matches {
        out.push(format!(
            "{path}: a {value} where the schema has type {ty:?}"
        ));
        return;
    }
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                let child = format!("{path}.{key}");
                if let Some(s) = schema.properties.as_ref().and_then(|p| p.get(key)) {
                    undeclared(v, s, &child, out);
                } else if let Some(JSONSchemaPropsOrBool::Schema(s)) = &schema.additional_properties
                {
                    undeclared(v, s, &child, out);
                } else {
                    out.push(format!("{child}: not in the schema, would be pruned"));
                }
            }
        }
        Value::Array(items) => {
            if let Some(JSONSchemaPropsOrArray::Schema(s)) = &schema.items {
                for (i, v) in items.iter().enumerate() {
                    undeclared(v, s, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

#[test]
fn no_field_of_the_documented_examples_is_pruned_by_the_crd() {
    let crd = crd();
    let mut problems = Vec::new();
    for version in &crd.spec.versions {
        let schema = version
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
            .unwrap();
        let spec_schema = schema.properties.as_ref().unwrap().get("spec").unwrap();
        for file in examples() {
            let doc: Value =
                serde_saphyr::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
            let mut out = Vec::new();
            undeclared(&doc["spec"], spec_schema, "spec", &mut out);
            for p in out {
                problems.push(format!("{} ({}): {p}", file.display(), version.name));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_operator_reads_every_field_of_the_documented_examples() {
    for file in examples() {
        let text = std::fs::read_to_string(&file).unwrap();
        let doc: Value = serde_saphyr::from_str(&text).unwrap();
        let cr: NetworkAddonsConfig =
            serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let back = serde_json::to_value(&cr.spec).unwrap();
        assert_eq!(
            back,
            without_empty_strings(&doc["spec"]),
            "{}: a field was dropped or changed",
            file.display()
        );
        assert_eq!(
            cr.metadata.name.as_deref(),
            Some("cluster"),
            "{}",
            file.display()
        );
    }
}

#[test]
fn the_crd_serves_v1_stored_and_v1alpha1_deprecated() {
    let crd = crd();
    assert_eq!(crd.spec.group, "networkaddonsoperator.network.kubevirt.io");
    assert_eq!(crd.spec.scope, "Cluster");
    let names: Vec<(&str, bool, bool)> = crd
        .spec
        .versions
        .iter()
        .map(|v| (v.name.as_str(), v.served, v.storage))
        .collect();
    assert_eq!(names, vec![("v1", true, true), ("v1alpha1", true, false)]);
    assert!(crd
        .spec
        .versions
        .iter()
        .all(|v| v.subresources.as_ref().is_some_and(|s| s.status.is_some())));
}

/// An empty string is the same as an absent field for the string fields of the components
/// (`kubeSecondaryDNS: {DOMAIN: ""}`); map values such as a nodeSelector's are kept.
fn without_empty_strings(spec: &Value) -> Value {
    let Value::Object(components) = spec else {
        return spec.clone();
    };
    Value::Object(
        components
            .iter()
            .map(|(name, v)| match v {
                Value::Object(fields) if name != "placementConfiguration" => (
                    name.clone(),
                    Value::Object(
                        fields
                            .iter()
                            .filter(|(_, f)| f.as_str() != Some(""))
                            .map(|(k, f)| (k.clone(), f.clone()))
                            .collect(),
                    ),
                ),
                _ => (name.clone(), v.clone()),
            })
            .collect(),
    )
}
