//! GC of a node where many attachments went without their DEL (a runtime that lost its state, a
//! node that rebooted): the spoof check and the masquerade of each one are left in our tables,
//! and the plugin's GC removes them all, each table in one transaction, and says it did.

mod common;

use std::fs::File;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::Instant;

use bridge::ipmasq::{ipmasq_setup, ReferenceNames};
use bridge::spoofchk::spoofchk_setup;
use cni_common::mac::MacAddr;
use cni_common::naming::AttachmentKey;
use common::{config, Node, IFNAME};
use serde_json::json;

/// Attachments whose pods are gone.
const LOST: usize = 300;

/// Runs `f` on a thread of its own inside the namespace at `netns` (children it spawns are in
/// it too), so that the plugin's functions change that namespace and not the test's.
fn in_netns<T: Send>(netns: &Path, f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            let ns = File::open(netns).expect("the namespace");
            nix::sched::setns(ns, nix::sched::CloneFlags::CLONE_NEWNET).expect("setns, as root");
            f()
        })
        .join()
        .expect("the namespace's thread")
    })
}

/// What ADD leaves for attachment `n` of `network`: its spoof check on the port `vethgc<n>`
/// and its masquerade for 10.77.x.y; the port and its name in the result.
fn attach(network: &str, n: usize) -> String {
    let container_id = format!("pod{n}");
    let key = AttachmentKey::new(network, &container_id, IFNAME);
    let label = format!("{network}/{container_id}/{IFNAME}");
    let port = format!("vethgc{n}");
    let mac: MacAddr = format!("02:77:00:00:{:02x}:{:02x}", n / 256, n % 256)
        .parse()
        .expect("mac");
    let ip = Ipv4Addr::new(10, 77, (n / 200) as u8, (n % 200 + 2) as u8);
    spoofchk_setup(&key, &port, &mac, &label).expect("spoof check");
    let names = ReferenceNames {
        network,
        container_id: &container_id,
    };
    let addrs = [format!("{ip}/16").parse().expect("cidr")];
    ipmasq_setup(&key, &addrs, &label, &names).expect("masquerade");
    port
}

#[test]
fn gc_of_300_lost_attachments_removes_their_spoof_checks_and_masquerades() {
    netns_tests::skip_unless_root!();
    let node = Node::new("br-gcmany");
    let mut conf = config("brgcm", json!({}));
    let network = conf["name"].as_str().expect("name").to_string();
    // The attachment the runtime still lists, and the lost ones, made as ADD makes them.
    let started = Instant::now();
    let (kept, lost) = in_netns(node.host.netns().path(), || {
        let kept = attach(&network, LOST);
        let lost: Vec<String> = (0..LOST).map(|n| attach(&network, n)).collect();
        (kept, lost)
    });
    eprintln!(
        "{} attachments' spoof checks and masquerades made in {:?}",
        LOST + 1,
        started.elapsed()
    );

    conf["cniVersion"] = json!("1.1.0");
    conf["cni.dev/valid-attachments"] =
        json!([{"containerID": format!("pod{LOST}"), "ifname": IFNAME}]);
    let started = Instant::now();
    let out = node.call_raw("GC", "", "", "", &conf, "");
    let took = started.elapsed();
    eprintln!("GC of {LOST} lost attachments took {took:?}");
    assert!(
        out.status.success(),
        "{}",
        netns_tests::describe_output(&out)
    );

    let rules = node.ruleset();
    assert!(
        rules.contains(&kept),
        "the kept attachment's check: {rules}"
    );
    let left: Vec<&String> = lost
        .iter()
        .filter(|p| rules.contains(&format!("\"{p}\"")))
        .collect();
    assert!(left.is_empty(), "ports still checked: {left:?}");
    // One attachment chain per table is left: the kept one's.
    assert_eq!(rules.matches("chain att-").count(), 2, "{rules}");
    assert!(
        rules.contains("10.77.1.102"),
        "the kept masquerade: {rules}"
    );
    assert!(!rules.contains("10.77.0.2 "), "{rules}");
}
