use super::*;
use serde_json::json;

fn pod(networks: &str) -> Value {
    json!({"metadata": {"name": "p", "namespace": "ns", "annotations": {NETWORKS: networks}}})
}

fn mac(s: &str) -> MacAddr {
    MacAddr::parse(s).expect("mac")
}

fn written(networks: &str, macs: &[MacAddr]) -> Value {
    let PodNeeds::Macs { elements, .. } = needs(&pod(networks)).expect("accepted") else {
        panic!("skipped");
    };
    let ops = patch(&elements, macs);
    let text = ops[0]["value"].as_str().expect("string").to_string();
    serde_json::from_str(&text).expect("json")
}

#[test]
fn a_pod_without_the_annotation_is_passed_through() {
    assert_eq!(needs(&json!({"metadata": {}})), Ok(PodNeeds::Skip));
}

#[test]
fn the_comma_form_is_passed_through() {
    assert_eq!(needs(&pod("net1,other/net2@eth2")), Ok(PodNeeds::Skip));
}

#[test]
fn a_pod_with_network_status_is_passed_through() {
    let p = json!({"metadata": {"annotations": {
            NETWORKS: r#"[{"name":"a"}]"#, NETWORK_STATUS: "[]"}}});
    assert_eq!(needs(&p), Ok(PodNeeds::Skip));
}

#[test]
fn an_element_without_a_mac_gets_one() {
    let list = written(r#"[{"name":"br1"}]"#, &[mac("02:00:00:00:00:01")]);
    assert_eq!(list, json!([{"name": "br1", "mac": "02:00:00:00:00:01"}]));
}

#[test]
fn a_requested_mac_is_kept_and_recorded() {
    let p = pod(r#"[{"name":"a","mac":"02:AA:00:00:00:01"},{"name":"b"}]"#);
    let PodNeeds::Macs {
        count, requested, ..
    } = needs(&p).expect("accepted")
    else {
        panic!("skipped");
    };
    assert_eq!((count, requested), (1, vec![mac("02:aa:00:00:00:01")]));
    let list = written(
        r#"[{"name":"a","mac":"02:AA:00:00:00:01"},{"name":"b"}]"#,
        &[mac("02:00:00:00:00:07")],
    );
    assert_eq!(list[0]["mac"], "02:AA:00:00:00:01");
    assert_eq!(list[1]["mac"], "02:00:00:00:00:07");
}

#[test]
fn unknown_keys_and_another_namespace_are_kept() {
    let list = written(
        r#"[{"name":"a","namespace":"other","x-extra":{"deep":[1,2]}}]"#,
        &[mac("02:00:00:00:00:01")],
    );
    assert_eq!(list[0]["namespace"], "other");
    assert_eq!(list[0]["x-extra"], json!({"deep": [1, 2]}));
}

#[test]
fn malformed_json_is_refused() {
    assert!(needs(&pod(r#"[{"name":"a""#)).is_err());
}

#[test]
fn a_non_string_mac_is_refused() {
    assert!(needs(&pod(r#"[{"name":"a","mac":12}]"#)).is_err());
}

#[test]
fn a_non_string_name_is_refused() {
    assert!(needs(&pod(r#"[{"name":["a"]}]"#)).is_err());
}

#[test]
fn a_multicast_or_broadcast_mac_is_refused() {
    for m in ["01:00:5e:00:00:01", "ff:ff:ff:ff:ff:ff"] {
        let text = format!(r#"[{{"name":"a","mac":"{m}"}}]"#);
        let denial = needs(&pod(&text)).expect_err("refused");
        assert!(denial.0.contains("multicast"), "{}", denial.0);
    }
}

#[test]
fn a_list_past_the_limit_is_refused() {
    let list: Vec<Value> = (0..10_000)
        .map(|i| json!({"name": format!("n{i}")}))
        .collect();
    assert!(needs(&pod(&Value::Array(list).to_string())).is_err());
}

#[test]
fn an_annotation_past_256_kib_is_refused() {
    let big = format!(r#"[{{"name":"{}"}}]"#, "a".repeat(1 << 20));
    let denial = needs(&pod(&big)).expect_err("refused");
    assert!(denial.0.contains("bytes"), "{}", denial.0);
}

#[test]
fn a_list_of_non_objects_is_refused() {
    assert!(needs(&pod(r#"["a","b"]"#)).is_err());
}

#[test]
fn an_empty_mac_is_no_request_and_gets_one_from_the_pool() {
    let PodNeeds::Macs {
        count, requested, ..
    } = needs(&pod(r#"[{"name":"a","mac":""}]"#)).expect("accepted")
    else {
        panic!("skipped");
    };
    assert_eq!((count, requested), (1, vec![]));
    let list = written(r#"[{"name":"a","mac":""}]"#, &[mac("02:00:00:00:00:01")]);
    assert_eq!(list[0]["mac"], "02:00:00:00:00:01");
}

#[test]
fn a_null_mac_is_no_request_either() {
    let list = written(r#"[{"name":"a","mac":null}]"#, &[mac("02:00:00:00:00:01")]);
    assert_eq!(list[0]["mac"], "02:00:00:00:00:01");
}

#[test]
fn a_single_object_is_refused_with_upstreams_words() {
    let denial = needs(&pod(r#"{"name":"br1"}"#)).expect_err("refused");
    assert_eq!(
        denial.0,
        "parsePodNetworkAnnotation: failed to parse pod Network Attachment Selection \
             Annotation JSON format: json: cannot unmarshal object into Go value of type \
             []*types.NetworkSelectionElement"
    );
}

#[test]
fn an_empty_annotation_is_refused_with_upstreams_words() {
    let denial = needs(&pod("")).expect_err("refused");
    assert_eq!(
        denial.0,
        "parsePodNetworkAnnotation: pod annotation not having \"network\" as key, \
             refer Multus README.md for the usage guide"
    );
}

#[test]
fn json_anywhere_in_the_annotation_must_be_a_list() {
    assert!(needs(&pod(r#"net1,{"name":"net2"}"#)).is_err());
}

#[test]
fn a_pod_owned_by_a_vmi_belongs_to_the_vm_of_that_name() {
    let p = json!({"metadata": {"ownerReferences": [
            {"kind": "ReplicaSet", "name": "rs"},
            {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance", "name": "vm1"}]}});
    assert_eq!(owning_vmi(&p), Some("vm1"));
}

#[test]
fn a_pod_owned_by_no_vmi_belongs_to_no_vm() {
    let labelled = json!({"metadata": {"labels": {"kubevirt.io": "virt-launcher"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": "vm1"}]}});
    assert_eq!(owning_vmi(&labelled), None);
}

#[test]
fn a_stored_pods_macs_are_read_from_its_list() {
    let held = held_macs(r#"[{"name":"a","mac":"02:00:00:00:00:01"},{"name":"b"}]"#);
    assert_eq!(held, [mac("02:00:00:00:00:01")]);
    assert!(held_macs("a,b").is_empty());
}
