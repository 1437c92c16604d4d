//! Applying desired states to a throwaway namespace, as the node agent does: what changes, what
//! is refused, and that every failure and rollback leaves the node as it was.

mod common;

use common::{
    assert_a_late_failure_is_rolled_back, desired, iface, ip, isolate, journal, kernel_has,
    pod_veth, settle, state, veth,
};
use nmstate_netlink::{apply, recover, DesiredState, Error};
use serde_json::json;

fn walkthrough() -> DesiredState {
    desired(json!({"interfaces": [{
        "name": "br0",
        "description": "Linux bridge with eth1 as a port",
        "type": "linux-bridge",
        "state": "up",
        "bridge": {"options": {"stp": {"enabled": false}}, "port": [{"name": "eth1"}]}
    }]}))
}

/// eth1 (with eth1-peer) up, an IPv4 address on it, DAD over.
fn node_with_eth1() {
    isolate();
    veth("eth1", "eth1-peer");
    ip(&["addr", "add", "192.0.2.10/24", "dev", "eth1"]);
    settle();
}

#[test]
fn the_walkthrough_policy_makes_br0_with_eth1_as_port() {
    netns_tests::skip_unless_root!();
    node_with_eth1();
    let (_dir, journal) = journal();
    let applied = apply(&walkthrough(), &journal).expect("apply");
    assert!(applied.changed());
    assert!(journal.exists(), "the journal stays until commit");
    applied.commit().expect("commit");
    assert!(!journal.exists());
    let now = state();
    let br0 = iface(&now, "br0").expect("br0 exists");
    assert_eq!(br0["type"], "linux-bridge");
    assert_eq!(br0["state"], "up");
    assert_eq!(br0["description"], "Linux bridge with eth1 as a port");
    assert_eq!(br0["bridge"]["options"]["stp"]["enabled"], false);
    assert_eq!(br0["bridge"]["port"][0]["name"], "eth1");
    let eth1 = iface(&now, "eth1").expect("eth1");
    assert_eq!(eth1["controller"], "br0");
    assert_eq!(eth1["state"], "up");
}

#[test]
fn applying_the_same_state_twice_changes_nothing_the_second_time() {
    netns_tests::skip_unless_root!();
    node_with_eth1();
    let (_dir, journal) = journal();
    apply(&walkthrough(), &journal)
        .expect("first")
        .commit()
        .expect("commit");
    settle();
    let again = apply(&walkthrough(), &journal).expect("second");
    assert_eq!(again.summary(), "nothing to change");
    assert!(!again.changed());
    again.commit().expect("commit");
}

#[test]
fn absent_br0_gives_eth1_back_its_state() {
    netns_tests::skip_unless_root!();
    node_with_eth1();
    let (_dir, journal) = journal();
    apply(&walkthrough(), &journal)
        .expect("apply")
        .commit()
        .expect("commit");
    let absent = desired(
        json!({"interfaces": [{"name": "br0", "type": "linux-bridge", "state": "absent"}]}),
    );
    apply(&absent, &journal)
        .expect("absent")
        .commit()
        .expect("commit");
    let now = state();
    assert!(iface(&now, "br0").is_none(), "br0 is gone");
    let eth1 = iface(&now, "eth1").expect("eth1");
    assert!(
        eth1.get("controller").is_none(),
        "eth1 is no port any more: {eth1}"
    );
    assert_eq!(eth1["state"], "up");
}

#[test]
fn a_port_that_does_not_exist_is_refused_and_nothing_changes() {
    netns_tests::skip_unless_root!();
    node_with_eth1();
    let before = state();
    let (_dir, journal) = journal();
    let state_with_missing_port = desired(
        json!({"interfaces": [{"name": "br0", "type": "linux-bridge",
        "bridge": {"port": [{"name": "eth9"}]}}]}),
    );
    match apply(&state_with_missing_port, &journal) {
        Err(Error::Refused(msg)) => assert_eq!(msg, "interface br0: port eth9 does not exist"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(!journal.exists());
    assert_eq!(state(), before);
}

#[test]
fn a_vlan_fails_with_eopnotsupp_only_where_the_kernel_lacks_8021q() {
    netns_tests::skip_unless_root!();
    let has_8021q = kernel_has("vlan");
    node_with_eth1();
    let before = state();
    let (_dir, journal) = journal();
    let vlan = desired(json!({"interfaces": [
        {"name": "eth1.100", "type": "vlan", "vlan": {"base-iface": "eth1", "id": 100}},
        {"name": "eth1", "mtu": 1400}
    ]}));
    let result = apply(&vlan, &journal);
    if has_8021q {
        result
            .expect("this kernel has 802.1Q: the vlan is made")
            .commit()
            .expect("commit");
        assert!(iface(&state(), "eth1.100").is_some());
    } else {
        match result {
            Err(Error::Refused(msg)) => assert_eq!(
                msg,
                "interface eth1.100: this kernel cannot create vlan links (Operation not supported)"
            ),
            other => panic!("expected EOPNOTSUPP as a refusal, got {other:?}"),
        }
        assert_eq!(state(), before, "the node is untouched");
        assert!(!journal.exists());
    }
}

#[test]
fn a_failure_after_changes_rolls_back_the_links_it_created() {
    netns_tests::skip_unless_root!();
    node_with_eth1();
    let before = state();
    // br0 is created and eth1 enslaved, then the route fails.
    let off_link = desired(json!({
        "interfaces": [
            {"name": "br0", "type": "linux-bridge", "bridge": {"port": [{"name": "eth1"}]}}
        ],
        "routes": {"config": [
            {"destination": "198.51.100.0/24", "next-hop-address": "10.99.0.1", "next-hop-interface": "eth1-peer"}
        ]}
    }));
    assert_a_late_failure_is_rolled_back(&off_link, &before);
}

#[test]
fn a_rollback_after_apply_restores_the_previous_state_exactly() {
    netns_tests::skip_unless_root!();
    node_with_eth1();
    ip(&["addr", "add", "2001:db8::10/64", "dev", "eth1", "nodad"]);
    ip(&[
        "route",
        "add",
        "198.51.100.0/24",
        "via",
        "192.0.2.1",
        "dev",
        "eth1",
    ]);
    settle();
    let before = state();
    assert!(
        iface(&before, "eth1").expect("eth1")["ipv6"]["address"]
            .as_array()
            .expect("v6 addresses")
            .iter()
            .any(|a| a["ip"].as_str().is_some_and(|ip| ip.starts_with("fe80::"))),
        "eth1 has a link-local address to lose: {before}"
    );
    let (_dir, journal) = journal();
    let applied = apply(&walkthrough(), &journal).expect("apply");
    let during = state();
    assert_eq!(
        iface(&during, "eth1").expect("eth1")["ipv6"]["enabled"],
        false,
        "a port has no addresses"
    );
    applied.rollback().expect("rollback");
    settle();
    assert_eq!(state(), before);
    assert!(!journal.exists());
}

#[test]
fn a_journal_left_behind_is_recovered() {
    netns_tests::skip_unless_root!();
    node_with_eth1();
    let before = state();
    let (_dir, journal) = journal();
    // The process "dies" after the apply: the change is neither committed nor rolled back.
    drop(apply(&walkthrough(), &journal).expect("apply"));
    assert!(journal.exists());
    let restored = recover(&journal)
        .expect("recover")
        .expect("there was a journal");
    assert!(restored.contains("br0: deleted"), "{restored}");
    settle();
    assert_eq!(state(), before);
    assert!(!journal.exists());
    assert_eq!(recover(&journal).expect("nothing to recover"), None);
}

#[test]
fn an_apply_is_refused_while_a_journal_waits_for_recovery() {
    netns_tests::skip_unless_root!();
    node_with_eth1();
    let (_dir, journal) = journal();
    drop(apply(&walkthrough(), &journal).expect("apply"));
    match apply(&walkthrough(), &journal) {
        Err(Error::Refused(msg)) => assert!(msg.contains("recover it first"), "{msg}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    recover(&journal).expect("recover");
}

#[test]
fn addresses_and_routes_are_applied_and_listed() {
    netns_tests::skip_unless_root!();
    node_with_eth1();
    let (_dir, journal) = journal();
    let addressed = desired(json!({
        "interfaces": [{"name": "eth1", "type": "veth", "mtu": 1400,
            "ipv4": {"enabled": true, "address": [{"ip": "192.0.2.20", "prefix-length": 24}]}}],
        "routes": {"config": [{"destination": "198.51.100.0/24", "next-hop-address": "192.0.2.1",
            "next-hop-interface": "eth1", "metric": 50}]}
    }));
    apply(&addressed, &journal)
        .expect("apply")
        .commit()
        .expect("commit");
    let now = state();
    let eth1 = iface(&now, "eth1").expect("eth1");
    assert_eq!(eth1["mtu"], 1400);
    assert_eq!(
        eth1["ipv4"]["address"],
        json!([{"ip": "192.0.2.20", "prefix-length": 24}]),
        "the list is exact"
    );
    assert_eq!(
        now["routes"]["config"],
        json!([{"destination": "198.51.100.0/24", "next-hop-address": "192.0.2.1",
                "next-hop-interface": "eth1", "metric": 50, "table-id": 254}])
    );
    let removed = desired(
        json!({"routes": {"config": [{"destination": "198.51.100.0/24", "state": "absent"}]}}),
    );
    apply(&removed, &journal)
        .expect("route absent")
        .commit()
        .expect("commit");
    assert_eq!(state()["routes"]["config"], json!([]));
}

#[test]
fn a_veth_nic_no_bridge_holds_can_be_a_port_and_is_rolled_back() {
    netns_tests::skip_unless_root!();
    isolate();
    // The node's NIC is a veth whose peer is in another namespace (a test node's switch).
    let _switch = pod_veth("eth1");
    let before = state();
    let (_dir, journal) = journal();
    let applied = apply(&walkthrough(), &journal).expect("apply");
    assert!(ip(&["-o", "link", "show", "eth1"]).contains("master br0"));
    applied.rollback().expect("rollback");
    settle();
    assert_eq!(state(), before);
}

#[test]
fn a_pods_veth_is_refused_as_a_port() {
    netns_tests::skip_unless_root!();
    isolate();
    let _pod = pod_veth("veth1234");
    ip(&["link", "add", "cni0", "type", "bridge"]);
    ip(&["link", "set", "veth1234", "master", "cni0"]);
    let (_dir, journal) = journal();
    let take_pod = desired(
        json!({"interfaces": [{"name": "br0", "type": "linux-bridge",
        "bridge": {"port": [{"name": "veth1234"}]}}]}),
    );
    match apply(&take_pod, &journal) {
        Err(Error::Refused(msg)) => assert!(msg.contains("is a pod's veth"), "{msg}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_rollback_goes_on_past_a_link_it_cannot_restore() {
    netns_tests::skip_unless_root!();
    isolate();
    // eth1's peer is in another namespace: a rollback cannot re-create eth1 once it is gone.
    let _switch = pod_veth("eth1");
    veth("eth2", "eth2-peer");
    settle();
    let (_dir, journal) = journal();
    let wanted = desired(json!({"interfaces": [
        {"name": "br0", "type": "linux-bridge", "bridge": {"port": [{"name": "eth1"}]}},
        {"name": "eth2", "mtu": 1400}
    ]}));
    let applied = apply(&wanted, &journal).expect("apply");
    ip(&["link", "del", "eth1"]);
    match applied.rollback() {
        Err(Error::RollbackFailed { rollback, .. }) => {
            assert!(rollback.contains("interface eth1"), "{rollback}")
        }
        other => panic!("expected the rollback to fail on eth1, got {other:?}"),
    }
    let now = state();
    assert!(iface(&now, "br0").is_none(), "br0 is deleted all the same");
    assert_eq!(iface(&now, "eth2").expect("eth2")["mtu"], 1500);
    assert!(journal.exists(), "the journal is kept for recover");
}

#[test]
fn a_rollback_leaves_alone_routes_it_did_not_add() {
    netns_tests::skip_unless_root!();
    node_with_eth1();
    let (_dir, journal) = journal();
    let wanted = desired(json!({
        "interfaces": [{"name": "eth1", "mtu": 1400}],
        "routes": {"config": [{"destination": "198.51.100.0/24", "next-hop-interface": "eth1"}]}
    }));
    let applied = apply(&wanted, &journal).expect("apply");
    // Another daemon adds a route through eth1 meanwhile.
    ip(&[
        "route",
        "add",
        "203.0.113.0/24",
        "dev",
        "eth1",
        "proto",
        "bird",
    ]);
    applied.rollback().expect("rollback");
    let routes = ip(&["route", "show", "dev", "eth1"]);
    assert!(routes.contains("203.0.113.0/24"), "{routes}");
    assert!(!routes.contains("198.51.100.0/24"), "{routes}");
}

#[test]
fn a_failed_first_write_is_rolled_back_not_refused() {
    netns_tests::skip_unless_root!();
    node_with_eth1();
    let before = state();
    let (_dir, journal) = journal();
    // The first request the walk sends fails: it might have changed something.
    let off_link = desired(json!({"routes": {"config": [
        {"destination": "198.51.100.0/24", "next-hop-address": "10.99.0.1", "next-hop-interface": "eth1"}
    ]}}));
    match apply(&off_link, &journal) {
        Err(Error::Failed { cause }) => assert!(cause.contains("198.51.100.0/24"), "{cause}"),
        other => panic!("expected a failure rolled back, got {other:?}"),
    }
    assert_eq!(state(), before);
    assert!(!journal.exists());
}

#[test]
fn absent_on_a_veth_whose_peer_is_in_another_namespace_is_refused() {
    netns_tests::skip_unless_root!();
    isolate();
    let _switch = pod_veth("eth1");
    let (_dir, journal) = journal();
    let absent = desired(json!({"interfaces": [{"name": "eth1", "state": "absent"}]}));
    match apply(&absent, &journal) {
        Err(Error::Refused(msg)) => assert!(
            msg.starts_with("interface eth1: a veth whose peer is in another namespace"),
            "{msg}"
        ),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(iface(&state(), "eth1").is_some());
}

#[test]
fn routes_can_be_cleared_from_an_interface_and_added_to_it_in_one_state() {
    netns_tests::skip_unless_root!();
    node_with_eth1();
    ip(&[
        "route",
        "add",
        "198.51.100.0/24",
        "via",
        "192.0.2.1",
        "dev",
        "eth1",
    ]);
    let (_dir, journal) = journal();
    let wanted = desired(json!({"routes": {"config": [
        {"next-hop-interface": "eth1", "state": "absent"},
        {"destination": "203.0.113.0/24", "next-hop-address": "192.0.2.1",
         "next-hop-interface": "eth1"}
    ]}}));
    apply(&wanted, &journal)
        .expect("apply")
        .commit()
        .expect("commit");
    let routes = ip(&["route", "show", "dev", "eth1"]);
    assert!(routes.contains("203.0.113.0/24"), "{routes}");
    assert!(!routes.contains("198.51.100.0/24"), "{routes}");
}

#[test]
fn clearing_an_interfaces_routes_leaves_a_multipath_route_through_it_alone() {
    netns_tests::skip_unless_root!();
    node_with_eth1();
    veth("eth2", "eth2-peer");
    ip(&["addr", "add", "198.51.100.10/24", "dev", "eth2"]);
    ip(&[
        "route",
        "add",
        "203.0.113.0/24",
        "nexthop",
        "via",
        "192.0.2.1",
        "dev",
        "eth1",
        "nexthop",
        "via",
        "198.51.100.1",
        "dev",
        "eth2",
    ]);
    let (_dir, journal) = journal();
    let clear = desired(json!({"routes": {"config": [
        {"next-hop-interface": "eth1", "state": "absent"}
    ]}}));
    apply(&clear, &journal)
        .expect("apply")
        .commit()
        .expect("commit");
    let routes = ip(&["route", "show", "203.0.113.0/24"]);
    assert!(
        routes.contains("nexthop via 192.0.2.1 dev eth1")
            && routes.contains("nexthop via 198.51.100.1 dev eth2"),
        "{routes}"
    );
}
