#![allow(clippy::unwrap_used)]
//! The CRD is one Kubernetes 1.20 (and every later version) accepts as it is, client-side
//! validation of `kubectl apply` included: apiextensions.k8s.io/v1 requires a structural schema
//! (every node typed, no `$ref`, no `anyOf`/`oneOf`/`allOf`/`not`, ...), and a `null` among an
//! `enum`'s values makes 1.20 refuse the whole CRD.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use network_addons_operator::cluster::ClusterInfo;
use network_addons_operator::crd::crd;
use network_addons_operator::defaults::fill_defaults;
use network_addons_operator::render::render;
use network_addons_operator::settings::Settings;
use network_addons_operator::spec::NetworkAddonsConfig;
use serde_json::Value;

/// Checks the schemas under a node's anyOf, oneOf, allOf and not.
fn value_validations(s: &JSONSchemaProps, path: &str, out: &mut Vec<String>) {
    for (name, list) in [
        ("anyOf", s.any_of.as_deref()),
        ("oneOf", s.one_of.as_deref()),
        ("allOf", s.all_of.as_deref()),
        ("not", s.not.as_deref().map(std::slice::from_ref)),
    ] {
        for (i, inner) in list.into_iter().flatten().enumerate() {
            value_validation_only(inner, &format!("{path}.{name}[{i}]"), out);
        }
    }
}

/// Inside anyOf/oneOf/allOf/not a structural schema only validates values: no type,
/// description, default, additionalProperties or nullable, at any depth (1.20's rules).
fn value_validation_only(s: &JSONSchemaProps, path: &str, out: &mut Vec<String>) {
    if s.type_.is_some()
        || s.description.is_some()
        || s.default.is_some()
        || s.additional_properties.is_some()
        || s.nullable.is_some()
    {
        out.push(format!(
            "{path}: type/description/default/additionalProperties/nullable inside a value validation"
        ));
    }
    value_validations(s, path, out);
    for (k, child) in s.properties.iter().flatten() {
        value_validation_only(child, &format!("{path}.{k}"), out);
    }
}

/// Everything a node of the schema does that Kubernetes 1.20 refuses, or that this CRD has no
/// use for and that older clients handle badly.
fn problems(s: &JSONSchemaProps, path: &str, out: &mut Vec<String>) {
    let mut bad = |what: &str| out.push(format!("{path}: {what}"));
    let int_or_string = s.x_kubernetes_int_or_string == Some(true);
    let preserve = s.x_kubernetes_preserve_unknown_fields == Some(true);
    let ty = s.type_.as_deref().unwrap_or("");
    if ty.is_empty() && !int_or_string && !preserve {
        bad("no type (a structural schema types every node)");
    }
    if int_or_string && !ty.is_empty() {
        bad("x-kubernetes-int-or-string with a type");
    }
    if ![
        "", "object", "array", "string", "integer", "number", "boolean",
    ]
    .contains(&ty)
    {
        bad(&format!("unknown type {ty:?}"));
    }
    if s.ref_path.is_some() {
        bad("$ref (not allowed in a CRD)");
    }
    value_validations(s, path, out);
    let mut bad = |what: &str| out.push(format!("{path}: {what}"));
    if s.definitions.is_some() || s.dependencies.is_some() || s.additional_items.is_some() {
        bad("definitions/dependencies/additionalItems (not allowed in a CRD)");
    }
    if s.pattern_properties.is_some() {
        bad("patternProperties");
    }
    if s.unique_items == Some(true) {
        bad("uniqueItems: true (not allowed in a CRD)");
    }
    if s.nullable.is_some() {
        bad("nullable (a null is pruned instead, as in upstream's CRD)");
    }
    if s.default.is_some() {
        bad("default (the operator fills defaults; a schema default needs more care on 1.20)");
    }
    if let Some(values) = &s.enum_ {
        for v in values {
            let fits = match &v.0 {
                Value::String(_) => ty == "string",
                Value::Number(_) => ty == "integer" || ty == "number",
                Value::Bool(_) => ty == "boolean",
                Value::Null => false,
                _ => false,
            };
            if !fits {
                bad(&format!("enum value {} does not fit type {ty:?}", v.0));
            }
        }
    }
    if s.properties.is_some() && s.additional_properties.is_some() {
        bad("both properties and additionalProperties");
    }
    if s.properties.is_some() && ty != "object" {
        bad("properties on a non-object");
    }
    match &s.items {
        Some(JSONSchemaPropsOrArray::Schemas(_)) => bad("items as a list of schemas"),
        Some(JSONSchemaPropsOrArray::Schema(_)) if ty != "array" => bad("items on a non-array"),
        None if ty == "array" => bad("an array without items"),
        _ => {}
    }
    if let Some(JSONSchemaPropsOrBool::Bool(false)) = &s.additional_properties {
        bad("additionalProperties: false (not allowed in a CRD)");
    }
    match s.x_kubernetes_list_type.as_deref() {
        None | Some("atomic") | Some("set") => {
            if s.x_kubernetes_list_map_keys.is_some() {
                bad("x-kubernetes-list-map-keys without x-kubernetes-list-type: map");
            }
        }
        Some("map") => {
            let item = match &s.items {
                Some(JSONSchemaPropsOrArray::Schema(i)) => Some(i.as_ref()),
                _ => None,
            };
            for key in s.x_kubernetes_list_map_keys.iter().flatten() {
                let required = item
                    .and_then(|i| i.required.as_ref())
                    .is_some_and(|r| r.contains(key));
                let has_default = item
                    .and_then(|i| i.properties.as_ref())
                    .and_then(|p| p.get(key))
                    .is_some_and(|k| k.default.is_some());
                if !required && !has_default {
                    bad(&format!(
                        "list-map key {key} neither required nor defaulted"
                    ));
                }
            }
            if s.x_kubernetes_list_map_keys
                .as_ref()
                .is_none_or(Vec::is_empty)
            {
                bad("x-kubernetes-list-type: map without keys");
            }
        }
        Some(other) => bad(&format!("x-kubernetes-list-type {other:?}")),
    }
    if let Some(t) = s.x_kubernetes_map_type.as_deref() {
        if t != "granular" && t != "atomic" {
            bad(&format!("x-kubernetes-map-type {t:?}"));
        }
    }
    for (name, child) in s.properties.iter().flatten() {
        problems(child, &format!("{path}.{name}"), out);
    }
    if let Some(JSONSchemaPropsOrArray::Schema(items)) = &s.items {
        problems(items, &format!("{path}[]"), out);
    }
    if let Some(JSONSchemaPropsOrBool::Schema(extra)) = &s.additional_properties {
        problems(extra, &format!("{path}{{}}"), out);
    }
}

#[test]
fn every_version_has_a_structural_schema_kubernetes_1_20_accepts() {
    let crd = crd();
    let mut out = Vec::new();
    for version in &crd.spec.versions {
        let root = version
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
            .unwrap();
        assert_eq!(root.type_.as_deref(), Some("object"));
        let top: Vec<&String> = root.properties.iter().flat_map(|p| p.keys()).collect();
        for key in &top {
            assert!(
                ["apiVersion", "kind", "metadata", "spec", "status"].contains(&key.as_str()),
                "{}: top-level property {key}",
                version.name
            );
        }
        problems(root, &version.name, &mut out);
    }
    assert!(out.is_empty(), "{}", out.join("\n"));
}

/// The CRDs the components install (nmstate's, multus's, the IPAM controller's), rendered for
/// the upstream README's full example plus nmstate.
fn rendered_crds() -> Vec<CustomResourceDefinition> {
    let mut cr: NetworkAddonsConfig = serde_saphyr::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/full.yaml"))
            .unwrap(),
    )
    .unwrap();
    cr.spec.nmstate = Some(Default::default());
    let applied = fill_defaults(&cr.spec, None, [0x4a, 0xbe]);
    render(
        &applied,
        &Settings::defaults(),
        &ClusterInfo::WITH_CERT_MANAGER,
    )
    .unwrap()
    .into_iter()
    .filter(|r| r.object["kind"] == "CustomResourceDefinition")
    .map(|r| serde_json::from_value(r.object).unwrap())
    .collect()
}

#[test]
fn every_rendered_crd_has_structural_schemas_kubernetes_1_20_accepts() {
    let crds = rendered_crds();
    assert!(crds.len() >= 5, "{}", crds.len());
    let mut out = Vec::new();
    for crd in &crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        assert_eq!(
            crd.spec.versions.iter().filter(|v| v.storage).count(),
            1,
            "{name}: one storage version"
        );
        for version in &crd.spec.versions {
            let root = version
                .schema
                .as_ref()
                .and_then(|s| s.open_api_v3_schema.as_ref())
                .unwrap();
            assert_eq!(root.type_.as_deref(), Some("object"), "{name}");
            problems(root, &format!("{name} {}", version.name), &mut out);
        }
    }
    assert!(out.is_empty(), "{}", out.join("\n"));
}

#[test]
fn no_enum_lists_null() {
    // the defect Kubernetes 1.20 reported as `spec.versions[1].name: Invalid value: ""`
    let text = serde_json::to_string(&crd()).unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    let mut nulls = Vec::new();
    fn walk(v: &Value, path: &str, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::Array(values)) = m.get("enum") {
                    if values.iter().any(Value::is_null) {
                        out.push(path.to_string());
                    }
                }
                for (k, c) in m {
                    walk(c, &format!("{path}.{k}"), out);
                }
            }
            Value::Array(items) => {
                for (i, c) in items.iter().enumerate() {
                    walk(c, &format!("{path}[{i}]"), out);
                }
            }
            _ => {}
        }
    }
    walk(&value, "", &mut nulls);
    assert!(nulls.is_empty(), "null in enum at {nulls:?}");
}

#[test]
fn versions_are_named_dns_labels_with_one_storage_version() {
    let crd = crd();
    let mut names = Vec::new();
    for v in &crd.spec.versions {
        let n = v.name.as_str();
        assert!(
            !n.is_empty()
                && n.len() <= 63
                && n.starts_with(|c: char| c.is_ascii_lowercase())
                && n.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
            "version name {n:?}"
        );
        assert!(!names.contains(&n), "{n} twice");
        names.push(n);
    }
    assert_eq!(crd.spec.versions.iter().filter(|v| v.storage).count(), 1);
    let schemas: Vec<_> = crd.spec.versions.iter().map(|v| &v.schema).collect();
    assert!(
        schemas.windows(2).all(|w| w[0] == w[1]),
        "one schema for every version (no conversion webhook)"
    );
}

#[test]
fn the_tls_profile_type_is_still_an_enum_of_the_four_profiles() {
    let crd = crd();
    let root = crd.spec.versions[0]
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .unwrap();
    let ty = ["spec", "tlsSecurityProfile", "type"]
        .iter()
        .fold(root, |s, k| s.properties.as_ref().unwrap().get(*k).unwrap());
    let values: Vec<&Value> = ty.enum_.iter().flatten().map(|v| &v.0).collect();
    assert_eq!(values, ["Old", "Intermediate", "Modern", "Custom"]);
}

/// The API server's check of a field's format agrees with the reconciler's: what the pattern
/// refuses the reconciler refuses too, and what the reconciler accepts the pattern lets in.
#[test]
fn the_admission_patterns_agree_with_the_reconcilers_parsers() {
    use net_types::parse_go_duration;
    use network_addons_operator::crd::{DURATION_PATTERN, MAC_PATTERN};
    let mac = regex::Regex::new(MAC_PATTERN).unwrap();
    for s in [
        "02:00:00:00:00:00",
        "02-AB-cd-00-00-ff",
        "this:aint:right",
        "02:00:00:00:00",
        "02:00-00:00:00:00",
        "0200.0000.0000",
        "02:00:00:00:00:00:00",
    ] {
        let parsed = s.parse::<net_types::MacAddr>().is_ok();
        assert_eq!(mac.is_match(s), parsed, "{s}");
    }
    assert!(mac.is_match(""));
    let duration = regex::Regex::new(DURATION_PATTERN).unwrap();
    for s in [
        "168h", "1h30m", "0.5s", "1.5h", ".5m", "0", "90µs", "10ns", "+1h", "-1h", "1", "h", "1d",
        "1h 30m", "1..5s",
    ] {
        let parsed = parse_go_duration(s).is_ok();
        assert_eq!(duration.is_match(s), parsed, "{s}");
    }
}

#[test]
fn the_pull_policy_and_cri_socket_are_enums_the_api_server_checks() {
    let crd = serde_json::to_value(network_addons_operator::crd::crd()).unwrap();
    let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        ["properties"];
    assert_eq!(
        spec["imagePullPolicy"]["enum"],
        serde_json::json!(["Always", "Never", "IfNotPresent"])
    );
    assert_eq!(
        spec["multusDynamicNetworks"]["properties"]["hostCRISocketPath"]["enum"][0],
        ""
    );
    assert!(spec["kubeMacPool"]["properties"]["rangeStart"]["pattern"].is_string());
}
