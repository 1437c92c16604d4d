//! The ovs plugin's side of its tests: a private Open vSwitch node from `netns_tests::openvswitch`, plus
//! what needs the plugin itself (its binary, its cache paths, OVSDB through the client it uses).

#![allow(dead_code)] // each test binary uses a different part of this module

pub mod ovs_cni;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

pub use netns_tests::openvswitch::{OvsNode, Pod, BRIDGE, IFNAME, NETWORK};
use netns_tests::{describe_output, expect_success, run_plugin_in};
use serde_json::{json, Value};

/// The plugin binary under test.
pub fn plugin_dir() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_ovs"))
        .parent()
        .expect("the binary lives in a directory")
}

/// CNI_PATH: the plugin's directory, then Debian's IPAM plugins.
pub fn cni_path() -> String {
    format!("{}:/usr/lib/cni", plugin_dir().display())
}

/// What the plugin's tests do with a node beyond running OVS.
pub trait PluginNode {
    /// ovs-cni's cache file of an attachment, in the current directory or the old one.
    fn cache_file(&self, container_id: &str, old: bool) -> PathBuf;

    /// A client of the node's OVSDB.
    fn ovsdb(&self) -> ovsdb::Client;

    /// `external_ids` of a port, all of them.
    fn port_external_ids(&self, port: &str) -> BTreeMap<String, String>;

    /// Calls the plugin inside the host namespace the way a runtime does.
    fn call(&self, verb: &str, pod: &Pod, conf: &Value) -> Output;

    fn call_env(
        &self,
        verb: &str,
        container_id: &str,
        netns: &str,
        conf: &Value,
        extra: &[(&str, &str)],
    ) -> Output;

    /// ADD that must succeed; returns the result.
    fn add_ok(&self, pod: &Pod, conf: &Value) -> Value;
}

impl PluginNode for OvsNode {
    fn cache_file(&self, container_id: &str, old: bool) -> PathBuf {
        let dir = if old {
            ovs::cache::OLD_CACHE_DIR
        } else {
            ovs::cache::CACHE_DIR
        };
        Path::new(&self.cache_root())
            .join(dir)
            .join(format!("{container_id}-{IFNAME}"))
    }

    fn ovsdb(&self) -> ovsdb::Client {
        let endpoint = ovsdb::Endpoint::parse(&self.socket()).expect("endpoint");
        ovsdb::Client::connect(&endpoint, Duration::from_secs(10)).expect("connect to OVSDB")
    }

    fn port_external_ids(&self, port: &str) -> BTreeMap<String, String> {
        let ops = [
            json!({"op": "select", "table": "Port", "where": [["name", "==", port]],
                          "columns": ["external_ids"]}),
        ];
        let results = self
            .ovsdb()
            .transact(&ops, Duration::ZERO)
            .expect("select")
            .into_results("select")
            .expect("results");
        ovsdb::rows(&results[0])
            .first()
            .map(|r| ovsdb::map_items(&r["external_ids"]))
            .unwrap_or_default()
    }

    fn call(&self, verb: &str, pod: &Pod, conf: &Value) -> Output {
        self.call_env(verb, &pod.container_id, pod.ns.path_str(), conf, &[])
    }

    fn call_env(
        &self,
        verb: &str,
        container_id: &str,
        netns: &str,
        conf: &Value,
        extra: &[(&str, &str)],
    ) -> Output {
        let path = cni_path();
        let root = self.cache_root();
        let mut env = vec![
            ("CNI_COMMAND", verb),
            ("CNI_CONTAINERID", container_id),
            ("CNI_NETNS", netns),
            ("CNI_IFNAME", IFNAME),
            ("CNI_PATH", path.as_str()),
            (ovs::cache::ROOT_ENV, root.as_str()),
        ];
        env.extend_from_slice(extra);
        run_plugin_in(&self.host, plugin_dir(), "ovs", &env, &conf.to_string())
    }

    fn add_ok(&self, pod: &Pod, conf: &Value) -> Value {
        let out = self.call("ADD", pod, conf);
        let stdout = expect_success(&out, "ADD");
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("ADD result is not JSON: {e}"))
    }
}

/// The host veth name the plugin derives for `pod`'s `net1`.
pub fn host_veth(pod: &Pod) -> String {
    cni_common::naming::host_veth_name(&pod.container_id, IFNAME)
}

/// A static IPAM section with one address (Debian's static plugin speaks up to 1.0.0).
pub fn static_ipam(address: &str) -> Value {
    json!({"type": "static", "addresses": [{"address": address}]})
}

pub fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", describe_output(out)))
}

/// The error code of a failed call.
pub fn error_code(out: &Output) -> u64 {
    assert!(
        !out.status.success(),
        "expected a failure:\n{}",
        describe_output(out)
    );
    stdout_json(out)["code"].as_u64().expect("integer code")
}

pub fn error_msg(out: &Output) -> String {
    stdout_json(out)["msg"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}
