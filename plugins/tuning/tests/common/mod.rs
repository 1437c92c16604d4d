//! Calls the tuning binary the way a runtime does, against an interface in a namespace of the
//! test's own.

use std::path::PathBuf;
use std::process::{Command, Output};

use netns_tests::{run_command, unique_name, Netns, TempDir};
use serde_json::{json, Value};

pub const IFNAME: &str = "net1";

/// A container namespace holding a veth pair (`net1` and its peer), as a main plugin would leave
/// it, plus a private state directory.
pub struct Attachment {
    pub ns: Netns,
    pub data_dir: TempDir,
    pub container_id: String,
}

impl Attachment {
    pub fn new(tag: &str) -> Attachment {
        netns_tests::require_root();
        let ns = Netns::new(tag);
        ns.exec_ok(
            "ip",
            &[
                "link", "add", IFNAME, "type", "veth", "peer", "name", "peer1",
            ],
        );
        ns.exec_ok("ip", &["link", "set", IFNAME, "up"]);
        Attachment {
            ns,
            data_dir: TempDir::new(tag),
            container_id: unique_name(tag),
        }
    }

    /// The prevResult a main plugin would have returned for `net1`.
    pub fn prev_result(&self, version: &str) -> Value {
        let mac = self
            .ns
            .link(IFNAME)
            .and_then(|l| l.mac())
            .unwrap_or_default();
        json!({
            "cniVersion": version,
            "interfaces": [{"name": IFNAME, "mac": mac, "sandbox": self.ns.path_str()}],
            "ips": [{"address": "10.99.0.2/24", "interface": 0}]
        })
    }

    /// A 1.1.0 config with the given tuning fields, the state kept in the private directory.
    pub fn config(&self, fields: Value) -> Value {
        let mut conf = json!({
            "cniVersion": "1.1.0",
            "name": "tuningtest",
            "type": "tuning",
            "dataDir": self.data_dir.path(),
            "prevResult": self.prev_result("1.1.0"),
        });
        if let (Some(c), Some(f)) = (conf.as_object_mut(), fields.as_object()) {
            for (k, v) in f {
                c.insert(k.clone(), v.clone());
            }
        }
        conf
    }

    pub fn call(&self, verb: &str, conf: &Value) -> Output {
        self.call_with(verb, conf, &[])
    }

    pub fn call_with(&self, verb: &str, conf: &Value, extra_env: &[(&str, &str)]) -> Output {
        call(
            verb,
            &self.container_id,
            self.ns.path_str(),
            conf,
            extra_env,
        )
    }

    pub fn sysctl(&self, path: &str) -> String {
        self.ns
            .exec_ok("cat", &[&format!("/proc/sys/{path}")])
            .trim()
            .to_string()
    }

    pub fn state_files(&self) -> Vec<PathBuf> {
        netns_tests::files_under(self.data_dir.path())
    }
}

pub fn tuning_binary() -> &'static str {
    env!("CARGO_BIN_EXE_tuning")
}

pub fn call(
    verb: &str,
    container_id: &str,
    netns: &str,
    conf: &Value,
    extra_env: &[(&str, &str)],
) -> Output {
    let mut cmd = Command::new(tuning_binary());
    cmd.env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .env("CNI_COMMAND", verb)
        .env("CNI_CONTAINERID", container_id)
        .env("CNI_NETNS", netns)
        .env("CNI_IFNAME", IFNAME)
        .env("CNI_PATH", "/usr/lib/cni")
        .env(
            netns_tests::NODE_POLICY_ENV,
            netns_tests::test_node_policy(),
        );
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    run_command(cmd, conf.to_string().as_bytes())
}

pub fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}",
            netns_tests::describe_output(out)
        )
    })
}
