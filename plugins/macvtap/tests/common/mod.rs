//! Calls the macvtap binary the way a runtime does: inside a throwaway "host" namespace that
//! holds the parent link (a veth pair, both ends up), with pod namespaces beside it.
#![allow(dead_code)] // each test file uses a different part

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Mutex, MutexGuard, PoisonError};

use netns_tests::{run_plugin_in, unique_name, HostSandbox, Link, Netns, TempDir};
use nix::sys::stat::{major, makedev, minor, mknod, Mode, SFlag};
use serde_json::{json, Value};

pub const IFNAME: &str = "net1";
/// The parent (`master`) in the host namespace, and its veth peer.
pub const PARENT: &str = "mvparent0";
pub const PARENT_PEER: &str = "mvparent1";
pub const IPAM_DIR: &str = "/usr/lib/cni";

/// /dev/tapN is named after the macvtap's ifindex, and every test's fresh namespaces hand out
/// the same small indexes. Tests that create macvtaps take turns, so that none waits for
/// another's /dev node (the plugin would, for up to 5 s, then fail with code 11).
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A node: its host namespace with the parent link, this test's turn held until dropped.
pub struct Node {
    pub host: HostSandbox,
    _turn: MutexGuard<'static, ()>,
}

impl Node {
    pub fn new(tag: &str) -> Node {
        netns_tests::require_root();
        let turn = one_at_a_time();
        let host = HostSandbox::new(tag);
        let ns = host.netns();
        ns.exec_ok(
            "ip",
            &[
                "link",
                "add",
                PARENT,
                "type",
                "veth",
                "peer",
                "name",
                PARENT_PEER,
            ],
        );
        ns.exec_ok("ip", &["link", "set", PARENT, "up"]);
        ns.exec_ok("ip", &["link", "set", PARENT_PEER, "up"]);
        Node { host, _turn: turn }
    }

    pub fn pod(&self, tag: &str) -> Pod {
        Pod {
            ns: Netns::new(tag),
            container_id: unique_name(tag),
        }
    }

    pub fn call(&self, verb: &str, pod: &Pod, conf: &Value) -> Output {
        self.call_with(verb, pod, conf, &[])
    }

    /// `env` adds to or overrides the CNI_* variables (CNI_ARGS, CNI_PATH, ...).
    pub fn call_with(&self, verb: &str, pod: &Pod, conf: &Value, env: &[(&str, &str)]) -> Output {
        self.call_for(verb, &pod.container_id, pod.ns.path_str(), conf, env)
    }

    /// A call for any container ID and CNI_NETNS (one that is gone, or empty).
    pub fn call_for(
        &self,
        verb: &str,
        container_id: &str,
        netns: &str,
        conf: &Value,
        env: &[(&str, &str)],
    ) -> Output {
        let mut vars = vec![
            ("CNI_COMMAND", verb),
            ("CNI_CONTAINERID", container_id),
            ("CNI_NETNS", netns),
            ("CNI_IFNAME", IFNAME),
            ("CNI_ARGS", "IgnoreUnknown=1"),
            ("CNI_PATH", IPAM_DIR),
        ];
        for (k, v) in env {
            vars.retain(|(key, _)| key != k);
            vars.push((k, v));
        }
        self.run(&vars, conf)
    }

    /// STATUS and GC: only CNI_COMMAND and CNI_PATH, as libcni sends them.
    pub fn call_runtime_wide(&self, verb: &str, conf: &Value, cni_path: &str) -> Output {
        self.run(&[("CNI_COMMAND", verb), ("CNI_PATH", cni_path)], conf)
    }

    fn run(&self, env: &[(&str, &str)], conf: &Value) -> Output {
        let binary = Path::new(env!("CARGO_BIN_EXE_macvtap"));
        let dir = binary.parent().expect("the binary is in a directory");
        run_plugin_in(&self.host, dir, "macvtap", env, &conf.to_string())
    }

    /// What macvtap-cni's device plugin does when it allocates a device: a macvtap on the
    /// parent in the host namespace, up. `extra` goes to `ip link add` (e.g. `index N`).
    pub fn device_plugin_macvtap(&self, name: &str, extra: &[&str]) -> Link {
        let mut args = vec!["link", "add", name];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["link", PARENT, "type", "macvtap", "mode", "bridge"]);
        let ns = self.host.netns();
        ns.exec_ok("ip", &args);
        ns.exec_ok("ip", &["link", "set", name, "up"]);
        self.host
            .link(name)
            .expect("the device plugin's macvtap exists")
    }

    /// The macvtaps in the host namespace.
    pub fn host_macvtaps(&self) -> Vec<String> {
        macvtaps(&self.host.links())
    }
}

/// A pod: its network namespace and container ID.
pub struct Pod {
    pub ns: Netns,
    pub container_id: String,
}

impl Pod {
    /// CNI_IFNAME in the pod, if it exists.
    pub fn iface(&self) -> Option<Link> {
        self.ns.link(IFNAME)
    }

    pub fn macvtaps(&self) -> Vec<String> {
        macvtaps(&self.ns.links())
    }
}

fn macvtaps(links: &[Link]) -> Vec<String> {
    links
        .iter()
        .filter(|l| l.kind() == Some("macvtap"))
        .map(|l| l.ifname.clone())
        .collect()
}

/// A config of the given version with the plugin's fields.
pub fn config(version: &str, fields: Value) -> Value {
    let mut conf = json!({"cniVersion": version, "name": "macvtaptest", "type": "macvtap"});
    if let (Some(c), Some(f)) = (conf.as_object_mut(), fields.as_object()) {
        c.extend(f.clone());
    }
    conf
}

/// `conf` with `prevResult` set to what ADD printed, as libcni sends CHECK and DEL.
pub fn with_prev(conf: &Value, add: &Output) -> Value {
    let mut conf = conf.clone();
    conf["prevResult"] = stdout_json(add);
    conf
}

pub fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}",
            netns_tests::describe_output(out)
        )
    })
}

/// The error code and message of a failed call.
pub fn error_of(out: &Output) -> (u64, String) {
    netns_tests::expect_failure(out, "the call");
    let v = stdout_json(out);
    let code = v["code"].as_u64().expect("an integer code");
    (code, v["msg"].as_str().unwrap_or_default().to_string())
}

/// `/dev/tap<index>`.
pub fn tap_path(index: u32) -> PathBuf {
    PathBuf::from(format!("/dev/tap{index}"))
}

/// What /sys/dev/char says the device behind `/dev/tap<index>` is: `<netdev>/macvtap/tap<N>`.
pub fn tap_device(index: u32) -> Option<String> {
    let meta = std::fs::symlink_metadata(tap_path(index)).ok()?;
    if !meta.file_type().is_char_device() {
        return None;
    }
    let (major, minor) = (major(meta.rdev()), minor(meta.rdev()));
    let link = std::fs::read_link(format!("/sys/dev/char/{major}:{minor}")).ok()?;
    let text = link.to_string_lossy().into_owned();
    let parts: Vec<&str> = text.rsplit('/').take(3).collect();
    Some(format!("{}/{}/{}", parts[2], parts[1], parts[0]))
}

/// An ifindex that fresh namespaces do not hand out, different per test (0 to 7) and per run:
/// its /dev/tap<index> is free of the nodes earlier tests leave at small indexes.
pub fn rare_index(test: u32) -> u32 {
    40_000 + (std::process::id() % 10_000) * 8 + test
}

/// Makes `/dev/tap<index>` a node of the macvtap driver for a device that does not exist, as
/// one made by hand is once its macvtap is gone. The driver must be loaded.
pub fn stale_node(index: u32) {
    let rdev = makedev(macvtap_major(), 65_000);
    mknod(
        &tap_path(index),
        SFlag::S_IFCHR,
        Mode::S_IRUSR | Mode::S_IWUSR,
        rdev,
    )
    .expect("mknod a stale node");
    assert_eq!(
        tap_device(index),
        None,
        "the stale node names a live device"
    );
}

/// Removes /dev/tap<index> at the end if it is a node for no live device: a test that fails
/// half-way must not leave one made by hand behind.
pub struct NoLeftoverNode(pub u32);

impl Drop for NoLeftoverNode {
    fn drop(&mut self) {
        if tap_device(self.0).is_none() {
            let _ = std::fs::remove_file(tap_path(self.0));
        }
    }
}

/// Owner and group of `/dev/tap<index>`.
pub fn tap_owner(index: u32) -> Option<(u32, u32)> {
    let meta = std::fs::metadata(tap_path(index)).ok()?;
    Some((meta.uid(), meta.gid()))
}

/// The macvtap driver's character major, from /proc/devices.
pub fn macvtap_major() -> u64 {
    let text = std::fs::read_to_string("/proc/devices").expect("/proc/devices");
    text.lines()
        .find_map(|l| {
            let (n, name) = l.trim().split_once(' ')?;
            (name == "macvtap").then(|| n.parse().ok())?
        })
        .expect("the macvtap driver is loaded (a macvtap exists)")
}

/// An IPAM plugin of the test's own that speaks 1.1.0 (Debian's Go ones stop at 1.0.0): it logs
/// every verb it gets but VERSION, and answers ADD with `address`.
pub struct FakeIpam {
    pub dir: TempDir,
}

impl FakeIpam {
    pub fn new(tag: &str, address: &str) -> FakeIpam {
        let dir = TempDir::new(&format!("{tag}-ipam"));
        let log = dir.join("verbs.log");
        let script = format!(
            "#!/bin/sh\ncat > /dev/null\ncase \"$CNI_COMMAND\" in\n\
             VERSION) echo '{{\"cniVersion\":\"1.1.0\",\"supportedVersions\":[\"1.0.0\",\"1.1.0\"]}}'; \
             exit 0 ;;\n\
             ADD) echo '{{\"cniVersion\":\"1.1.0\",\"ips\":[{{\"address\":\"{address}\"}}]}}' ;;\n\
             esac\necho \"$CNI_COMMAND\" >> {log}\n",
            log = log.display()
        );
        let path = dir.join("fakeipam");
        std::fs::write(&path, script).expect("write the fake IPAM");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .expect("make the fake IPAM executable");
        FakeIpam { dir }
    }

    pub fn path(&self) -> String {
        self.dir.path().display().to_string()
    }

    /// The verbs it was called with, in order.
    pub fn verbs(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.join("verbs.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}
