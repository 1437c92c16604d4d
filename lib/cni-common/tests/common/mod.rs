//! Namespaces for the root tests of cni-common: every test works in namespaces of its own and
//! first moves its own thread into a throwaway one, so even a bug that ignores the namespace it
//! was given cannot touch the host's network.

#![allow(dead_code)] // each test binary uses a different subset

use std::os::fd::AsRawFd;
use std::process::Command;

use cni_common::netlink::{Netlink, Veth};
use cni_common::netns::NetNs;
use nix::sched::{unshare, CloneFlags};

/// Moves the calling test thread into a throwaway network namespace.
pub fn isolate() {
    unshare(CloneFlags::CLONE_NEWNET).expect("unshare(CLONE_NEWNET) (tests run as root)");
}

/// A fresh network namespace, alive as long as the returned NetNs.
pub fn new_netns() -> NetNs {
    std::thread::spawn(|| {
        isolate();
        NetNs::current().expect("open the new netns")
    })
    .join()
    .expect("unshare thread")
}

/// `ip <args>` inside `ns`, through our process's fd of it; its stdout. iproute2 holds no
/// reference to the namespace, so it also serves to watch one go away.
pub fn ip(ns: &NetNs, args: &[&str]) -> String {
    let out = Command::new("nsenter")
        .arg(format!(
            "--net=/proc/{}/fd/{}",
            std::process::id(),
            ns.as_raw_fd()
        ))
        .arg("ip")
        .args(args)
        .output()
        .expect("run nsenter ip");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// A veth pair with both ends in the namespace of `nl`; the index of `name`.
pub fn veth_in(nl: &Netlink, name: &str, peer: &str) -> u32 {
    nl.link_add_veth(&Veth {
        name,
        peer_name: peer,
        ..Veth::default()
    })
    .expect("create veth")
}
