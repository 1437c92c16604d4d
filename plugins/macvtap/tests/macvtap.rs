//! macvtap in real network namespaces: both modes, /dev/tapN, MAC and MTU, traffic, rollback,
//! DEL, CHECK, STATUS and GC.

mod common;

use std::net::IpAddr;

use common::{
    config, error_of, rare_index, stdout_json, tap_device, tap_owner, tap_path, with_prev,
    FakeIpam, NoLeftoverNode, Node, Pod, IFNAME, PARENT, PARENT_PEER,
};
use netns_tests::{expect_success, host_local_leases, Link, TempDir};
use serde_json::{json, Value};

fn standalone(fields: Value) -> Value {
    let mut conf = config("1.0.0", json!({"master": PARENT}));
    if let (Some(c), Some(f)) = (conf.as_object_mut(), fields.as_object()) {
        c.extend(f.clone());
    }
    conf
}

fn static_ipam(address: &str) -> Value {
    json!({"type": "static", "addresses": [{"address": address}]})
}

fn index_of(pod: &Pod) -> u32 {
    pod.iface().expect("the macvtap is in the pod").ifindex
}

fn mode_of(pod: &Pod) -> String {
    let link = pod.iface().expect("the macvtap is in the pod");
    let info = link.linkinfo.expect("ip -d reports link info");
    info.info_data.expect("macvtap data")["mode"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn two_macvtaps_on_one_parent_in_bridge_mode_reach_each_other() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-ping");
    let (a, b) = (node.pod("mvt-ping-a"), node.pod("mvt-ping-b"));
    let conf_a = standalone(json!({"mode": "bridge", "ipam": static_ipam("10.250.0.1/24")}));
    let conf_b = standalone(json!({"mode": "bridge", "ipam": static_ipam("10.250.0.2/24")}));
    expect_success(&node.call("ADD", &a, &conf_a), "ADD a");
    expect_success(&node.call("ADD", &b, &conf_b), "ADD b");

    let b_addr: IpAddr = "10.250.0.2".parse().expect("address");
    let a_addr: IpAddr = "10.250.0.1".parse().expect("address");
    expect_success(&a.ns.ping(b_addr), "ping from a to b");
    expect_success(&b.ns.ping(a_addr), "ping from b to a");
}

#[test]
fn add_creates_a_macvtap_on_master_in_the_configured_mode_named_ifname() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-create");
    let pod = node.pod("mvt-create");
    let out = node.call("ADD", &pod, &standalone(json!({"mode": "vepa"})));
    expect_success(&out, "ADD");

    assert_eq!(pod.macvtaps(), vec![IFNAME.to_string()]);
    assert_eq!(mode_of(&pod), "vepa");
    let parent = node.host.link(PARENT).expect("parent");
    let link = pod.iface().expect("net1");
    assert_eq!(
        link.other["link_index"],
        json!(parent.ifindex),
        "not on master"
    );
    assert!(link.is_up());
    assert!(
        node.host_macvtaps().is_empty(),
        "left in the host namespace"
    );
    let result = stdout_json(&out);
    assert_eq!(result["interfaces"][0]["name"], IFNAME);
    assert_eq!(result["interfaces"][0]["sandbox"], pod.ns.path_str());
    assert_eq!(
        result["interfaces"][0]["mac"].as_str(),
        link.mac().as_deref()
    );
}

#[test]
fn mode_defaults_to_bridge() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-defmode");
    let pod = node.pod("mvt-defmode");
    expect_success(&node.call("ADD", &pod, &standalone(json!({}))), "ADD");
    assert_eq!(mode_of(&pod), "bridge");
}

#[test]
fn dev_tap_node_gets_the_configured_owner_and_group() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-owner");
    let pod = node.pod("mvt-owner");
    let conf = standalone(json!({"owner": 1234, "group": 4321}));
    expect_success(&node.call("ADD", &pod, &conf), "ADD");
    let index = index_of(&pod);
    assert_eq!(
        tap_device(index),
        Some(format!("{IFNAME}/macvtap/tap{index}")),
        "{} is not the node of the pod's macvtap",
        tap_path(index).display()
    );
    assert_eq!(tap_owner(index), Some((1234, 4321)));
}

#[test]
fn dev_tap_node_owner_and_group_default_to_kubevirts_qemu_107() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-qemu");
    let pod = node.pod("mvt-qemu");
    expect_success(&node.call("ADD", &pod, &standalone(json!({}))), "ADD");
    assert_eq!(tap_owner(index_of(&pod)), Some((107, 107)));
}

#[test]
fn mac_from_cni_args_and_mtu_are_applied_and_reported() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-macmtu");
    let pod = node.pod("mvt-macmtu");
    let conf = config("1.1.0", json!({"master": PARENT, "mtu": 1400}));
    let out = node.call_with(
        "ADD",
        &pod,
        &conf,
        &[("CNI_ARGS", "IgnoreUnknown=1;MAC=02:aa:bb:cc:dd:01")],
    );
    expect_success(&out, "ADD");
    let link = pod.iface().expect("net1");
    assert_eq!(link.mac().as_deref(), Some("02:aa:bb:cc:dd:01"));
    assert_eq!(link.mtu, Some(1400));
    let result = stdout_json(&out);
    assert_eq!(result["interfaces"][0]["mac"], "02:aa:bb:cc:dd:01");
    assert_eq!(result["interfaces"][0]["mtu"], 1400);
}

#[test]
fn mac_from_runtime_config_wins_over_cni_args() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-rcmac");
    let pod = node.pod("mvt-rcmac");
    let conf = standalone(json!({"runtimeConfig": {"mac": "02:aa:bb:cc:dd:02"}}));
    let out = node.call_with(
        "ADD",
        &pod,
        &conf,
        &[("CNI_ARGS", "IgnoreUnknown=1;MAC=02:aa:bb:cc:dd:01")],
    );
    expect_success(&out, "ADD");
    let link = pod.iface().expect("net1");
    assert_eq!(link.mac().as_deref(), Some("02:aa:bb:cc:dd:02"));
}

#[test]
fn promisc_mode_makes_the_macvtap_promiscuous() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-promisc");
    let pod = node.pod("mvt-promisc");
    expect_success(
        &node.call("ADD", &pod, &standalone(json!({"promiscMode": true}))),
        "ADD",
    );
    assert!(pod.iface().expect("net1").promiscuity.unwrap_or(0) > 0);
}

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

#[test]
fn failed_ipam_add_deletes_the_macvtap_it_created() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-ipamfail");
    let pod = node.pod("mvt-ipamfail");
    let conf = standalone(json!({"ipam": static_ipam("not-an-address")}));
    error_of(&node.call("ADD", &pod, &conf));
    assert!(node.host_macvtaps().is_empty());
    assert!(pod.macvtaps().is_empty());
}

#[test]
fn failed_add_after_ipam_releases_the_lease_and_deletes_the_macvtap() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-lease");
    let pod = node.pod("mvt-lease");
    let data = TempDir::new("mvt-lease-ipam");
    // host-local leases an address, then the kernel refuses a route via an off-link gateway.
    let conf = standalone(json!({"ipam": {
        "type": "host-local", "subnet": "10.251.0.0/24", "dataDir": data.path(),
        "routes": [{"dst": "10.252.0.0/16", "gw": "10.253.0.1"}]}}));
    let (_, msg) = error_of(&node.call("ADD", &pod, &conf));
    assert!(msg.contains("route"), "{msg}");
    assert!(host_local_leases(data.path(), "macvtaptest").is_empty());
    assert!(node.host_macvtaps().is_empty());
    assert!(pod.macvtaps().is_empty());
}

#[test]
fn add_refuses_an_existing_ifname_and_leaves_it_alone() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-exists");
    let pod = node.pod("mvt-exists");
    pod.ns.exec_ok(
        "ip",
        &[
            "link", "add", IFNAME, "type", "veth", "peer", "name", "other0",
        ],
    );
    let (_, msg) = error_of(&node.call("ADD", &pod, &standalone(json!({}))));
    assert!(msg.contains("already exists"), "{msg}");
    assert_eq!(
        pod.iface()
            .and_then(|l| l.kind().map(str::to_string))
            .as_deref(),
        Some("veth")
    );
    assert!(node.host_macvtaps().is_empty());
}

#[test]
fn l2_config_at_0_2_0_is_refused_before_anything_changes() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-020");
    let pod = node.pod("mvt-020");
    let mut conf = standalone(json!({}));
    conf["cniVersion"] = json!("0.2.0");
    let (code, _) = error_of(&node.call("ADD", &pod, &conf));
    assert_eq!(code, 1);
    assert!(node.host_macvtaps().is_empty());
    assert!(pod.macvtaps().is_empty());
}

#[test]
fn del_deletes_the_macvtap_and_its_node_and_succeeds_twice() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-del");
    let pod = node.pod("mvt-del");
    let conf = standalone(json!({}));
    let add = node.call("ADD", &pod, &conf);
    expect_success(&add, "ADD");
    let index = index_of(&pod);
    expect_success(&node.call("DEL", &pod, &with_prev(&conf, &add)), "DEL");
    assert!(pod.macvtaps().is_empty());
    assert!(tap_device(index).is_none(), "/dev/tap{index} is left");
    expect_success(&node.call("DEL", &pod, &conf), "second DEL");
}

#[test]
fn del_succeeds_when_the_netns_is_gone_and_releases_the_lease() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-delgone");
    let pod = node.pod("mvt-delgone");
    let data = TempDir::new("mvt-delgone-ipam");
    let conf = standalone(json!({"ipam": {
        "type": "host-local", "subnet": "10.251.1.0/24", "dataDir": data.path()}}));
    expect_success(&node.call("ADD", &pod, &conf), "ADD");
    assert_eq!(host_local_leases(data.path(), "macvtaptest").len(), 1);
    let Pod { ns, container_id } = pod;
    let path = ns.path_str().to_string();
    ns.delete().expect("netns deleted");

    let out = node.call_for("DEL", &container_id, &path, &conf, &[]);
    expect_success(&out, "DEL after the netns was deleted");
    assert!(host_local_leases(data.path(), "macvtaptest").is_empty());
    expect_success(
        &node.call_for("DEL", &container_id, "", &conf, &[]),
        "DEL without a netns",
    );
}

#[test]
fn del_removes_a_macvtap_a_crashed_add_left_in_the_host() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-crash");
    let pod = node.pod("mvt-crash");
    let temp = macvtap::macvtap::temp_name(&pod.container_id, IFNAME);
    node.host.netns().exec_ok(
        "ip",
        &["link", "add", &temp, "link", PARENT, "type", "macvtap"],
    );
    expect_success(&node.call("DEL", &pod, &standalone(json!({}))), "DEL");
    assert!(node.host_macvtaps().is_empty());
}

#[test]
fn del_leaves_an_interface_that_is_not_a_macvtap_alone() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-delveth");
    let pod = node.pod("mvt-delveth");
    pod.ns.exec_ok(
        "ip",
        &[
            "link", "add", IFNAME, "type", "veth", "peer", "name", "other0",
        ],
    );
    expect_success(&node.call("DEL", &pod, &standalone(json!({}))), "DEL");
    assert!(pod.iface().is_some());
}

/// ADD (with an address), a CHECK that passes, `drift` behind the plugin's back, then the
/// CHECK error message.
fn check_after(tag: &str, fields: Value, drift: impl FnOnce(&Pod, u32)) -> String {
    let node = Node::new(tag);
    let pod = node.pod(tag);
    let mut conf = standalone(fields);
    conf["ipam"] = static_ipam("10.250.1.1/24");
    let add = node.call("ADD", &pod, &conf);
    expect_success(&add, "ADD");
    let check = with_prev(&conf, &add);
    expect_success(&node.call("CHECK", &pod, &check), "CHECK right after ADD");
    drift(&pod, index_of_or_zero(&pod));
    let (code, msg) = error_of(&node.call("CHECK", &pod, &check));
    assert_eq!(code, 100, "{msg}");
    msg
}

fn index_of_or_zero(pod: &Pod) -> u32 {
    pod.iface().map_or(0, |l| l.ifindex)
}

#[test]
fn check_detects_a_changed_mtu() {
    netns_tests::skip_unless_root!();
    let msg = check_after("mvt-chkmtu", json!({"mtu": 1400}), |pod, _| {
        pod.ns
            .exec_ok("ip", &["link", "set", IFNAME, "mtu", "1300"]);
    });
    assert!(msg.contains("mtu"), "{msg}");
}

#[test]
fn check_detects_a_changed_mac() {
    netns_tests::skip_unless_root!();
    let msg = check_after("mvt-chkmac", json!({}), |pod, _| {
        pod.ns.exec_ok(
            "ip",
            &["link", "set", IFNAME, "address", "02:00:00:00:00:99"],
        );
    });
    assert!(msg.contains("mac"), "{msg}");
}

#[test]
fn check_detects_a_removed_address() {
    netns_tests::skip_unless_root!();
    let msg = check_after("mvt-chkaddr", json!({}), |pod, _| {
        pod.ns
            .exec_ok("ip", &["addr", "del", "10.250.1.1/24", "dev", IFNAME]);
    });
    assert!(msg.contains("10.250.1.1"), "{msg}");
}

#[test]
fn check_detects_a_dev_tap_node_given_to_someone_else() {
    netns_tests::skip_unless_root!();
    let msg = check_after("mvt-chkown", json!({}), |_, index| {
        std::os::unix::fs::chown(tap_path(index), Some(0), Some(0)).expect("chown");
    });
    assert!(msg.contains("owned by 0:0"), "{msg}");
}

#[test]
fn check_detects_a_missing_interface() {
    netns_tests::skip_unless_root!();
    let msg = check_after("mvt-chkgone", json!({}), |pod, _| {
        pod.ns.exec_ok("ip", &["link", "del", IFNAME]);
    });
    assert!(msg.contains("does not exist"), "{msg}");
}

#[test]
fn check_detects_promiscuous_mode_turned_off() {
    netns_tests::skip_unless_root!();
    let msg = check_after("mvt-chkpromisc", json!({"promiscMode": true}), |pod, _| {
        pod.ns
            .exec_ok("ip", &["link", "set", IFNAME, "promisc", "off"]);
    });
    assert!(msg.contains("promiscuous"), "{msg}");
}

#[test]
fn status_reports_50_when_master_is_missing() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-status");
    let conf = config("1.1.0", json!({"master": PARENT}));
    expect_success(
        &node.call_runtime_wide("STATUS", &conf, common::IPAM_DIR),
        "STATUS",
    );
    let conf = config("1.1.0", json!({"master": "nosuchlink0"}));
    let (code, msg) = error_of(&node.call_runtime_wide("STATUS", &conf, common::IPAM_DIR));
    assert_eq!(code, 50, "{msg}");
}

#[test]
fn status_and_gc_are_forwarded_to_ipam() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-fwd");
    let ipam = FakeIpam::new("mvt-fwd", "10.250.2.1/24");
    let mut conf = config(
        "1.1.0",
        json!({"master": PARENT, "ipam": {"type": "fakeipam"}}),
    );
    expect_success(
        &node.call_runtime_wide("STATUS", &conf, &ipam.path()),
        "STATUS",
    );
    conf["cni.dev/valid-attachments"] = json!([]);
    let out = node.call_runtime_wide("GC", &conf, &ipam.path());
    expect_success(&out, "GC");
    assert!(out.stdout.is_empty());
    assert_eq!(ipam.verbs(), vec!["STATUS", "GC"]);
}

#[test]
fn add_at_1_1_0_puts_the_ipam_address_on_the_macvtap() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-ipam11");
    let pod = node.pod("mvt-ipam11");
    let ipam = FakeIpam::new("mvt-ipam11", "10.250.3.1/24");
    let conf = config(
        "1.1.0",
        json!({"master": PARENT, "ipam": {"type": "fakeipam"}}),
    );
    let out = node.call_with("ADD", &pod, &conf, &[("CNI_PATH", &ipam.path())]);
    expect_success(&out, "ADD");
    assert_eq!(pod.ns.addresses(IFNAME), vec!["10.250.3.1/24".to_string()]);
    let result = stdout_json(&out);
    assert_eq!(result["ips"][0]["address"], "10.250.3.1/24");
    assert_eq!(result["ips"][0]["interface"], 0);
}

/// What macvtap-cni's ADD leaves, done by hand: today's device plugin made `mvt<hash>` in the
/// host; macvtap-cni moved it into the pod, renamed it to CNI_IFNAME, brought it up and gave
/// /dev/tapN to qemu (107). No file anywhere. The macvtap gets a rare ifindex, as on a node
/// where no other namespace holds /dev/tapN: devtmpfs then makes the node, and it does not
/// replace one that an earlier test's namespace, deleted without DEL, left at a small index.
fn attach_the_macvtap_cni_way(node: &Node, pod: &Pod, device_id: &str, index: u32) -> Link {
    let hashed = macvtap::macvtap::device_plugin_name(device_id);
    let dp = node.device_plugin_macvtap(&hashed, &["index", &index.to_string()]);
    assert_eq!(
        tap_device(index),
        Some(format!("{hashed}/macvtap/tap{index}")),
        "devtmpfs made /dev/tap{index} for the device plugin's macvtap"
    );
    node.host
        .netns()
        .exec_ok("ip", &["link", "set", &hashed, "netns", pod.ns.name()]);
    pod.ns
        .exec_ok("ip", &["link", "set", &hashed, "name", IFNAME, "up"]);
    std::os::unix::fs::chown(tap_path(dp.ifindex), Some(107), Some(107)).expect("chown /dev/tapN");
    pod.iface().expect("net1 in the pod")
}

/// After a node switches from macvtap-cni to this plugin: CHECK and DEL of a pod macvtap-cni
/// attached work, with its prevResult (spec 0.4.0, the newest macvtap-cni speaks), and leave
/// nothing: no macvtap in the pod or the host, no /dev/tapN.
#[test]
fn check_and_del_of_an_attachment_macvtap_cni_made_leave_nothing() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-fromgo");
    let pod = node.pod("mvt-fromgo");
    let id = "dataplaneMvp3";
    let index = rare_index(0);
    let _cleanup = NoLeftoverNode(index);
    let link = attach_the_macvtap_cni_way(&node, &pod, id, index);
    let mut conf = config("0.4.0", json!({"deviceID": id}));
    conf["prevResult"] = json!({
        "cniVersion": "0.4.0",
        "interfaces": [{"name": IFNAME, "mac": link.mac(), "sandbox": pod.ns.path_str()}],
        "dns": {}
    });
    expect_success(&node.call("CHECK", &pod, &conf), "CHECK");
    expect_success(&node.call("DEL", &pod, &conf), "DEL");
    assert!(pod.macvtaps().is_empty());
    assert!(node.host_macvtaps().is_empty());
    assert!(
        tap_device(link.ifindex).is_none(),
        "/dev/tap{} left",
        link.ifindex
    );
}

/// After a node switches back: macvtap-cni's DEL (`ip link del CNI_IFNAME` in the pod) of a pod
/// this plugin attached leaves nothing either.
#[test]
fn macvtap_cni_del_of_an_attachment_we_made_leaves_nothing() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-togo");
    let pod = node.pod("mvt-togo");
    let id = "dataplaneMvp4";
    let dp = node.device_plugin_macvtap(&macvtap::macvtap::device_plugin_name(id), &[]);
    expect_success(
        &node.call("ADD", &pod, &config("0.4.0", json!({"deviceID": id}))),
        "ADD",
    );
    pod.ns.exec_ok("ip", &["link", "del", IFNAME]);
    assert!(pod.macvtaps().is_empty());
    assert!(node.host_macvtaps().is_empty());
    assert!(
        tap_device(dp.ifindex).is_none(),
        "/dev/tap{} left",
        dp.ifindex
    );
}
