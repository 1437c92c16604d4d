//! A failed ADD's rollback, what ADD refuses, DEL, CHECK, STATUS and GC.

use super::*;

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
