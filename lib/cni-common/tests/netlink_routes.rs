//! Reading routes with `Netlink` against the real kernel, as root, in namespaces of the test's
//! own; the routes are made with iproute2.

mod common;

use common::{ip, new_netns, veth_in};

use cni_common::netlink::{Netlink, RouteInfo, RT_TABLE_MAIN};
use cni_common::netns::NetNs;

/// A namespace of the test's own with links `a` (10.0.0.2/24) and `b` (10.0.1.2/24), up, each
/// a veth whose peer is up too; with a netlink socket in it and the links' indexes.
fn two_links() -> (NetNs, Netlink, u32, u32) {
    let ns = new_netns();
    let nl = Netlink::in_netns(&ns).expect("netlink");
    let a = veth_in(&nl, "a", "a-peer");
    let b = veth_in(&nl, "b", "b-peer");
    for link in ["a", "a-peer", "b", "b-peer"] {
        ip(&ns, &["link", "set", "dev", link, "up"]);
    }
    ip(&ns, &["addr", "add", "10.0.0.2/24", "dev", "a"]);
    ip(&ns, &["addr", "add", "10.0.1.2/24", "dev", "b"]);
    (ns, nl, a, b)
}

/// The IPv4 default route of the main table.
fn default_route(nl: &Netlink) -> RouteInfo {
    nl.route_list_family(false)
        .expect("routes")
        .into_iter()
        .find(|r| r.dst.prefix() == 0 && r.table == RT_TABLE_MAIN)
        .expect("the default route")
}

#[test]
fn a_multipath_route_is_read_as_its_first_next_hop() {
    netns_tests::skip_unless_root!();
    let (ns, nl, a, _) = two_links();
    ip(
        &ns,
        &[
            "route", "add", "default", "nexthop", "via", "10.0.0.1", "dev", "a", "nexthop", "via",
            "10.0.1.1", "dev", "b",
        ],
    );

    let default = default_route(&nl);
    assert_eq!(default.gw, Some("10.0.0.1".parse().expect("address")));
    assert_eq!(default.oif, Some(a));
    assert!(default.multipath);
}

#[test]
fn a_route_with_one_next_hop_is_not_multipath() {
    netns_tests::skip_unless_root!();
    let (ns, nl, _, b) = two_links();
    ip(
        &ns,
        &["route", "add", "default", "via", "10.0.1.1", "dev", "b"],
    );

    let default = default_route(&nl);
    assert_eq!(default.gw, Some("10.0.1.1".parse().expect("address")));
    assert_eq!(default.oif, Some(b));
    assert!(!default.multipath);
}

#[test]
fn a_family_dump_holds_only_that_familys_routes() {
    netns_tests::skip_unless_root!();
    let (ns, nl, _, _) = two_links();
    ip(&ns, &["addr", "add", "fd00::2/64", "dev", "a", "nodad"]);

    let v4 = nl.route_list_family(false).expect("IPv4 routes");
    let v6 = nl.route_list_family(true).expect("IPv6 routes");
    assert!(v4
        .iter()
        .any(|r| r.dst == "10.0.0.0/24".parse().expect("net")));
    assert!(v4.iter().all(|r| r.dst.is_ipv4()), "{v4:?}");
    assert!(v6
        .iter()
        .any(|r| r.dst == "fd00::/64".parse().expect("net")));
    assert!(v6.iter().all(|r| r.dst.is_ipv6()), "{v6:?}");
    assert_eq!(
        nl.route_list_all().expect("all routes").len(),
        v4.len() + v6.len()
    );
}

#[test]
fn a_multipath_route_is_not_listed_among_one_links_routes() {
    netns_tests::skip_unless_root!();
    let (ns, nl, a, _) = two_links();
    ip(
        &ns,
        &[
            "route",
            "add",
            "192.0.2.0/24",
            "nexthop",
            "via",
            "10.0.0.1",
            "dev",
            "a",
            "nexthop",
            "via",
            "10.0.1.1",
            "dev",
            "b",
        ],
    );

    let on_a = nl.route_list(a, false).expect("routes of a");
    assert!(
        on_a.iter()
            .any(|r| r.dst == "10.0.0.0/24".parse().expect("net")),
        "{on_a:?}"
    );
    assert!(
        !on_a
            .iter()
            .any(|r| r.dst == "192.0.2.0/24".parse().expect("net")),
        "{on_a:?}"
    );
}
