//! Calls the bridge binary the way a runtime does, inside a throwaway "host" namespace of the
//! test's own, against container namespaces of the test's own.
//!
//! The Go reference bridge ([`Node::call_go`]) is the one in `$GO_PLUGINS_DIR` when it is set
//! (`scripts/test` sets it to the current release, 1.9.1, from `scripts/go-plugins-1.9.1`), else
//! Debian's in /usr/lib/cni (1.1.1 on Debian 12). It runs with its own directory as CNI_PATH, so
//! its IPAM plugins are of its release, as on a node that has it installed.

#![allow(dead_code)] // each test binary uses a different subset

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use netns_tests::{
    describe_output, run_plugin_in, unique_name, HostSandbox, Netns, Release, TempDir,
};
use serde_json::{json, Value};

pub const IFNAME: &str = "net1";
pub const IPAM_DIR: &str = "/usr/lib/cni";

/// The host sandbox, a host-local data directory, and the containers attached so far.
pub struct Node {
    pub host: HostSandbox,
    pub leases: TempDir,
    pub tag: String,
}

/// One container namespace and its id.
pub struct Pod {
    pub ns: Netns,
    pub id: String,
}

impl Node {
    pub fn new(tag: &str) -> Node {
        netns_tests::require_root();
        Node {
            host: HostSandbox::new(tag),
            leases: TempDir::new(&format!("{tag}-leases")),
            tag: tag.to_string(),
        }
    }

    pub fn pod(&self, name: &str) -> Pod {
        Pod {
            ns: Netns::new(&format!("{}-{name}", self.tag)),
            id: unique_name(&format!("{}-{name}", self.tag)),
        }
    }

    /// A host-local IPAM section on `subnet` keeping its leases in the node's directory.
    pub fn host_local(&self, subnet: &str) -> Value {
        json!({"type": "host-local", "subnet": subnet, "dataDir": self.leases.path()})
    }

    /// Runs `verb` for `pod` with `conf` (CNI_ARGS `args`).
    pub fn call(&self, verb: &str, pod: &Pod, conf: &Value, args: &str) -> Output {
        self.call_raw(verb, &pod.id, pod.ns.path_str(), IFNAME, conf, args)
    }

    pub fn call_raw(
        &self,
        verb: &str,
        id: &str,
        netns: &str,
        ifname: &str,
        conf: &Value,
        args: &str,
    ) -> Output {
        self.call_plugin(plugin_dir(), verb, id, netns, ifname, conf, args)
    }

    /// Runs `verb` for `pod` with the Go reference bridge (see the module doc) instead of ours.
    pub fn call_go(&self, verb: &str, pod: &Pod, conf: &Value) -> Output {
        self.call_go_raw(verb, &pod.id, pod.ns.path_str(), conf)
    }

    /// Runs `verb` with the Go reference bridge for container `id` in `netns` (both empty for GC
    /// and STATUS).
    pub fn call_go_raw(&self, verb: &str, id: &str, netns: &str, conf: &Value) -> Output {
        let dir = go_dir();
        let ifname = if id.is_empty() { "" } else { IFNAME };
        self.call_plugin_with_path(&dir, &dir, verb, id, netns, ifname, conf, "")
    }

    #[allow(clippy::too_many_arguments)]
    fn call_plugin(
        &self,
        dir: &Path,
        verb: &str,
        id: &str,
        netns: &str,
        ifname: &str,
        conf: &Value,
        args: &str,
    ) -> Output {
        let ipam_dir = Path::new(IPAM_DIR);
        self.call_plugin_with_path(dir, ipam_dir, verb, id, netns, ifname, conf, args)
    }

    /// Runs `<dir>/bridge` with CNI_PATH `cni_path`.
    #[allow(clippy::too_many_arguments)]
    fn call_plugin_with_path(
        &self,
        dir: &Path,
        cni_path: &Path,
        verb: &str,
        id: &str,
        netns: &str,
        ifname: &str,
        conf: &Value,
        args: &str,
    ) -> Output {
        let env = [
            ("CNI_COMMAND", verb),
            ("CNI_CONTAINERID", id),
            ("CNI_NETNS", netns),
            ("CNI_IFNAME", ifname),
            ("CNI_ARGS", args),
            ("CNI_PATH", cni_path.to_str().expect("a UTF-8 CNI_PATH")),
        ];
        run_plugin_in(&self.host, dir, "bridge", &env, &conf.to_string())
    }

    /// ADD that must succeed; its result.
    pub fn add(&self, pod: &Pod, conf: &Value) -> Value {
        let out = self.call("ADD", pod, conf, "");
        parse_ok(&out, "ADD")
    }

    pub fn del(&self, pod: &Pod, conf: &Value) {
        let out = self.call("DEL", pod, conf, "");
        assert!(
            out.status.success(),
            "DEL failed:\n{}",
            describe_output(&out)
        );
    }

    pub fn check(&self, pod: &Pod, conf: &Value, prev: &Value) -> Output {
        let mut conf = conf.clone();
        conf["prevResult"] = prev.clone();
        self.call("CHECK", pod, &conf, "")
    }

    /// `ip -j -d link show <name>` in the host sandbox.
    pub fn host_link(&self, name: &str) -> Option<netns_tests::Link> {
        self.host.link(name)
    }

    /// `nft list ruleset` of the host sandbox.
    pub fn ruleset(&self) -> String {
        self.host.netns().exec_ok("nft", &["list", "ruleset"])
    }

    /// Where host-local keeps this node's leases (its `dataDir`).
    pub fn leases_dir(&self) -> &std::path::Path {
        self.leases.path()
    }

    /// Lease files host-local holds for networks of this node.
    pub fn leases(&self) -> Vec<String> {
        netns_tests::files_under(self.leases.path())
            .into_iter()
            .map(|p| p.display().to_string())
            .filter(|p| !p.ends_with("/lock") && !p.contains("last_reserved_ip"))
            .collect()
    }
}

/// The directory of the bridge binary cargo built for these tests.
pub fn plugin_dir() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_bridge"))
        .parent()
        .expect("the binary has a directory")
}

/// The directory of the Go reference bridge (see the module doc).
pub fn go_dir() -> PathBuf {
    let bridge = netns_tests::go_reference("bridge");
    bridge
        .parent()
        .expect("the Go bridge has a directory")
        .to_path_buf()
}

/// Which release the Go reference bridge is.
///
/// # Panics
/// If neither the binary nor a Debian changelog beside it tells: what the tests expect of it
/// depends on the release.
pub fn go_release() -> Release {
    static RELEASE: OnceLock<Release> = OnceLock::new();
    *RELEASE.get_or_init(|| {
        let bridge = netns_tests::go_reference("bridge");
        netns_tests::go_release(&bridge).unwrap_or_else(|| {
            panic!(
                "cannot tell which release {} is (it names none, and no Debian changelog is \
                 beside it)",
                bridge.display()
            )
        })
    })
}

/// Whether the Go reference bridge speaks CNI spec `version` (1.1.0 brings GC and STATUS).
pub fn go_speaks(version: &str) -> bool {
    static VERSIONS: OnceLock<Vec<String>> = OnceLock::new();
    VERSIONS
        .get_or_init(|| netns_tests::cni_versions(&netns_tests::go_reference("bridge")))
        .iter()
        .any(|v| v == version)
}

/// A 1.0.0 config (Debian's host-local knows no later version) for bridge `bridge`, plus
/// `fields`.
pub fn config(bridge: &str, fields: Value) -> Value {
    let mut conf = json!({
        "cniVersion": "1.0.0",
        "name": format!("net-{bridge}"),
        "type": "bridge",
        "bridge": bridge,
    });
    if let (Some(conf), Some(fields)) = (conf.as_object_mut(), fields.as_object()) {
        for (k, v) in fields {
            conf.insert(k.clone(), v.clone());
        }
    }
    conf
}

pub fn parse_ok(out: &Output, what: &str) -> Value {
    assert!(
        out.status.success(),
        "{what} failed:\n{}",
        describe_output(out)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{what} printed no JSON ({e}):\n{}", describe_output(out)))
}

/// The error code a failed call printed.
pub fn error_code(out: &Output) -> u64 {
    assert!(
        !out.status.success(),
        "expected a failure:\n{}",
        describe_output(out)
    );
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no error JSON ({e}):\n{}", describe_output(out)));
    v["code"].as_u64().unwrap_or_default()
}

/// The container address the result gave, without prefix.
pub fn result_ip(result: &Value) -> std::net::IpAddr {
    let cidr = result["ips"][0]["address"].as_str().expect("an address");
    cidr.split('/')
        .next()
        .unwrap_or_default()
        .parse()
        .expect("an IP")
}

/// The host veth named in a result (interfaces[1]).
pub fn host_veth(result: &Value) -> String {
    result["interfaces"][1]["name"]
        .as_str()
        .expect("host veth")
        .to_string()
}

/// Gives `pod`'s net1 an address (for L2 attachments).
pub fn set_ip(pod: &Pod, cidr: &str) {
    pod.ns.exec_ok("ip", &["addr", "add", cidr, "dev", IFNAME]);
}

pub fn pings(from: &Pod, to: std::net::IpAddr) -> bool {
    from.ns
        .exec("ping", &["-c", "1", "-W", "1", &to.to_string()])
        .status
        .success()
}
