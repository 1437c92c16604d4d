//! deviceID mode: the device plugin's macvtap moved into the pod, found under today's and the
//! hashed names, and given back unchanged when an ADD fails.

use super::*;

#[test]
fn device_id_mode_moves_the_device_plugins_macvtap_into_the_pod() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-dp");
    let pod = node.pod("mvt-dp");
    let dp = node.device_plugin_macvtap("dp0Mvp1", &[]);
    let conf = config("1.1.0", json!({"deviceID": "dp0Mvp1", "mtu": 1450}));
    let out = node.call("ADD", &pod, &conf);
    expect_success(&out, "ADD");

    assert!(node.host.link("dp0Mvp1").is_none(), "still in the host");
    let link = pod.iface().expect("net1 in the pod");
    assert_eq!(link.kind(), Some("macvtap"));
    // Same device: the index (hence /dev/tapN, which the device plugin handed the pod) and
    // the MAC the device plugin's kernel gave it are kept.
    assert_eq!(link.ifindex, dp.ifindex);
    assert_eq!(link.mac(), dp.mac());
    assert_eq!(link.mtu, Some(1450));
    assert!(link.is_up());
    assert_eq!(
        tap_device(dp.ifindex),
        Some(format!("{IFNAME}/macvtap/tap{}", dp.ifindex))
    );
    assert_eq!(tap_owner(dp.ifindex), Some((107, 107)));
}

/// macvtap-cni's device plugin since its April 2026 releases names the macvtap `mvt` and 48
/// bits of xxHash64 of the device ID, so a resource name of any length fits; Multus still
/// passes the device ID. Found under that name, taken into the pod, and given back under it
/// when the ADD fails.
#[test]
fn device_id_mode_finds_the_macvtap_under_todays_device_plugin_name() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-dphash");
    let pod = node.pod("mvt-dphash");
    // Longer than an interface name: only the hashed name can exist.
    let id = "dataplanelongMvp12";
    let hashed = macvtap::macvtap::device_plugin_name(id);
    let dp = node.device_plugin_macvtap(&hashed, &[]);

    // A failed ADD puts it back where the device plugin expects it.
    let broken = config(
        "1.0.0",
        json!({"deviceID": id, "ipam": static_ipam("not-an-address")}),
    );
    error_of(&node.call("ADD", &pod, &broken));
    let back = node.host.link(&hashed).expect("given back under its name");
    assert_eq!(back.ifindex, dp.ifindex);
    assert!(pod.macvtaps().is_empty());

    let conf = config("1.1.0", json!({"deviceID": id}));
    let out = node.call("ADD", &pod, &conf);
    expect_success(&out, "ADD");
    assert!(node.host.link(&hashed).is_none(), "still in the host");
    let link = pod.iface().expect("net1 in the pod");
    assert_eq!(link.ifindex, dp.ifindex);
    assert_eq!(link.mac(), dp.mac());
    assert_eq!(tap_owner(dp.ifindex), Some((107, 107)));
    expect_success(&node.call("CHECK", &pod, &with_prev(&conf, &out)), "CHECK");
    expect_success(&node.call("DEL", &pod, &conf), "DEL");
    assert!(pod.macvtaps().is_empty());
    assert!(node.host_macvtaps().is_empty());
    assert!(tap_device(dp.ifindex).is_none());
}

/// A node may hold a macvtap under both names (one an older device plugin left behind): the
/// name today's device plugin gives it wins, and the other is not touched.
#[test]
fn device_id_mode_prefers_the_hashed_name_to_the_plain_one() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-dpboth");
    let pod = node.pod("mvt-dpboth");
    let hashed = macvtap::macvtap::device_plugin_name("dp0Mvp5");
    let new = node.device_plugin_macvtap(&hashed, &[]);
    let old = node.device_plugin_macvtap("dp0Mvp5", &[]);
    let conf = config("1.1.0", json!({"deviceID": "dp0Mvp5"}));
    expect_success(&node.call("ADD", &pod, &conf), "ADD");
    assert_eq!(pod.iface().expect("net1").ifindex, new.ifindex);
    assert_eq!(
        node.host.link("dp0Mvp5").map(|l| l.ifindex),
        Some(old.ifindex)
    );
}

#[test]
fn device_id_mode_refuses_a_pod_whose_ifindex_would_rename_dev_tap() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-dpidx");
    let pod = node.pod("mvt-dpidx");
    let dp = node.device_plugin_macvtap("dp0Mvp4", &[]);
    // The pod already has a link with the macvtap's index: the move would give it another
    // one, and /dev/tapN, which the device plugin handed the pod, would not be its node.
    let index = dp.ifindex.to_string();
    pod.ns.exec_ok(
        "ip",
        &[
            "link", "add", "taken0", "index", &index, "type", "veth", "peer", "name", "taken1",
        ],
    );
    let conf = config("1.1.0", json!({"deviceID": "dp0Mvp4"}));
    let (_, msg) = error_of(&node.call("ADD", &pod, &conf));
    assert!(msg.contains("ifindex"), "{msg}");
    let back = node.host.link("dp0Mvp4").expect("given back to the host");
    assert_eq!(back.ifindex, dp.ifindex);
    assert!(pod.macvtaps().is_empty());
}

#[test]
fn device_id_from_runtime_config_is_used() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-dprc");
    let pod = node.pod("mvt-dprc");
    node.device_plugin_macvtap("dp0Mvp2", &[]);
    let conf = config("1.1.0", json!({"runtimeConfig": {"deviceID": "dp0Mvp2"}}));
    expect_success(&node.call("ADD", &pod, &conf), "ADD");
    assert!(node.host.link("dp0Mvp2").is_none());
    assert!(pod.iface().is_some());
}

#[test]
fn device_id_that_is_not_a_macvtap_is_refused_and_the_link_stays() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-dpveth");
    let pod = node.pod("mvt-dpveth");
    let conf = config("1.1.0", json!({"deviceID": PARENT_PEER}));
    let (code, msg) = error_of(&node.call("ADD", &pod, &conf));
    assert_eq!(code, 7, "{msg}");
    assert!(msg.contains("not a macvtap"), "{msg}");
    assert!(node.host.link(PARENT_PEER).is_some(), "the veth was taken");
    assert!(pod.iface().is_none());
}

#[test]
fn device_id_missing_from_the_host_fails_and_changes_nothing() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-dpgone");
    let pod = node.pod("mvt-dpgone");
    let before = node.host.links().len();
    let conf = config("1.1.0", json!({"deviceID": "dp0Mvp9"}));
    let (code, msg) = error_of(&node.call("ADD", &pod, &conf));
    assert_eq!(code, 100, "{msg}");
    assert!(msg.contains("dp0Mvp9"), "{msg}");
    assert_eq!(node.host.links().len(), before);
    assert_eq!(pod.ns.links().len(), 1, "only lo");
}

#[test]
fn failed_add_gives_the_device_plugins_macvtap_back_unchanged() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-dpback");
    let pod = node.pod("mvt-dpback");
    let dp = node.device_plugin_macvtap("dp0Mvp3", &[]);
    // Everything is applied, then the IPAM plugin refuses its config.
    let conf = config(
        "1.0.0",
        json!({"deviceID": "dp0Mvp3", "mtu": 1300, "promiscMode": true,
               "ipam": static_ipam("not-an-address")}),
    );
    let out = node.call_with(
        "ADD",
        &pod,
        &conf,
        &[("CNI_ARGS", "IgnoreUnknown=1;MAC=02:aa:bb:cc:dd:03")],
    );
    let (_, msg) = error_of(&out);
    assert!(msg.contains("IPAM"), "{msg}");

    let back = node
        .host
        .link("dp0Mvp3")
        .expect("back in the host under its name");
    assert_eq!(back.mac(), dp.mac());
    assert_eq!(back.mtu, dp.mtu);
    assert_eq!(back.promiscuity, dp.promiscuity);
    assert!(back.is_up());
    assert!(pod.macvtaps().is_empty());
}
