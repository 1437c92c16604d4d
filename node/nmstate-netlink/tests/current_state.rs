//! The report: nmstate's format, stable on an idle node, without pods' interfaces.

mod common;

use common::{iface, ip, isolate, pod_veth, settle, state, veth};
use nmstate_netlink::{DesiredState, Error};
use serde_json::json;

#[test]
fn two_reads_of_an_idle_namespace_are_equal() {
    netns_tests::skip_unless_root!();
    isolate();
    veth("eth1", "eth1-peer");
    ip(&["link", "add", "br0", "type", "bridge"]);
    ip(&["link", "set", "eth1", "master", "br0"]);
    ip(&["link", "set", "br0", "up"]);
    ip(&["addr", "add", "192.0.2.1/24", "dev", "br0"]);
    settle();
    std::thread::sleep(std::time::Duration::from_millis(300));
    settle();
    assert_eq!(state(), state());
}

#[test]
fn pods_veths_and_their_routes_are_left_out() {
    netns_tests::skip_unless_root!();
    isolate();
    let _pod = pod_veth("veth1234");
    ip(&["link", "add", "cni0", "type", "bridge"]);
    ip(&["link", "set", "veth1234", "master", "cni0"]);
    ip(&["route", "add", "10.244.0.5/32", "dev", "veth1234"]);
    veth("eth1", "eth1-peer");
    let now = state();
    assert!(iface(&now, "veth1234").is_none(), "{now}");
    assert!(iface(&now, "eth1").is_some());
    assert_eq!(
        iface(&now, "eth1").expect("eth1")["veth"]["peer"],
        "eth1-peer"
    );
    assert!(!now["routes"].to_string().contains("veth1234"), "{now}");
}

#[test]
fn a_veth_nic_no_bridge_holds_is_shown_as_the_nodes() {
    netns_tests::skip_unless_root!();
    isolate();
    // A node whose NIC is a veth (a test node, some VMs): its peer is elsewhere, no CNI holds it.
    let _switch = pod_veth("eth1");
    assert!(iface(&state(), "eth1").is_some());
}

#[test]
fn a_veth_a_bridge_holds_is_shown_when_a_policy_names_it() {
    netns_tests::skip_unless_root!();
    isolate();
    let _switch = pod_veth("eth1");
    ip(&["link", "add", "br0", "type", "bridge"]);
    ip(&["link", "set", "eth1", "master", "br0"]);
    assert!(iface(&state(), "eth1").is_none());
    let shown = nmstate_netlink::current_state_showing(&["eth1".to_string()]).expect("state");
    assert!(iface(&shown, "eth1").is_some(), "{shown}");
    let ports = &iface(&shown, "br0").expect("br0")["bridge"]["port"];
    assert!(ports.to_string().contains("eth1"), "{shown}");
}

#[test]
fn the_report_reads_back_as_a_desired_state() {
    netns_tests::skip_unless_root!();
    isolate();
    veth("eth1", "eth1-peer");
    ip(&["link", "add", "br0", "type", "bridge"]);
    ip(&["link", "set", "eth1", "master", "br0"]);
    let now = state();
    let br0 = iface(&now, "br0").expect("br0").clone();
    // Everything but the controller (a port's view of its bridge) parses as a desired state.
    let parsed = DesiredState::parse(&json!({"interfaces": [br0]}));
    assert!(parsed.is_ok(), "{parsed:?}");
}

#[test]
fn unknown_fields_are_refused_with_the_field_named() {
    let err = DesiredState::parse(
        &json!({"interfaces": [{"name": "eth1", "type": "ethernet", "ethtool2": {}}]}),
    )
    .expect_err("unknown field");
    assert!(matches!(err, Error::Refused(_)));
    assert_eq!(
        err.to_string(),
        r#"interface eth1: field "ethtool2" is not supported"#
    );
}
