//! macvtap in real network namespaces: both modes, /dev/tapN, MAC and MTU, traffic, rollback,
//! DEL, CHECK, STATUS and GC.

#[path = "../common/mod.rs"]
mod common;

mod attach;
mod device_id;
mod lifecycle;
mod switching;

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
