//! ADD: the macvtap on its master, its mode, its /dev/tap node's owner, MAC, MTU and
//! promiscuous mode, and the address at 1.1.0.

use super::*;

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
