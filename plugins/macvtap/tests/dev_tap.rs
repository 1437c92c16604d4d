//! /dev/tapN when its name is taken. Ifindexes are per namespace and /dev is not, so a macvtap
//! in another namespace with the same index holds the node devtmpfs would have made for ours.

mod common;

use std::thread;
use std::time::Duration;

use common::{
    config, error_of, rare_index, stale_node, tap_device, tap_owner, tap_path, NoLeftoverNode,
    Node, IPAM_DIR, PARENT,
};
use netns_tests::{expect_success, Netns};
use serde_json::json;

/// Another pod's macvtap with index `index`, in a namespace of its own: it holds
/// /dev/tap<index>.
fn foreign_macvtap(tag: &str, index: u32) -> Netns {
    let ns = Netns::new(tag);
    ns.exec_ok(
        "ip",
        &["link", "add", "p0", "type", "veth", "peer", "name", "p1"],
    );
    ns.exec_ok(
        "ip",
        &[
            "link",
            "add",
            "fmv0",
            "index",
            &index.to_string(),
            "link",
            "p0",
            "type",
            "macvtap",
        ],
    );
    ns
}

#[test]
fn add_waits_for_a_dying_namespace_to_release_dev_tap_then_makes_the_node() {
    netns_tests::skip_unless_root!();
    let index = rare_index(0);
    let _cleanup = NoLeftoverNode(index);
    let node = Node::new("mvt-tapwait");
    let pod = node.pod("mvt-tapwait");
    let foreign = foreign_macvtap("mvt-tapwait-other", index);
    assert_eq!(tap_device(index), Some(format!("fmv0/macvtap/tap{index}")));
    node.device_plugin_macvtap("dp0Mvp5", &["index", &index.to_string()]);

    let deleter = thread::spawn(move || {
        thread::sleep(Duration::from_millis(300));
        foreign.delete().expect("delete the other namespace");
    });
    let conf = config(
        "1.1.0",
        json!({"deviceID": "dp0Mvp5", "owner": 2000, "group": 3000}),
    );
    let out = node.call("ADD", &pod, &conf);
    deleter.join().expect("the deleting thread");
    expect_success(&out, "ADD");
    assert_eq!(
        tap_device(index),
        Some(format!("net1/macvtap/tap{index}")),
        "the node is not the pod's macvtap's"
    );
    assert_eq!(tap_owner(index), Some((2000, 3000)));

    // devtmpfs does not remove a node it did not make: DEL does.
    expect_success(&node.call("DEL", &pod, &conf), "DEL");
    assert!(!tap_path(index).exists(), "the hand-made node is left");
}

#[test]
fn add_fails_with_code_11_while_another_namespace_holds_dev_tap_and_gives_the_device_back() {
    netns_tests::skip_unless_root!();
    let index = rare_index(1);
    let _cleanup = NoLeftoverNode(index);
    let node = Node::new("mvt-tapheld");
    let pod = node.pod("mvt-tapheld");
    let _foreign = foreign_macvtap("mvt-tapheld-other", index);
    node.device_plugin_macvtap("dp0Mvp6", &["index", &index.to_string()]);

    let conf = config("1.1.0", json!({"deviceID": "dp0Mvp6"}));
    let (code, msg) = error_of(&node.call("ADD", &pod, &conf));
    assert_eq!(code, 11, "{msg}");
    assert!(msg.contains(&format!("/dev/tap{index}")), "{msg}");
    let back = node.host.link("dp0Mvp6").expect("given back to the host");
    assert_eq!(back.ifindex, index);
    assert!(pod.macvtaps().is_empty());
    assert_eq!(
        tap_device(index),
        Some(format!("fmv0/macvtap/tap{index}")),
        "the other namespace's node was touched"
    );
}

#[test]
fn add_replaces_a_dev_tap_node_left_for_a_device_that_is_gone() {
    netns_tests::skip_unless_root!();
    let index = rare_index(2);
    let _cleanup = NoLeftoverNode(index);
    let node = Node::new("mvt-tapstale");
    let pod = node.pod("mvt-tapstale");
    load_the_macvtap_driver(&node);
    stale_node(index);
    node.device_plugin_macvtap("dp0Mvp7", &["index", &index.to_string()]);

    let conf = config("1.1.0", json!({"deviceID": "dp0Mvp7"}));
    expect_success(&node.call("ADD", &pod, &conf), "ADD");
    assert_eq!(tap_device(index), Some(format!("net1/macvtap/tap{index}")));
    expect_success(&node.call("DEL", &pod, &conf), "DEL");
    assert!(!tap_path(index).exists());
}

/// GC finds what no attachment holds any more: a node made by hand whose macvtap died with its
/// namespace before DEL. A node of a live macvtap stays.
#[test]
fn gc_removes_dev_tap_nodes_whose_device_is_gone_and_keeps_live_ones() {
    netns_tests::skip_unless_root!();
    let (live, stale) = (rare_index(3), rare_index(4));
    let _cleanup = (NoLeftoverNode(live), NoLeftoverNode(stale));
    let node = Node::new("mvt-tapgc");
    node.device_plugin_macvtap("dp0Mvp8", &["index", &live.to_string()]);
    stale_node(stale);

    let mut conf = config("1.1.0", json!({"deviceID": "dp0Mvp8"}));
    conf["cni.dev/valid-attachments"] = json!([]);
    expect_success(&node.call_runtime_wide("GC", &conf, IPAM_DIR), "GC");
    assert!(!tap_path(stale).exists(), "the stale node is left");
    assert_eq!(tap_device(live), Some(format!("dp0Mvp8/macvtap/tap{live}")));
}

/// DEL of a pod whose namespace is already gone cannot find its macvtap, which died with the
/// namespace; the node made for it by hand goes all the same.
#[test]
fn del_of_a_namespace_that_is_gone_removes_dev_tap_nodes_whose_device_is_gone() {
    netns_tests::skip_unless_root!();
    let stale = rare_index(5);
    let _cleanup = NoLeftoverNode(stale);
    let node = Node::new("mvt-tapdelgone");
    let pod = node.pod("mvt-tapdelgone");
    load_the_macvtap_driver(&node);
    stale_node(stale);
    let conf = config("1.1.0", json!({"master": PARENT}));
    let path = pod.ns.path_str().to_string();
    let container_id = pod.container_id.clone();
    pod.ns.delete().expect("netns deleted");

    let out = node.call_for("DEL", &container_id, &path, &conf, &[]);
    expect_success(&out, "DEL after the netns was deleted");
    assert!(!tap_path(stale).exists(), "the stale node is left");
}

/// The driver's major is in /proc/devices once a macvtap has existed.
fn load_the_macvtap_driver(node: &Node) {
    let ns = node.host.netns();
    ns.exec_ok(
        "ip",
        &["link", "add", "warm0", "link", PARENT, "type", "macvtap"],
    );
    ns.exec_ok("ip", &["link", "del", "warm0"]);
}
