//! The ovs plugin against a real ovsdb-server and ovs-vswitchd (userspace datapath) running in a
//! throwaway host namespace: ports, VLANs and traffic, DEL, GC, STATUS, rollback, bad configs.

#[path = "../common/mod.rs"]
mod common;

mod lifecycle;
mod ports;
mod refusals;

use std::time::{Duration, Instant};

use common::{
    error_code, error_msg, host_veth, static_ipam, stdout_json, OvsNode, PluginNode, Pod, BRIDGE,
    IFNAME, NETWORK,
};
use netns_tests::{expect_failure, expect_success, wait_for, TempDir};
use serde_json::{json, Value};

/// Pings until it works (the first packets may race ovs-vswitchd's datapath setup).
fn reaches(from: &Pod, ip: &str) -> bool {
    wait_for(Duration::from_secs(10), || from.ping_once(ip))
}
