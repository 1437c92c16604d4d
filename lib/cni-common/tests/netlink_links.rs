//! `Netlink` against the real kernel, as root. Every test works in namespaces of its own
//! (unshare on a throwaway thread), never in the host's; results are cross-checked with iproute2.

mod common;

use common::{ip, isolate, new_netns, veth_in};
use std::time::{Duration, Instant};

use cni_common::mac::MacAddr;
use cni_common::netlink::{Link, Netlink, Veth};
use cni_common::netns::NetNs;
use cni_common::Code;
use ipnetwork::IpNetwork;
use serde_json::Value;

/// iproute2's JSON view of one link in `ns`.
fn ip_link_json(ns: &NetNs, name: &str) -> Value {
    let v: Value =
        serde_json::from_str(&ip(ns, &["-j", "-d", "link", "show", "dev", name])).expect("json");
    v[0].clone()
}

fn ip_flags(v: &Value) -> Vec<String> {
    v["flags"]
        .as_array()
        .expect("flags")
        .iter()
        .map(|f| f.as_str().expect("flag").to_string())
        .collect()
}

fn show(nl: &Netlink, name: &str) -> Link {
    nl.link_show(name)
        .expect("link show")
        .unwrap_or_else(|| panic!("{name} exists"))
}

fn mac(s: &str) -> MacAddr {
    s.parse().expect("mac")
}

#[test]
fn veth_peer_is_created_directly_in_the_other_netns() {
    netns_tests::skip_unless_root!();
    isolate();
    let (host, cont) = (new_netns(), new_netns());
    let (nl_host, nl_cont) = (
        Netlink::in_netns(&host).expect("netlink in host ns"),
        Netlink::in_netns(&cont).expect("netlink in container ns"),
    );
    assert!(nl_host
        .link_add_bridge("cnit-br0", None, false)
        .expect("create bridge"));
    let bridge = show(&nl_host, "cnit-br0");
    let index = nl_host
        .link_add_veth(&Veth {
            name: "cnit-host0",
            peer_name: "eth0",
            peer_netns: Some(&cont),
            mtu: Some(1400),
            mac: Some(mac("02:00:00:00:00:01")),
            peer_mac: Some(mac("02:00:00:00:00:02")),
            master: Some(bridge.index),
            up: true,
        })
        .expect("create veth");

    let local = show(&nl_host, "cnit-host0");
    assert_eq!(local.index, index);
    // Enslaved and up from the single creating request.
    assert_eq!(local.master, Some(bridge.index));
    assert!(local.up);
    assert_eq!(local.kind.as_deref(), Some("veth"));
    assert_eq!(local.mtu, 1400);
    assert_eq!(local.mac, Some(mac("02:00:00:00:00:01")));
    assert!(
        nl_host.link_show("eth0").expect("show").is_none(),
        "peer must not be in the host ns"
    );

    let peer = show(&nl_cont, "eth0");
    assert_eq!(peer.kind.as_deref(), Some("veth"));
    assert_eq!(peer.mtu, 1400);
    assert_eq!(peer.mac, Some(mac("02:00:00:00:00:02")));
    // IFLA_LINK names the peer's index in the peer's namespace.
    assert_eq!(peer.link, Some(index));
    assert_eq!(local.link, Some(peer.index));

    let v = ip_link_json(&cont, "eth0");
    assert_eq!(v["address"], "02:00:00:00:00:02");
    assert_eq!(v["mtu"], 1400);
    assert_eq!(v["linkinfo"]["info_kind"], "veth");
}

#[test]
fn creating_an_existing_veth_fails_and_says_the_name_exists() {
    netns_tests::skip_unless_root!();
    isolate();
    let ns = new_netns();
    let nl = Netlink::in_netns(&ns).expect("netlink");
    veth_in(&nl, "cnit-a", "cnit-b");
    let err = nl
        .link_add_veth(&Veth {
            name: "cnit-a",
            peer_name: "cnit-c",
            ..Veth::default()
        })
        .expect_err("name exists");
    assert_eq!(err.code(), Code::System);
    assert!(err.msg().contains("already exists"), "{err}");
    assert!(err.msg().contains("File exists (os error 17)"), "{err}");
    assert!(
        nl.link_show("cnit-c").expect("show").is_none(),
        "nothing half-created"
    );

    // A peer name taken in the peer's namespace is refused the same way.
    let other = new_netns();
    let nl_other = Netlink::in_netns(&other).expect("netlink");
    veth_in(&nl_other, "eth0", "eth1");
    let err = nl
        .link_add_veth(&Veth {
            name: "cnit-d",
            peer_name: "eth0",
            peer_netns: Some(&other),
            ..Veth::default()
        })
        .expect_err("peer name exists there");
    assert!(err.msg().contains("already exists"), "{err}");
    assert!(nl.link_show("cnit-d").expect("show").is_none());
}

#[test]
fn missing_links_are_none() {
    netns_tests::skip_unless_root!();
    isolate();
    let ns = new_netns();
    let nl = Netlink::in_netns(&ns).expect("netlink");
    assert_eq!(nl.link_show("cnit-nope").expect("show"), None);
    assert_eq!(nl.link_show("").expect("show"), None);
    assert_eq!(
        nl.link_show("a-name-far-too-long-for-linux").expect("show"),
        None
    );
    assert_eq!(nl.link_show_index(987_654).expect("show"), None);
    let lo = nl.link_show_index(1).expect("show").expect("lo is index 1");
    assert_eq!(lo.name, "lo");
    assert_eq!(lo.kind, None);
}

#[test]
fn link_settings_read_back() {
    netns_tests::skip_unless_root!();
    isolate();
    let ns = new_netns();
    let nl = Netlink::in_netns(&ns).expect("netlink");
    let i = veth_in(&nl, "cnit-set0", "cnit-set1");
    let before = show(&nl, "cnit-set0");
    assert!(!before.up && !before.promisc && !before.allmulti);

    nl.link_set_mtu(i, 9000).expect("mtu");
    nl.link_set_address(i, &mac("0a:58:0a:f4:00:07"))
        .expect("mac");
    nl.link_set_promisc(i, true).expect("promisc on");
    nl.link_set_allmulti(i, true).expect("allmulti on");
    nl.link_set_txqlen(i, 42).expect("txqlen");
    nl.link_set_up(i).expect("up");

    let l = show(&nl, "cnit-set0");
    assert_eq!(l.mtu, 9000);
    assert_eq!(l.mac, Some(mac("0a:58:0a:f4:00:07")));
    assert!(l.promisc && l.allmulti && l.up);
    assert_eq!(l.txqlen, 42);
    assert_eq!(show(&nl, "cnit-set1").mtu, 1500, "the peer keeps its mtu");

    let v = ip_link_json(&ns, "cnit-set0");
    assert_eq!(v["mtu"], 9000);
    assert_eq!(v["address"], "0a:58:0a:f4:00:07");
    assert_eq!(v["txqlen"], 42);
    let flags = ip_flags(&v);
    for f in ["UP", "PROMISC", "ALLMULTI"] {
        assert!(flags.iter().any(|x| x == f), "{f} in {flags:?}");
    }

    nl.link_set_promisc(i, false).expect("promisc off");
    nl.link_set_allmulti(i, false).expect("allmulti off");
    let l = show(&nl, "cnit-set0");
    assert!(!l.promisc && !l.allmulti, "{l:?}");
    assert!(l.up, "clearing one flag leaves the others");

    // Operational state follows once both ends are up (the kernel's linkwatch may lag).
    nl.link_set_up(show(&nl, "cnit-set1").index)
        .expect("peer up");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !show(&nl, "cnit-set0").oper_up {
        assert!(Instant::now() < deadline, "operstate never became UP");
        std::thread::sleep(Duration::from_millis(20));
    }

    nl.link_set_down(i).expect("down");
    assert!(!show(&nl, "cnit-set0").up);
    assert!(!ip_flags(&ip_link_json(&ns, "cnit-set0"))
        .iter()
        .any(|x| x == "UP"));

    let err = nl.link_set_mtu(987_654, 1500).expect_err("no such link");
    assert_eq!(err.code(), Code::System);
    assert!(err.msg().contains("No such device"), "{err}");
}

#[test]
fn link_set_name_keeps_the_index() {
    netns_tests::skip_unless_root!();
    isolate();
    let ns = new_netns();
    let nl = Netlink::in_netns(&ns).expect("netlink");
    let i = veth_in(&nl, "cnit-old", "cnit-peer");
    nl.link_set_name(i, "cnit-new").expect("rename");
    assert_eq!(nl.link_show("cnit-old").expect("show"), None);
    assert_eq!(show(&nl, "cnit-new").index, i);
    ip(&ns, &["link", "show", "dev", "cnit-new"]);
}

#[test]
fn link_del_is_idempotent_and_takes_the_peer_along() {
    netns_tests::skip_unless_root!();
    isolate();
    let (a, b) = (new_netns(), new_netns());
    let (nl_a, nl_b) = (
        Netlink::in_netns(&a).expect("nl a"),
        Netlink::in_netns(&b).expect("nl b"),
    );
    let i = nl_a
        .link_add_veth(&Veth {
            name: "cnit-del0",
            peer_name: "cnit-del1",
            peer_netns: Some(&b),
            ..Veth::default()
        })
        .expect("veth");
    nl_a.link_del(i).expect("del");
    assert_eq!(nl_a.link_show("cnit-del0").expect("show"), None);
    assert_eq!(
        nl_b.link_show("cnit-del1").expect("show"),
        None,
        "peer goes with it"
    );
    nl_a.link_del(i).expect("del again is ok");

    veth_in(&nl_a, "cnit-del2", "cnit-del3");
    assert!(nl_a.link_del_by_name("cnit-del2").expect("del by name"));
    assert_eq!(nl_a.link_show("cnit-del3").expect("show"), None);
    assert!(!nl_a.link_del_by_name("cnit-del2").expect("del absent"));
    assert!(!nl_a
        .link_del_by_name("a-name-far-too-long-for-linux")
        .expect("del absent"));
}

#[test]
fn addr_add_and_list() {
    netns_tests::skip_unless_root!();
    isolate();
    let ns = new_netns();
    let nl = Netlink::in_netns(&ns).expect("netlink");
    let i = veth_in(&nl, "cnit-ad0", "cnit-ad1");
    let other = show(&nl, "cnit-ad1").index;
    assert_eq!(nl.addr_list(i).expect("list"), Vec::<IpNetwork>::new());

    let v4: IpNetwork = "10.1.2.3/24".parse().expect("v4");
    let v6: IpNetwork = "fd00:1::5/64".parse().expect("v6");
    nl.addr_add(i, v4).expect("add v4");
    nl.addr_add(i, v6).expect("add v6");
    nl.addr_add(other, "10.9.9.9/8".parse().expect("v4"))
        .expect("add on peer");

    let mut got = nl.addr_list(i).expect("list");
    got.sort();
    let mut want = vec![v4, v6];
    want.sort();
    assert_eq!(got, want, "only this link's addresses");

    let err = nl.addr_add(i, v4).expect_err("duplicate");
    assert!(err.msg().contains("File exists"), "{err}");

    let shown = ip(&ns, &["addr", "show", "dev", "cnit-ad0"]);
    assert!(
        shown.contains("10.1.2.3/24") && shown.contains("fd00:1::5/64"),
        "{shown}"
    );
}

#[test]
fn link_set_netns_moves_the_link() {
    netns_tests::skip_unless_root!();
    isolate();
    let (a, b) = (new_netns(), new_netns());
    let (nl_a, nl_b) = (
        Netlink::in_netns(&a).expect("nl a"),
        Netlink::in_netns(&b).expect("nl b"),
    );
    veth_in(&nl_a, "cnit-mv0", "cnit-mv1");
    let i = show(&nl_a, "cnit-mv1").index;
    nl_a.link_set_netns(i, &b).expect("move");
    assert_eq!(nl_a.link_show("cnit-mv1").expect("show"), None);
    assert_eq!(show(&nl_b, "cnit-mv1").kind.as_deref(), Some("veth"));
}

#[test]
fn in_netns_sees_only_that_namespace() {
    netns_tests::skip_unless_root!();
    isolate();
    let (a, b) = (new_netns(), new_netns());
    let (nl_a, nl_b) = (
        Netlink::in_netns(&a).expect("nl a"),
        Netlink::in_netns(&b).expect("nl b"),
    );
    let i = veth_in(&nl_a, "cnit-only-a", "cnit-only-a1");
    assert_eq!(show(&nl_a, "cnit-only-a").index, i);
    assert_eq!(nl_b.link_show("cnit-only-a").expect("show"), None);
    let caller = Netlink::current().expect("netlink in the caller's netns");
    assert_eq!(
        caller.link_show("cnit-only-a").expect("show"),
        None,
        "nothing leaked to the caller's netns"
    );
    // iproute2 agrees about where the link is.
    ip(&a, &["link", "show", "dev", "cnit-only-a"]);
    assert!(!ip(&b, &["link", "show"]).contains("cnit-only-a"));
}

#[test]
fn link_add_bridge_tolerates_an_existing_bridge_and_reports_it() {
    netns_tests::skip_unless_root!();
    let ns = new_netns();
    let nl = Netlink::in_netns(&ns).expect("netlink");
    assert!(nl
        .link_add_bridge("cnit-br1", Some(1400), false)
        .expect("first"));
    assert!(!nl
        .link_add_bridge("cnit-br1", Some(1400), false)
        .expect("second"));
    let br = show(&nl, "cnit-br1");
    assert_eq!(br.kind.as_deref(), Some("bridge"));
    assert_eq!(br.mtu, 1400);
    assert_eq!(br.vlan_filtering, Some(false));
    // Kernels built without VLAN filtering (this host's) do not report a default PVID.
    assert!(matches!(br.vlan_default_pvid, None | Some(1)), "{br:?}");
}

#[test]
fn ports_of_a_bridge_are_listed_with_their_alias_and_port_flags_apply() {
    netns_tests::skip_unless_root!();
    let ns = new_netns();
    let nl = Netlink::in_netns(&ns).expect("netlink");
    nl.link_add_bridge("cnit-br2", None, false).expect("bridge");
    let br = show(&nl, "cnit-br2");
    for (name, peer) in [("cnit-p0", "cnit-q0"), ("cnit-p1", "cnit-q1")] {
        nl.link_add_veth(&Veth {
            name,
            peer_name: peer,
            master: Some(br.index),
            ..Veth::default()
        })
        .expect("veth");
    }
    let p0 = show(&nl, "cnit-p0");
    nl.link_set_alias(p0.index, "cni-bridge test")
        .expect("alias");
    nl.bridge_link_set(
        p0.index,
        &cni_common::netlink::BridgePort {
            hairpin: Some(true),
            isolated: Some(true),
        },
    )
    .expect("port flags");
    let mut ports: Vec<String> = nl
        .link_list_ports(br.index)
        .expect("ports")
        .into_iter()
        .map(|l| format!("{} {:?}", l.name, l.alias))
        .collect();
    ports.sort();
    assert_eq!(
        ports,
        vec!["cnit-p0 Some(\"cni-bridge test\")", "cnit-p1 None"]
    );
    let data = ip_link_json(&ns, "cnit-p0")["linkinfo"]["info_slave_data"].clone();
    assert_eq!(data["hairpin"], true, "{data}");
    assert_eq!(data["isolated"], true, "{data}");
}

#[test]
fn links_of_one_kind_are_listed_and_nothing_else() {
    netns_tests::skip_unless_root!();
    let ns = new_netns();
    let nl = Netlink::in_netns(&ns).expect("netlink");
    assert!(nl.link_list_kind("bridge").expect("no bridges").is_empty());
    for name in ["cnit-kb0", "cnit-kb1"] {
        nl.link_add_bridge(name, None, false).expect("bridge");
    }
    veth_in(&nl, "cnit-kv0", "cnit-kv1");
    let names = |kind: &str| -> Vec<String> {
        let mut names: Vec<String> = nl
            .link_list_kind(kind)
            .expect("list")
            .into_iter()
            .map(|l| l.name)
            .collect();
        names.sort();
        names
    };
    assert_eq!(names("bridge"), vec!["cnit-kb0", "cnit-kb1"]);
    assert_eq!(names("veth"), vec!["cnit-kv0", "cnit-kv1"]);
    // `lo` has no kind; an unknown kind matches nothing.
    assert!(names("no-such-kind").is_empty());
    // iproute2 agrees.
    let ip_bridges: Value =
        serde_json::from_str(&ip(&ns, &["-j", "link", "show", "type", "bridge"])).expect("json");
    assert_eq!(ip_bridges.as_array().map(Vec::len), Some(2), "{ip_bridges}");
}
