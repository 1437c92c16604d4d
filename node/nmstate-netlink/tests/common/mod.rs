//! Each test moves its own thread into a fresh network namespace (as root), so the node under
//! test is a throwaway namespace and never the host's.

#![allow(dead_code)] // each test binary uses a different subset

use std::os::fd::AsRawFd;
use std::process::Command;

use cni_common::netns::NetNs;
use nix::sched::{unshare, CloneFlags};
use serde_json::Value;

/// Moves the calling test thread into a fresh network namespace with its loopback up.
pub fn isolate() {
    unshare(CloneFlags::CLONE_NEWNET).expect("unshare(CLONE_NEWNET) (tests run as root)");
    ip(&["link", "set", "lo", "up"]);
}

/// `ip <args>` in the calling thread's namespace; its stdout.
pub fn ip(args: &[&str]) -> String {
    run_here("ip", args)
}

/// `<cmd> <args>` in the calling thread's network namespace, which must succeed; its stdout.
pub fn run_here(cmd: &str, args: &[&str]) -> String {
    let ns = format!(
        "/proc/{}/task/{}/ns/net",
        std::process::id(),
        nix::unistd::gettid()
    );
    let out = Command::new("nsenter")
        .arg(format!("--net={ns}"))
        .arg(cmd)
        .args(args)
        .output()
        .expect("run nsenter");
    assert!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// A veth pair `name` / `peer`, both up, in the calling thread's namespace.
pub fn veth(name: &str, peer: &str) {
    ip(&["link", "add", name, "type", "veth", "peer", "name", peer]);
    ip(&["link", "set", name, "up"]);
    ip(&["link", "set", peer, "up"]);
}

/// A veth whose peer lives in another namespace: what a pod's interface looks like on the node.
pub fn pod_veth(name: &str) -> NetNs {
    let pod = std::thread::spawn(|| {
        unshare(CloneFlags::CLONE_NEWNET).expect("unshare");
        NetNs::current().expect("open the pod netns")
    })
    .join()
    .expect("pod thread");
    let fd = format!("/proc/{}/fd/{}", std::process::id(), pod.as_raw_fd());
    ip(&[
        "link", "add", name, "type", "veth", "peer", "name", "eth0", "netns", &fd,
    ]);
    ip(&["link", "set", name, "up"]);
    pod
}

/// Waits until IPv6 duplicate address detection is over (no tentative address left), so that
/// two reads of the node see the same addresses.
pub fn settle() {
    for _ in 0..100 {
        let out = ip(&["-6", "addr", "show", "tentative"]);
        if out.trim().is_empty() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("IPv6 addresses stayed tentative");
}

/// A desired state from JSON, which must parse.
pub fn desired(v: Value) -> nmstate_netlink::DesiredState {
    nmstate_netlink::DesiredState::parse(&v).expect("desired state parses")
}

/// A journal path in a temp directory of its own (kept alive by the returned guard).
pub fn journal() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("nmstate.journal");
    (dir, path)
}

/// Applies `desired`, which must fail after changing the node (its route's gateway is on no
/// link's subnet, which only the kernel knows), and checks the node is back to `before`.
pub fn assert_a_late_failure_is_rolled_back(
    desired: &nmstate_netlink::DesiredState,
    before: &Value,
) {
    let (_dir, journal) = journal();
    match nmstate_netlink::apply(desired, &journal) {
        Err(nmstate_netlink::Error::Failed { cause }) => {
            assert!(cause.contains("198.51.100.0/24"), "{cause}")
        }
        other => panic!("expected a failure rolled back, got {other:?}"),
    }
    settle();
    assert_eq!(&state(), before);
    assert!(!journal.exists());
}

pub fn state() -> Value {
    nmstate_netlink::current_state().expect("current state")
}

/// The interface `name` of a current state.
pub fn iface<'a>(state: &'a Value, name: &str) -> Option<&'a Value> {
    state["interfaces"]
        .as_array()
        .expect("interfaces")
        .iter()
        .find(|i| i["name"] == name)
}

/// Whether this kernel can create links of `kind` (tried in a throwaway namespace).
pub fn kernel_has(kind: &str) -> bool {
    std::thread::spawn({
        let kind = kind.to_string();
        move || {
            unshare(CloneFlags::CLONE_NEWNET).expect("unshare");
            let mut args = vec!["link", "add"];
            if kind == "vlan" {
                ip(&[
                    "link", "add", "probe0", "type", "veth", "peer", "name", "probe1",
                ]);
                args.extend([
                    "link", "probe0", "name", "probe0.5", "type", "vlan", "id", "5",
                ]);
            } else {
                args.extend(["probe9", "type", kind.as_str()]);
            }
            let ns = format!(
                "/proc/{}/task/{}/ns/net",
                std::process::id(),
                nix::unistd::gettid()
            );
            Command::new("nsenter")
                .arg(format!("--net={ns}"))
                .arg("ip")
                .args(&args)
                .output()
                .expect("run ip")
                .status
                .success()
        }
    })
    .join()
    .expect("probe thread")
}
