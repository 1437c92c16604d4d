//! Through libcni, the code path of containerd, CRI-O and Multus: the result cache feeds CHECK
//! and DEL their prevResult, and the `mac` capability arrives as runtimeConfig.

mod common;

use std::path::Path;

use common::{Node, IFNAME, PARENT};
use netns_tests::{expect_success, LibcniAttachment, PluginDir, TempDir};
use serde_json::json;

#[test]
fn libcni_adds_checks_and_deletes_with_the_mac_capability() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-libcni");
    let pod = node.pod("mvt-libcni");
    let dir = TempDir::new("mvt-libcni");
    let plugins = PluginDir::new("mvt-libcni")
        .with("macvtap", Path::new(env!("CARGO_BIN_EXE_macvtap")))
        .with_go(&["static"]);
    let conflist = dir.write_json(
        "macvtap.conflist",
        &json!({
            "cniVersion": "1.0.0",
            "name": "mvtnet",
            "plugins": [{
                "type": "macvtap",
                "master": PARENT,
                "mtu": 1400,
                "capabilities": {"mac": true},
                "ipam": {"type": "static", "addresses": [{"address": "10.250.5.1/24"}]}
            }]
        }),
    );
    let attachment = LibcniAttachment::new(
        &conflist,
        &[plugins.path()],
        &dir.join("cache"),
        pod.ns.path_str(),
        &pod.container_id,
        IFNAME,
    )
    .in_sandbox(&node.host)
    .cap_args(json!({"mac": "02:aa:bb:cc:dd:07"}));

    let result = attachment.add_ok();
    assert_eq!(result["interfaces"][0]["mac"], "02:aa:bb:cc:dd:07");
    let link = pod.iface().expect("net1");
    assert_eq!(link.mac().as_deref(), Some("02:aa:bb:cc:dd:07"));
    assert_eq!(link.mtu, Some(1400));
    assert_eq!(pod.ns.addresses(IFNAME), vec!["10.250.5.1/24".to_string()]);

    expect_success(&attachment.check(), "libcni CHECK");
    expect_success(&attachment.del(), "libcni DEL");
    assert!(pod.macvtaps().is_empty());
    expect_success(&attachment.del(), "second libcni DEL");
}
