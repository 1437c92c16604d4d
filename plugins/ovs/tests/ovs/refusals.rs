//! What is refused, with which code, before anything is made.

use super::*;

#[test]
fn invalid_configs_are_refused_with_code_7_naming_the_field() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-invalid");
    let pod = Pod::new("ovs-invalid-pod");
    let cases: Vec<(Value, &str)> = vec![
        (json!({"vlan": 4095}), "vlan"),
        (json!({"vlan": -1}), "vlan"),
        (json!({"trunk": [{"minID": 20, "maxID": 10}]}), "trunk[0]"),
        (json!({"trunk": [{"minID": 20}]}), "trunk[0]"),
        (json!({"trunk": [{"id": 1}, {"id": 5000}]}), "trunk[1].id"),
        (json!({"socket_file": "http://localhost/db"}), "socket_file"),
        (json!({"socket_file": "db.sock"}), "socket_file"),
        (json!({"mtu": 20}), "mtu"),
        (json!({"ofport_request": 70000}), "ofport_request"),
        (json!({"bridge": ""}), "bridge"),
        (
            json!({"link_state_check_retries": -3}),
            "link_state_check_retries",
        ),
        (
            json!({"runtimeConfig": {"mac": "01:00:5e:00:00:01"}}),
            "mac",
        ),
    ];
    for (fields, field) in cases {
        let out = node.call("ADD", &pod, &node.config(fields.clone()));
        assert_eq!(error_code(&out), 7, "{fields}");
        assert!(
            error_msg(&out).starts_with(field),
            "{fields}: message {:?} does not start with {field}",
            error_msg(&out)
        );
    }
    assert!(pod.link().is_none());
    assert!(node.ports().is_empty());
    node.host.assert_no_new_veths("after refused ADDs");
}

#[test]
fn device_id_hardware_offload_is_refused_with_code_2() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-devid");
    let pod = Pod::new("ovs-devid-pod");
    for fields in [
        json!({"deviceID": "0000:03:00.2"}),
        json!({"runtimeConfig": {"deviceID": "0000:03:00.2"}}),
    ] {
        let out = node.call("ADD", &pod, &node.config(fields));
        assert_eq!(error_code(&out), 2);
        assert!(
            error_msg(&out).starts_with("deviceID"),
            "{}",
            error_msg(&out)
        );
    }
    assert!(node.ports().is_empty());
    node.host.assert_no_new_veths("after refused ADDs");
}

#[test]
fn l2_results_need_0_3_0_so_older_versions_are_refused_before_anything_is_made() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-legacy");
    let pod = Pod::new("ovs-legacy-pod");
    let mut conf = node.config(json!({"vlan": 1}));
    conf["cniVersion"] = json!("0.2.0");
    let out = node.call("ADD", &pod, &conf);
    assert_eq!(error_code(&out), 1);
    assert!(node.ports().is_empty());
    node.host.assert_no_new_veths("after the refused ADD");
}
