//! `configure_iface` and `check_iface` against the real kernel, in namespaces of the test's own;
//! what they did is read back with iproute2.

mod common;

use common::{ip, new_netns, veth_in};

use cni_common::ipam::{check_iface, configure_iface};
use cni_common::netlink::Netlink;
use cni_common::result::CniResult;
use cni_common::version::SpecVersion;
use serde_json::json;

fn result(value: serde_json::Value) -> CniResult {
    CniResult::from_value(&value, SpecVersion::V1_1_0).expect("result")
}

fn sample() -> CniResult {
    result(json!({
        "cniVersion": "1.1.0",
        "interfaces": [{"name": "br0"}, {"name": "net1", "sandbox": "/x"}],
        "ips": [
            {"address": "10.77.0.5/24", "gateway": "10.77.0.1", "interface": 1},
            {"address": "10.88.0.5/24", "interface": 0},
            {"address": "fd77::5/64", "gateway": "fd77::1", "interface": 1}
        ],
        "routes": [
            {"dst": "0.0.0.0/0"},
            {"dst": "192.168.50.0/24", "gw": "10.77.0.254", "mtu": 1300},
            {"dst": "10.99.1.7/16"},
            {"dst": "fd99::/48"}
        ]
    }))
}

#[test]
fn configure_iface_adds_the_interfaces_addresses_and_every_route() {
    netns_tests::skip_unless_root!();
    let ns = new_netns();
    let nl = Netlink::in_netns(&ns).expect("netlink");
    let index = veth_in(&nl, "net1", "peer1");
    nl.link_set_up(nl.link_show("peer1").expect("show").expect("peer").index)
        .expect("peer up");

    configure_iface(&nl, index, 1, &sample()).expect("configure");

    let addrs = ip(&ns, &["-br", "addr", "show", "dev", "net1"]);
    assert!(addrs.contains("10.77.0.5/24"), "{addrs}");
    assert!(addrs.contains("fd77::5/64"), "{addrs}");
    // The address of another interface of the result stays off this one.
    assert!(!addrs.contains("10.88.0.5"), "{addrs}");
    let v4 = ip(&ns, &["route", "show", "dev", "net1"]);
    assert!(v4.contains("default via 10.77.0.1"), "{v4}");
    assert!(v4.contains("192.168.50.0/24 via 10.77.0.254"), "{v4}");
    assert!(v4.contains("mtu 1300"), "{v4}");
    // Host bits of a destination are dropped, as the kernel wants a network.
    assert!(v4.contains("10.99.0.0/16 via 10.77.0.1"), "{v4}");
    let v6 = ip(&ns, &["-6", "route", "show", "dev", "net1"]);
    assert!(v6.contains("fd99::/48 via fd77::1"), "{v6}");

    check_iface(&nl, index, 1, &sample()).expect("check after configure");
}

#[test]
fn check_iface_reports_a_missing_address_and_a_missing_route() {
    netns_tests::skip_unless_root!();
    let ns = new_netns();
    let nl = Netlink::in_netns(&ns).expect("netlink");
    let index = veth_in(&nl, "net1", "peer1");
    configure_iface(&nl, index, 1, &sample()).expect("configure");

    ip(&ns, &["route", "del", "192.168.50.0/24", "dev", "net1"]);
    let e = check_iface(&nl, index, 1, &sample()).expect_err("route gone");
    assert!(e.msg().contains("192.168.50.0/24"), "{}", e.msg());

    ip(&ns, &["addr", "del", "10.77.0.5/24", "dev", "net1"]);
    let e = check_iface(&nl, index, 1, &sample()).expect_err("address gone");
    assert!(e.msg().contains("10.77.0.5/24"), "{}", e.msg());
}

#[test]
fn check_iface_names_the_addresses_the_interface_has_as_ip_prints_them() {
    netns_tests::skip_unless_root!();
    let ns = new_netns();
    let nl = Netlink::in_netns(&ns).expect("netlink");
    let index = veth_in(&nl, "net1", "peer1");
    configure_iface(&nl, index, 1, &sample()).expect("configure");
    ip(&ns, &["addr", "del", "10.77.0.5/24", "dev", "net1"]);
    ip(&ns, &["addr", "add", "10.77.0.6/24", "dev", "net1"]);
    let e = check_iface(&nl, index, 1, &sample()).expect_err("address replaced");
    assert!(e.msg().contains("(it has 10.77.0.6/24"), "{}", e.msg());
    assert!(!e.msg().contains("V4("), "Rust debug output: {}", e.msg());
}

#[test]
fn configure_iface_fails_on_a_route_the_kernel_refuses() {
    netns_tests::skip_unless_root!();
    let ns = new_netns();
    let nl = Netlink::in_netns(&ns).expect("netlink");
    let index = veth_in(&nl, "net1", "peer1");
    // The gateway is not reachable through any address of the link.
    let unreachable = result(json!({
        "cniVersion": "1.1.0",
        "ips": [{"address": "10.77.0.5/24", "interface": 0}],
        "routes": [{"dst": "192.168.9.0/24", "gw": "172.31.0.1"}]
    }));
    let e = configure_iface(&nl, index, 0, &unreachable).expect_err("unreachable gateway");
    assert!(
        e.msg()
            .contains("ip route add 192.168.9.0/24 via 172.31.0.1"),
        "{}",
        e.msg()
    );
}
