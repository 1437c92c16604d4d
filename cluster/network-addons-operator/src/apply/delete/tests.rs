use super::super::settled;
use super::*;
use serde_json::json;

#[test]
fn webhooks_are_deleted_first_and_kept_kinds_never() {
    let order = deletion_order();
    let first_other = order
        .iter()
        .position(|k| !DELETE_FIRST.contains(&k.kind))
        .unwrap_or(order.len());
    assert!(order[first_other..]
        .iter()
        .all(|k| !DELETE_FIRST.contains(&k.kind)));
    assert!(order.iter().all(|k| !k.keep));
    for kind in DELETE_FIRST {
        assert!(order.iter().any(|k| k.kind == kind), "{kind} is rendered");
    }
}

#[test]
fn a_listed_item_gets_the_type_it_was_listed_as_and_is_unchanged_when_it_holds_every_value() {
    let config_maps = RENDERED_KINDS
        .iter()
        .find(|k| k.kind == "ConfigMap")
        .expect("ConfigMaps are rendered");
    let ours = json!({"app.kubernetes.io/managed-by": "network-addons-operator"});
    // As the API server lists it: neither apiVersion nor kind.
    let item: DynamicObject = serde_json::from_value(json!({
        "metadata": {"name": "a", "labels": ours, "resourceVersion": "7", "uid": "u"},
        "data": {"a": "1"},
    }))
    .expect("a DynamicObject");
    let listed = typed(config_maps, item);
    let rendered = |a: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "a", "labels": ours}, "data": {"a": a}})
    };
    assert!(settled::unchanged(&listed, &rendered("1")));
    assert!(!settled::unchanged(&listed, &rendered("2")));
}
