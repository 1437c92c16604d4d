//! The CustomResourceDefinition: `v1` (stored) and `v1alpha1` (served, deprecated), one schema,
//! as upstream ships them.
//!
//! The schema generated from the Rust types is made one every API server since 1.16 accepts:
//! - no `null` among an `enum`'s values. schemars lists one for an `Option` of an enum;
//!   Kubernetes 1.20 cannot convert it (`json.Unmarshal` of an empty value fails), swallows the
//!   error halfway through converting the versions and then refuses the CRD with
//!   `spec.versions[1].name: Invalid value: ""`, and kubectl's client-side validation refuses
//!   it first (`unknown object type "nil"`);
//! - no `nullable`: like upstream's CRD, a field set to `null` is pruned by the API server, which
//!   reads the same as the field being absent (a component is off).
//!
//! The format of single fields is checked by the API server itself, so `kubectl apply` refuses
//! a MAC address, duration, pull policy or CRI socket the operator would refuse anyway (upstream
//! accepts the CR and turns Degraded later), and so do the rules about which fields go together
//! (both MAC range ends or none, all four intervals, `multusDynamicNetworks` with `multus`),
//! written as value validations (`required` inside `anyOf`/`not`, which structural schemas allow
//! since 1.16).
//!
//! Rules that compare values are CEL rules (`x-kubernetes-validations`), in the reconciler's
//! words: the MAC range's start below its end, the intervals' order, and an `imagePullPolicy`
//! that stays what it was (a transition rule; the reconciler also compares with the applied
//! spec, so it still refuses a policy removed and then set to another). API servers with CEL
//! rules and their `messageExpression` (1.27 on) refuse such a CR at apply. Kubernetes 1.20 has
//! no CEL: its kubectl refuses the unknown field unless the CRD is applied with
//! `--validate=false`, its API server then drops the rules, and the reconciler reports the same
//! in the Degraded condition.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
    ValidationRule,
};
use kube::CustomResourceExt;

use crate::defaults::pull_policy_change;
use crate::spec::NetworkAddonsConfig;
use crate::validate::{must_not_exceed, range_order, CRI_SOCKETS, INTERVAL_ORDER, PULL_POLICIES};

/// Six octets separated by `:` or by `-` (what the reconciler parses), or empty (a range left
/// to the defaults).
pub const MAC_PATTERN: &str =
    "^$|^([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}$|^([0-9A-Fa-f]{2}-){5}[0-9A-Fa-f]{2}$";

/// A Go duration that is not negative (`168h`, `1h30m`, `0.5s`), or empty.
pub const DURATION_PATTERN: &str =
    r"^$|^[+]?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$";

/// The longest MAC address [`MAC_PATTERN`] allows.
const MAC_MAX_LENGTH: i64 = 17;

/// Far more than any duration needs (Go writes its longest in 24 characters). The API server
/// estimates a CEL rule's cost from the longest strings it may see, and refuses rules over
/// strings of any length as too costly.
const DURATION_MAX_LENGTH: i64 = 64;

pub fn crd() -> CustomResourceDefinition {
    let mut crd = NetworkAddonsConfig::crd();
    crd.spec.scope = "Cluster".to_string();
    for version in &mut crd.spec.versions {
        if let Some(schema) = version
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
        {
            trim_placement_descriptions(schema);
            make_portable(schema);
            admission_checks(schema);
            cel_rules(schema);
        }
    }
    if let Some(v1) = crd.spec.versions.first().cloned() {
        let mut alpha = v1;
        alpha.name = "v1alpha1".to_string();
        alpha.storage = false;
        alpha.deprecated = Some(true);
        alpha.deprecation_warning = Some(
            "networkaddonsoperator.network.kubevirt.io/v1alpha1 is deprecated; use v1".to_string(),
        );
        crd.spec.versions.push(alpha);
    }
    crd
}

/// Removes what [`crd`]'s documentation lists from every node of the schema.
fn make_portable(schema: &mut JSONSchemaProps) {
    if let Some(values) = schema.enum_.as_mut() {
        values.retain(|v| !v.0.is_null());
    }
    schema.nullable = None;
    for child in schema.properties.iter_mut().flat_map(|m| m.values_mut()) {
        make_portable(child);
    }
    if let Some(JSONSchemaPropsOrArray::Schema(items)) = schema.items.as_mut() {
        make_portable(items);
    }
    if let Some(JSONSchemaPropsOrBool::Schema(extra)) = schema.additional_properties.as_mut() {
        make_portable(extra);
    }
}

/// The placement fields embed Kubernetes' Affinity and Toleration schemas, whose descriptions
/// alone make the CRD larger than the 256 KiB `kubectl apply` can record in its annotation.
/// `kubectl explain pod.spec.affinity` documents them already.
fn trim_placement_descriptions(root: &mut JSONSchemaProps) {
    let placement = root
        .properties
        .as_mut()
        .and_then(|p| p.get_mut("spec"))
        .and_then(|spec| spec.properties.as_mut())
        .and_then(|p| p.get_mut("placementConfiguration"));
    if let Some(p) = placement {
        for half in p.properties.iter_mut().flat_map(|m| m.values_mut()) {
            for field in half.properties.iter_mut().flat_map(|m| m.values_mut()) {
                strip_descriptions(field);
            }
        }
    }
}

fn strip_descriptions(schema: &mut JSONSchemaProps) {
    schema.description = None;
    for child in schema.properties.iter_mut().flat_map(|m| m.values_mut()) {
        strip_descriptions(child);
    }
    if let Some(JSONSchemaPropsOrArray::Schema(items)) = schema.items.as_mut() {
        strip_descriptions(items);
    }
    if let Some(JSONSchemaPropsOrBool::Schema(extra)) = schema.additional_properties.as_mut() {
        strip_descriptions(extra);
    }
}

/// The property at `path` (property names from the root), if the schema has it.
fn property<'a>(root: &'a mut JSONSchemaProps, path: &[&str]) -> Option<&'a mut JSONSchemaProps> {
    path.iter().try_fold(root, |node, name| {
        node.properties.as_mut().and_then(|p| p.get_mut(*name))
    })
}

/// The field formats the API server checks at admission (see the module's documentation).
fn admission_checks(root: &mut JSONSchemaProps) {
    let one_of = |values: &[&str]| {
        Some(
            values
                .iter()
                .map(|v| {
                    k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSON(
                        serde_json::Value::String(v.to_string()),
                    )
                })
                .collect(),
        )
    };
    if let Some(p) = property(root, &["spec", "imagePullPolicy"]) {
        p.enum_ = one_of(&PULL_POLICIES);
    }
    if let Some(p) = property(
        root,
        &["spec", "multusDynamicNetworks", "hostCRISocketPath"],
    ) {
        let mut allowed = vec![""];
        allowed.extend(CRI_SOCKETS);
        p.enum_ = one_of(&allowed);
    }
    for end in ["rangeStart", "rangeEnd"] {
        if let Some(p) = property(root, &["spec", "kubeMacPool", end]) {
            p.pattern = Some(MAC_PATTERN.to_string());
            p.max_length = Some(MAC_MAX_LENGTH);
        }
    }
    let intervals = [
        "caRotateInterval",
        "caOverlapInterval",
        "certRotateInterval",
        "certOverlapInterval",
    ];
    for interval in intervals {
        if let Some(p) = property(root, &["spec", "selfSignConfiguration", interval]) {
            p.pattern = Some(DURATION_PATTERN.to_string());
            p.max_length = Some(DURATION_MAX_LENGTH);
        }
    }
    if let Some(p) = property(root, &["spec", "selfSignConfiguration"]) {
        p.required = Some(intervals.iter().map(|s| s.to_string()).collect());
    }
    if let Some(p) = property(root, &["spec", "kubeMacPool"]) {
        p.any_of = Some(vec![
            requires(&["rangeStart", "rangeEnd"]),
            none_of(&["rangeStart", "rangeEnd"]),
        ]);
    }
    if let Some(p) = property(root, &["spec"]) {
        p.any_of = Some(vec![
            none_of(&["multusDynamicNetworks"]),
            requires(&["multus"]),
        ]);
    }
}

/// A value validation: every one of `fields` is set.
fn requires(fields: &[&str]) -> JSONSchemaProps {
    JSONSchemaProps {
        required: Some(fields.iter().map(|s| s.to_string()).collect()),
        ..JSONSchemaProps::default()
    }
}

/// A value validation: none of `fields` is set.
fn none_of(fields: &[&str]) -> JSONSchemaProps {
    JSONSchemaProps {
        not: Some(Box::new(JSONSchemaProps {
            any_of: Some(fields.iter().map(|f| requires(&[f])).collect()),
            ..JSONSchemaProps::default()
        })),
        ..JSONSchemaProps::default()
    }
}

/// The rules that compare values (see the module's documentation), on the objects that hold
/// the values compared.
fn cel_rules(root: &mut JSONSchemaProps) {
    if let Some(p) = property(root, &["spec", "kubeMacPool"]) {
        p.x_kubernetes_validations = Some(vec![ValidationRule {
            rule: mac_range_rule(),
            message_expression: Some(cel_message(&range_order(
                &cel_value("self.rangeStart"),
                &cel_value("self.rangeEnd"),
            ))),
            ..ValidationRule::default()
        }]);
    }
    if let Some(p) = property(root, &["spec", "selfSignConfiguration"]) {
        p.x_kubernetes_validations = Some(
            INTERVAL_ORDER
                .iter()
                .map(|(a, b)| ValidationRule {
                    rule: interval_order_rule(a, b),
                    message: Some(must_not_exceed(a, b)),
                    ..ValidationRule::default()
                })
                .collect(),
        );
    }
    if let Some(p) = property(root, &["spec", "imagePullPolicy"]) {
        // A rule on `oldSelf` of a field runs only when the old and the new object both set it.
        p.x_kubernetes_validations = Some(vec![ValidationRule {
            rule: "self == oldSelf".to_string(),
            message_expression: Some(cel_message(&pull_policy_change(
                &cel_value("oldSelf"),
                &cel_value("self"),
            ))),
            ..ValidationRule::default()
        }]);
    }
}

/// `rangeStart` below `rangeEnd` as 48-bit numbers, where an end whose first octet is odd (a
/// multicast address) stands for the last unicast address below it, as the reconciler reads it.
/// CEL cannot parse hex, but a MAC in lower case with `:` between its octets is a string of
/// fixed width whose order is the numbers' order, and the last unicast address below an end
/// whose first octet `xN` is odd is `x(N-1):ff:ff:ff:ff:ff`. Ends that are empty or malformed
/// are other rules'.
fn mac_range_rule() -> String {
    let canonical = |field: &str| format!("self.{field}.lowerAscii().replace('-', ':')");
    let (start, end) = (canonical("rangeStart"), canonical("rangeEnd"));
    let even_below =
        "{'1': '0', '3': '2', '5': '4', '7': '6', '9': '8', 'b': 'a', 'd': 'c', 'f': 'e'}";
    format!(
        "!has(self.rangeStart) || !has(self.rangeEnd) || self.rangeStart == '' || self.rangeEnd == '' || \
         !self.rangeStart.matches(r'{MAC_PATTERN}') || !self.rangeEnd.matches(r'{MAC_PATTERN}') || \
         {start} < ({end}.matches('^.[13579bdf]') \
         ? {end}.substring(0, 1) + {even_below}[{end}.substring(1, 2)] + ':ff:ff:ff:ff:ff' \
         : {end})"
    )
}

/// Interval `a` not longer than interval `b`, when both are durations above zero (an empty,
/// malformed or zero interval is another rule's).
fn interval_order_rule(a: &str, b: &str) -> String {
    let usable = |f: &str| {
        format!("has(self.{f}) && self.{f} != '' && self.{f}.matches(r'{DURATION_PATTERN}') && duration(self.{f}) > duration('0s')")
    };
    format!(
        "!({}) || !({}) || duration(self.{a}) <= duration(self.{b})",
        usable(a),
        usable(b)
    )
}

/// A CEL `messageExpression` for a message whose values were given as [`cel_value`]s: the words
/// around them become CEL string literals (they hold no `'` or `\`).
fn cel_message(words: &str) -> String {
    let literal = format!("'{words}'");
    literal
        .trim_start_matches("'' + ")
        .trim_end_matches(" + ''")
        .to_string()
}

/// A value of a message, as the CEL expression `expr` spliced into [`cel_message`]'s literal.
fn cel_value(expr: &str) -> String {
    format!("' + {expr} + '")
}

#[cfg(test)]
mod tests;
