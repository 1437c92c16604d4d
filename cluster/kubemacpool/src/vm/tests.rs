//! VM admissions as the webhook sees them: which interfaces get MACs, what is refused and in
//! which words, and what the patch changes.

use super::*;
use serde_json::json;

const TS: &str = "2025-01-02T03:04:05.123456789Z";

fn vm(interfaces: Value) -> Value {
    let networks = json!([{"name": "default", "pod": {}}, {"name": "br1", "multus": {}}]);
    json!({
        "metadata": {"name": "vm1", "namespace": "default"},
        "spec": {"running": false, "template": {"spec": {
            "domain": {"devices": {"interfaces": interfaces}}, "networks": networks}}},
    })
}

/// Applies `add`, `replace` and `remove` on JSON pointers, as the API server does.
fn apply(doc: &Value, patch: &Value) -> Value {
    let mut doc = doc.clone();
    for op in patch.as_array().expect("a list") {
        let path = op["path"].as_str().expect("a path");
        let (parent, last) = path.rsplit_once('/').expect("a pointer");
        let key = last.replace("~1", "/").replace("~0", "~");
        let target = doc.pointer_mut(parent).expect("a parent");
        match (op["op"].as_str(), target) {
            (Some("add" | "replace"), Value::Object(m)) => {
                m.insert(key, op["value"].clone());
            }
            (Some("remove"), Value::Array(a)) => {
                a.remove(key.parse::<usize>().expect("an index"));
            }
            (op, target) => panic!("{op:?} on {target}"),
        }
    }
    doc
}

/// Admits `object`, gives it MACs 02:00:00:00:00:10 onwards and applies the patch.
fn admit(object: &Value, old: Option<&Value>) -> (Needs, Value) {
    let needs = needs(object, old, false).expect("admitted");
    let macs: Vec<MacAddr> = (0..needs.count() as u64)
        .map(|i| MacAddr::from_u64(0x0200_0000_0010 + i))
        .collect();
    let patched = apply(object, &patch(object, &needs, &macs, TS));
    (needs, patched)
}

fn mac(vm: &Value, i: usize) -> Option<&str> {
    vm.pointer(&format!("{INTERFACES}/{i}/macAddress"))
        .and_then(Value::as_str)
}

fn refusal(object: &Value, old: Option<&Value>) -> String {
    needs(object, old, false).expect_err("refused").0
}

#[test]
fn a_masquerade_interface_gets_a_mac() {
    let (needs, patched) = admit(&vm(json!([{"name": "default", "masquerade": {}}])), None);
    assert_eq!(needs.count(), 1);
    assert_eq!(mac(&patched, 0), Some("02:00:00:00:00:10"));
}

#[test]
fn a_bridge_interface_on_the_pod_network_gets_none() {
    let (needs, patched) = admit(&vm(json!([{"name": "default", "bridge": {}}])), None);
    assert_eq!((needs.count(), mac(&patched, 0)), (0, None));
}

#[test]
fn passt_slirp_and_plugin_bindings_on_the_pod_network_get_none() {
    for binding in ["passt", "slirp", "binding"] {
        let v = vm(json!([{"name": "default", binding: {}}]));
        assert_eq!(needs(&v, None, false).expect("ok").count(), 0, "{binding}");
    }
}

#[test]
fn any_binding_on_a_multus_network_gets_a_mac() {
    for binding in ["bridge", "sriov", "masquerade"] {
        let v = vm(json!([{"name": "br1", binding: {}, "macAddress": null}]));
        assert_eq!(needs(&v, None, false).expect("ok").count(), 1, "{binding}");
    }
}

#[test]
fn a_vm_without_networks_gets_no_mac() {
    let mut v = vm(json!([{"name": "default", "masquerade": {}}]));
    v["spec"]["template"]["spec"]["networks"] = json!([]);
    assert_eq!(needs(&v, None, false).expect("ok").count(), 0);
}

#[test]
fn a_mac_the_vm_names_is_held_and_left_as_written() {
    let v = vm(json!([{"name": "br1", "bridge": {}, "macAddress": "02:AB:00:00:00:01"}]));
    let (needs, patched) = admit(&v, None);
    assert_eq!(needs.count(), 0);
    assert_eq!(needs.requested(), &[MacAddr([2, 0xab, 0, 0, 0, 1])]);
    assert_eq!(mac(&patched, 0), Some("02:AB:00:00:00:01"));
}

#[test]
fn one_mac_on_two_interfaces_is_refused_with_upstreams_words() {
    let v = vm(json!([
        {"name": "default", "masquerade": {}, "macAddress": "02:00:00:00:ff:ff"},
        {"name": "br1", "bridge": {}, "macAddress": "02-00-00-00-FF-FF"}]));
    assert_eq!(
        refusal(&v, None),
        "duplicate MAC address 02:00:00:00:ff:ff found on interfaces: default and br1"
    );
}

#[test]
fn duplicate_interface_names_are_refused_with_upstreams_words() {
    let v = vm(json!([{"name": "br1", "bridge": {}}, {"name": "br1", "bridge": {}}]));
    assert_eq!(
        refusal(&v, None),
        "Failed to mutate virtual machine: every interface must have a unique name"
    );
}

#[test]
fn an_invalid_or_multicast_mac_is_refused() {
    let v = vm(json!([{"name": "br1", "bridge": {}, "macAddress": "02:00:zz"}]));
    assert_eq!(refusal(&v, None), "address 02:00:zz: invalid MAC address");
    let v = vm(json!([{"name": "br1", "bridge": {}, "macAddress": "01:00:5e:00:00:01"}]));
    assert!(refusal(&v, None).ends_with("invalid MAC address, it is a multicast address"));
}

#[test]
fn an_invalid_mac_is_refused_on_any_binding() {
    let v = vm(json!([{"name": "default", "bridge": {}, "macAddress": "nope"}]));
    assert_eq!(refusal(&v, None), "address nope: invalid MAC address");
}

#[test]
fn the_valid_mac_of_an_interface_that_gets_none_is_not_held() {
    let v = vm(json!([{"name": "default", "bridge": {}, "macAddress": "02:00:00:00:00:01"}]));
    assert!(needs(&v, None, false).expect("ok").requested().is_empty());
}

#[test]
fn a_dry_run_judges_neither_the_format_nor_duplicates() {
    let v = vm(json!([
        {"name": "default", "masquerade": {}, "macAddress": "nope"},
        {"name": "br1", "bridge": {}, "macAddress": "02:00:00:00:00:01"},
        {"name": "br2", "bridge": {}, "macAddress": "02:00:00:00:00:01"}]));
    assert!(needs(&v, None, true).is_ok());
}

#[test]
fn a_create_refusal_is_worded_as_upstream() {
    assert_eq!(
        refusal_text(true, "the range is full"),
        "Failed to create virtual machine allocation error: \
         Failed to allocate mac to the vm object: the range is full"
    );
}

#[test]
fn a_full_range_on_update_is_refused_with_upstreams_words() {
    assert_eq!(
        refusal_text(false, "the range is full"),
        "Failed to update virtual machine allocation error: the range is full"
    );
}

#[test]
fn a_vm_with_1000_interfaces_is_refused() {
    let list: Vec<Value> = (0..1000)
        .map(|i| json!({"name": format!("n{i}"), "masquerade": {}}))
        .collect();
    assert!(refusal(&vm(Value::Array(list)), None).ends_with("1000 interfaces, more than 256"));
}

#[test]
fn a_non_string_mac_is_refused() {
    let v = vm(json!([{"name": "br1", "bridge": {}, "macAddress": 12}]));
    assert!(refusal(&v, None).ends_with("interfaces[0]: macAddress is not a string"));
}

#[test]
fn shapes_kubevirt_cannot_hold_are_refused() {
    let mut bad_networks = vm(json!([{"name": "br1", "bridge": {}}]));
    bad_networks["spec"]["template"]["spec"]["networks"] = json!([7]);
    for v in [
        vm(json!({"name": "br1"})),
        vm(json!(["br1"])),
        vm(json!([{"name": 1}])),
        bad_networks,
        json!({"metadata": {"name": "vm1"}, "spec": {"template": "x"}}),
        json!({"metadata": {"name": "vm1", "annotations": "x"}}),
        json!("a string"),
    ] {
        assert!(needs(&v, None, false).is_err(), "{v}");
    }
}

#[test]
fn a_create_without_interfaces_still_gets_the_timestamp() {
    let (needs, patched) = admit(&json!({"metadata": {"name": "vm1"}}), None);
    let want = json!({TRANSACTION_TIMESTAMP: TS});
    assert!(!needs.is_noop() && patched["metadata"]["annotations"] == want);
}

#[test]
fn the_patch_touches_nothing_else() {
    let mut v = vm(
        json!([{"name": "default", "masquerade": {}}, {"name": "x", "bridge": {}},
                          {"name": "br1", "bridge": {}}]),
    );
    v["metadata"]["labels"] = json!({"app": "x"});
    v["metadata"]["annotations"] = json!({"k8s/a~b": "c", TRANSACTION_TIMESTAMP: "old"});
    let mut expected = v.clone();
    expected["metadata"]["annotations"][TRANSACTION_TIMESTAMP] = json!(TS);
    let ifaces = &mut expected["spec"]["template"]["spec"]["domain"]["devices"]["interfaces"];
    ifaces[0]["macAddress"] = json!("02:00:00:00:00:10");
    ifaces[2]["macAddress"] = json!("02:00:00:00:00:11");
    assert_eq!(admit(&v, None).1, expected);
}

#[test]
fn the_legacy_finalizer_is_removed() {
    let mut v = vm(json!([]));
    v["metadata"]["finalizers"] = json!([LEGACY_FINALIZER, "keep/me", LEGACY_FINALIZER]);
    let (_, patched) = admit(&v, None);
    assert_eq!(patched["metadata"]["finalizers"], json!(["keep/me"]));
}

#[test]
fn a_stored_vm_loses_the_legacy_finalizer_and_keeps_the_others_at_its_version() {
    let mut v = vm(json!([]));
    v["metadata"]["resourceVersion"] = json!("42");
    v["metadata"]["finalizers"] = json!([LEGACY_FINALIZER, "kubevirt.io/x", LEGACY_FINALIZER]);
    assert_eq!(
        legacy_finalizer_removal(&v),
        Some(json!({"metadata": {"finalizers": ["kubevirt.io/x"], "resourceVersion": "42"}}))
    );
}

#[test]
fn a_stored_vm_without_the_legacy_finalizer_is_not_patched() {
    let mut v = vm(json!([]));
    assert_eq!(legacy_finalizer_removal(&v), None);
    v["metadata"]["finalizers"] = json!(["kubevirt.io/x"]);
    assert_eq!(legacy_finalizer_removal(&v), None);
}

#[test]
fn an_update_that_changes_only_status_or_the_timestamp_is_a_noop() {
    let old = vm(json!([{"name": "br1", "bridge": {}}]));
    let mut new = old.clone();
    new["status"] = json!({"ready": true});
    new["metadata"]["resourceVersion"] = json!("7");
    new["metadata"]["annotations"] = json!({TRANSACTION_TIMESTAMP: "later"});
    assert!(needs(&new, Some(&old), false).expect("ok").is_noop());
}

#[test]
fn an_update_that_changes_only_a_label_stamps_but_allocates_nothing() {
    let old = vm(json!([{"name": "br1", "bridge": {}}]));
    let mut new = old.clone();
    new["metadata"]["labels"] = json!({"a": "b"});
    let (needs, patched) = admit(&new, Some(&old));
    let stamp = &patched["metadata"]["annotations"][TRANSACTION_TIMESTAMP];
    assert_eq!(
        (needs.count(), mac(&patched, 0), stamp),
        (0, None, &json!(TS))
    );
}

#[test]
fn an_update_that_blanks_a_mac_keeps_the_old_one() {
    let old = vm(json!([
        {"name": "default", "masquerade": {}, "macAddress": "02:00:00:00:aa:01"},
        {"name": "br1", "bridge": {}, "macAddress": "02:00:00:00:aa:02"}]));
    let new = vm(json!([{"name": "default", "masquerade": {}},
                        {"name": "br1", "bridge": {}, "macAddress": ""}]));
    let (needs, patched) = admit(&new, Some(&old));
    assert_eq!((needs.count(), needs.requested().len()), (0, 2));
    assert_eq!(mac(&patched, 0), Some("02:00:00:00:aa:01"));
    assert_eq!(mac(&patched, 1), Some("02:00:00:00:aa:02"));
}

#[test]
fn an_update_that_adds_an_interface_gives_only_it_a_new_mac() {
    let old = vm(json!([{"name": "default", "masquerade": {}, "macAddress": "02:00:00:00:aa:01"}]));
    let new = vm(json!([{"name": "default", "masquerade": {}}, {"name": "br1", "bridge": {}}]));
    let (needs, patched) = admit(&new, Some(&old));
    assert_eq!(needs.count(), 1);
    assert_eq!(mac(&patched, 0), Some("02:00:00:00:aa:01"));
    assert_eq!(mac(&patched, 1), Some("02:00:00:00:00:10"));
}

#[test]
fn an_update_leaves_blank_an_existing_interface_that_had_no_mac() {
    let old = vm(json!([{"name": "default", "masquerade": {}}]));
    let new = vm(json!([{"name": "default", "masquerade": {}}, {"name": "br1", "bridge": {}}]));
    let (needs, patched) = admit(&new, Some(&old));
    assert_eq!(needs.count(), 1);
    assert_eq!(mac(&patched, 0), None);
    assert_eq!(mac(&patched, 1), Some("02:00:00:00:00:10"));
}

#[test]
fn an_update_gives_an_added_interface_a_mac_only_if_its_binding_gets_one() {
    let old = vm(json!([{"name": "br1", "bridge": {}, "macAddress": "02:00:00:00:aa:01"}]));
    let new = vm(json!([{"name": "br1", "bridge": {}}, {"name": "default", "bridge": {}}]));
    let (needs, patched) = admit(&new, Some(&old));
    assert_eq!((needs.count(), mac(&patched, 1)), (0, None));
}

#[test]
fn an_update_refusal_sees_kept_macs() {
    let old = vm(json!([{"name": "br1", "bridge": {}, "macAddress": "02:00:00:00:aa:01"}]));
    let new = vm(json!([{"name": "br1", "bridge": {}},
        {"name": "default", "masquerade": {}, "macAddress": "02:00:00:00:aa:01"}]));
    assert_eq!(
        refusal(&new, Some(&old)),
        "duplicate MAC address 02:00:00:00:aa:01 found on interfaces: br1 and default"
    );
}

#[test]
fn an_update_with_unchanged_interfaces_does_not_judge_them_again() {
    let twice = json!({"name": "br1", "bridge": {}, "macAddress": "02:00:00:00:aa:01"});
    let old = vm(json!([twice, twice]));
    let mut new = old.clone();
    new["spec"]["running"] = json!(true);
    let needs = needs(&new, Some(&old), false).expect("ok");
    assert!(!needs.is_noop() && needs.count() == 0);
}

#[test]
fn a_vm_being_deleted_is_left_alone_but_for_the_legacy_finalizer() {
    let mut old = vm(json!([{"name": "br1", "bridge": {}}]));
    old["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:00:00Z");
    old["metadata"]["finalizers"] = json!([LEGACY_FINALIZER, "kubevirt.io/x"]);
    let mut new = old.clone();
    new["metadata"]["labels"] = json!({"a": "b"});
    let mut expected = new.clone();
    expected["metadata"]["finalizers"] = json!(["kubevirt.io/x"]);
    assert_eq!(admit(&new, Some(&old)).1, expected);
    new["metadata"]["finalizers"] = json!(["kubevirt.io/x"]);
    assert!(needs(&new, Some(&old), false).expect("ok").is_noop());
}

#[test]
fn held_macs_are_every_parseable_mac_of_any_binding_once() {
    let v = vm(json!([
        {"name": "a", "bridge": {}, "macAddress": "02:00:00:00:00:01"},
        {"name": "b", "masquerade": {}, "macAddress": "bad"},
        {"name": "c", "sriov": {}, "macAddress": "02-00-00-00-00-02"},
        {"name": "d", "bridge": {}, "macAddress": "02:00:00:00:00:01"},
        {"name": "e", "bridge": {}}]));
    let want = vec![MacAddr([2, 0, 0, 0, 0, 1]), MacAddr([2, 0, 0, 0, 0, 2])];
    assert_eq!(held_macs(&v), want);
    assert!(held_macs(&json!({"spec": "x"})).is_empty());
}
