//! `NetNs` (open, run) and `/proc/sys/net` inside namespaces, as root. Tests create their own
//! namespaces and never write to the host's.

mod common;

use common::{isolate, new_netns};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use cni_common::netlink::{Netlink, Veth};
use cni_common::netns::NetNs;
use cni_common::sysctl::{sysctl_read, sysctl_write};
use cni_common::Code;

fn run(cmd: &str, args: &[&str]) {
    let out = Command::new(cmd).args(args).output().expect("spawn");
    assert!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A named namespace from `ip netns add`, removed on drop whatever state the test left it in.
struct NamedNetns {
    name: String,
}

impl NamedNetns {
    fn add() -> NamedNetns {
        static N: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "cnit-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        run("ip", &["netns", "add", &name]);
        NamedNetns { name }
    }

    fn path(&self) -> String {
        format!("/run/netns/{}", self.name)
    }
}

impl Drop for NamedNetns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
        let _ = std::fs::remove_file(self.path());
    }
}

#[test]
fn run_enters_the_netns_and_leaves_the_caller_where_it_was() {
    netns_tests::skip_unless_root!();
    isolate();
    let ns = new_netns();
    let mine = NetNs::current().expect("current");
    assert!(!ns.is_same_as_current().expect("stat"));
    assert!(ns.run(|| ns.is_same_as_current()).expect("run"));
    assert!(!ns.run(|| mine.is_same_as_current()).expect("run"));
    assert!(
        mine.is_same_as_current().expect("stat"),
        "the caller's thread did not move"
    );
}

#[test]
fn sysctl_write_in_a_netns_changes_only_that_netns() {
    netns_tests::skip_unless_root!();
    isolate();
    let (a, b) = (new_netns(), new_netns());
    let nl = Netlink::in_netns(&a).expect("netlink");
    // The same name in both namespaces, so the paths are identical.
    nl.link_add_veth(&Veth {
        name: "cnit-sys0",
        peer_name: "cnit-sys0",
        peer_netns: Some(&b),
        ..Veth::default()
    })
    .expect("veth");
    let key = "net/ipv4/conf/cnit-sys0/forwarding";
    assert_eq!(a.run(|| sysctl_read(key)).expect("read a"), "0");
    a.run(|| sysctl_write(key, "1")).expect("write a");
    assert_eq!(a.run(|| sysctl_read(key)).expect("read a"), "1");
    assert_eq!(b.run(|| sysctl_read(key)).expect("read b"), "0");
    let err = sysctl_read(key).expect_err("the host has no such link");
    assert!(
        err.msg()
            .starts_with(&format!("sysctl {key} does not exist")),
        "{err}"
    );

    // A sysctl the host has too: the host's value stays as it was (only read here).
    let lo = "net/ipv6/conf/lo/disable_ipv6";
    let host_before = sysctl_read(lo).expect("host lo");
    let flipped = if host_before == "1" { "0" } else { "1" };
    a.run(|| sysctl_write(lo, flipped)).expect("write lo in a");
    assert_eq!(a.run(|| sysctl_read(lo)).expect("read a"), flipped);
    assert_eq!(sysctl_read(lo).expect("host lo"), host_before);

    let err = a
        .run(|| sysctl_write(key, "not-a-number"))
        .expect_err("EINVAL");
    assert_eq!(err.code(), Code::System);
    assert!(err.msg().contains("Invalid argument"), "{err}");
}

#[test]
fn open_if_exists_is_none_after_ip_netns_del() {
    netns_tests::skip_unless_root!();
    isolate();
    let named = NamedNetns::add();
    let ns = NetNs::open(named.path()).expect("open named netns");
    assert!(!ns.is_same_as_current().expect("stat"));
    assert!(NetNs::open_if_exists(named.path()).expect("open").is_some());
    drop(ns);

    run("ip", &["netns", "del", &named.name]);
    assert!(NetNs::open_if_exists(named.path())
        .expect("no error")
        .is_none());
    let err = NetNs::open(named.path()).expect_err("gone");
    assert_eq!(err.code(), Code::InvalidNetns);
    assert!(err.msg().contains("does not exist"), "{err}");
}

#[test]
fn open_if_exists_is_none_for_an_unmounted_bind_target() {
    netns_tests::skip_unless_root!();
    isolate();
    // What a runtime can leave behind: the mount is gone, the empty file stays.
    let named = NamedNetns::add();
    run("umount", &[&named.path()]);
    assert!(std::path::Path::new(&named.path()).exists());
    assert!(NetNs::open_if_exists(named.path())
        .expect("no error")
        .is_none());
    let err = NetNs::open(named.path()).expect_err("not a netns");
    assert_eq!(err.code(), Code::InvalidNetns);
    assert!(err.msg().contains("is not a network namespace"), "{err}");
}

#[test]
fn netns_fd_paths_of_a_process_open() {
    netns_tests::skip_unless_root!();
    isolate();
    let ns = new_netns();
    let path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&ns));
    let again = NetNs::open(&path).expect("open by fd path");
    assert!(again.run(|| ns.is_same_as_current()).expect("run"));
}
