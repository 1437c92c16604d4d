use super::*;
use serde_json::json;

fn live(value: Value) -> DynamicObject {
    serde_json::from_value(value).expect("a DynamicObject")
}

fn ours(spec: Value) -> DynamicObject {
    live(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "a", "labels": {"app.kubernetes.io/managed-by": "network-addons-operator"},
                     "resourceVersion": "7", "uid": "u"},
        "data": spec,
    }))
}

fn rendered(spec: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "a", "labels": {"app.kubernetes.io/managed-by": "network-addons-operator"}},
        "data": spec,
    })
}

#[test]
fn an_object_holding_every_rendered_value_and_more_is_unchanged() {
    assert!(unchanged(
        &ours(json!({"a": "1", "b": "2"})),
        &rendered(json!({"a": "1"}))
    ));
}

#[test]
fn an_object_of_another_type_or_of_none_is_a_change() {
    let mut other = ours(json!({"a": "1"}));
    other.types.as_mut().expect("typed").kind = "Secret".to_string();
    assert!(!unchanged(&other, &rendered(json!({"a": "1"}))));
    other.types = None;
    assert!(!unchanged(&other, &rendered(json!({"a": "1"}))));
}

#[test]
fn a_rendered_value_changed_or_missing_on_the_server_is_a_change() {
    assert!(!unchanged(
        &ours(json!({"a": "2"})),
        &rendered(json!({"a": "1"}))
    ));
    assert!(!unchanged(&ours(json!({})), &rendered(json!({"a": "1"}))));
}

#[test]
fn a_list_with_an_element_more_or_less_is_a_change() {
    let one = |v: Value| json!({"items": v});
    assert!(!unchanged(
        &ours(one(json!([1, 2]))),
        &rendered(one(json!([1])))
    ));
    assert!(!unchanged(
        &ours(one(json!([1]))),
        &rendered(one(json!([1, 2])))
    ));
    assert!(unchanged(
        &ours(one(json!([{"n": 1, "default": true}]))),
        &rendered(one(json!([{"n": 1}])))
    ));
}

#[test]
fn an_object_without_our_label_is_never_left_alone() {
    let mut other = ours(json!({"a": "1"}));
    other.metadata.labels = None;
    assert!(!unchanged(&other, &json!({"data": {"a": "1"}})));
}

#[test]
fn only_a_record_of_this_very_render_says_it_was_completed() {
    let record = |sum: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "r", "annotations": {RENDERED: sum}}})
    };
    let objects = [json!({"a": 1})];
    let sum = fingerprint(&objects);
    assert!(completed(Some(&live(record(&sum))), &record(&sum)));
    assert!(!completed(Some(&live(record("other"))), &record(&sum)));
    assert!(!completed(None, &record(&sum)));
    assert_ne!(sum, fingerprint(&[json!({"a": 2})]));
}
