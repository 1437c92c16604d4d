//! The Go bridge's VLAN ports beside ours, inside the guest: what each leaves on a port, and
//! our CHECK and DEL of its attachments. The Go bridge is `$GO_PLUGINS_DIR`'s (1.9.1 in
//! `scripts/test`, shared with the guest), else Debian's 1.1.1.

use super::super::common::*;
use super::port_vlans;
use netns_tests::real_kernel_tier::require_guest;
use netns_tests::Release;
use serde_json::json;

/// The first release of the Go bridge that reads `preserveDefaultVlan`.
const PRESERVE_DEFAULT_VLAN_SINCE: Release = Release::new(1, 3, 0);

#[test]
#[ignore = "runs inside the real-kernel guest, driven by vlan_tests_pass_on_a_real_kernel"]
fn the_default_vlan_stays_on_a_port_exactly_when_it_does_with_the_go_bridge() {
    require_guest();
    let release = go_release();
    assert!(
        release >= PRESERVE_DEFAULT_VLAN_SINCE,
        "the Go bridge {release} in {} has no preserveDefaultVlan to compare with: set \
         GO_PLUGINS_DIR to 1.9.1's (scripts/go-plugins-1.9.1 prints it)",
        go_dir().display()
    );
    let node = Node::new("rk-pdv");
    // Unset is false in both: the Go plugin's code, not its README (which says true).
    let taken_off = vec![(100, true, true)];
    let kept = vec![(1, false, true), (100, true, true)];
    for (i, (preserve, want)) in [
        (None, &taken_off),
        (Some(false), &taken_off),
        (Some(true), &kept),
    ]
    .into_iter()
    .enumerate()
    {
        let mut conf = config("brpdv", json!({"vlan": 100, "ipam": {}}));
        if let Some(preserve) = preserve {
            conf["preserveDefaultVlan"] = json!(preserve);
        }
        let (go_pod, our_pod) = (node.pod(&format!("go{i}")), node.pod(&format!("our{i}")));
        let go = parse_ok(&node.call_go("ADD", &go_pod, &conf), "Go ADD");
        let go = port_vlans(&node, &host_veth(&go));
        let ours = port_vlans(&node, &host_veth(&node.add(&our_pod, &conf)));
        assert_eq!(
            ours, go,
            "preserveDefaultVlan {preserve:?}: ours, then the Go bridge {release}"
        );
        assert_eq!(&ours, want, "preserveDefaultVlan {preserve:?}");
    }
}

#[test]
#[ignore = "runs inside the real-kernel guest, driven by vlan_tests_pass_on_a_real_kernel"]
fn our_check_and_del_work_on_a_vlan_attachment_of_the_go_bridge() {
    require_guest();
    // A Go port that keeps VID 1, which our config would take off: every port of Debian's 1.1.1
    // (it predates preserveDefaultVlan), and of later releases when told to.
    let node = Node::new("rk-govlan");
    let conf = config(
        "brgv",
        json!({"vlan": 100, "macspoofchk": true, "ipam": {}}),
    );
    let mut go_conf = conf.clone();
    go_conf["preserveDefaultVlan"] = json!(true);
    let a = node.pod("a");
    let out = node.call_go("ADD", &a, &go_conf);
    let result = parse_ok(&out, "Go ADD");
    let port = host_veth(&result);
    assert_eq!(
        port_vlans(&node, &port),
        vec![(1, false, true), (100, true, true)]
    );
    let out = node.check(&a, &conf, &result);
    assert!(
        out.status.success(),
        "{}",
        netns_tests::describe_output(&out)
    );
    // A port that lost its VLAN still fails.
    node.host
        .netns()
        .exec_ok("bridge", &["vlan", "del", "dev", &port, "vid", "100"]);
    assert_eq!(error_code(&node.check(&a, &conf, &result)), 100);
    node.del(&a, &conf);
    node.host
        .assert_no_new_veths("after our DEL of the Go attachment");
    assert!(
        !node.ruleset().contains("cni-br-iface-"),
        "{}",
        node.ruleset()
    );
}
