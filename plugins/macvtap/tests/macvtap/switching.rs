//! Attachments macvtap-cni made and ours, each taken down by the other.

use super::*;

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
