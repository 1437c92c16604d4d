//! The nftables objects of the spoof check and the masquerade are exactly those the previous
//! release made with its `nft` scripts (kept here as the specification), so a node upgraded with
//! pods running, or switched back, finds the same tables, maps, chains, rules and elements.
//! Each side is made in a network namespace of its own and compared through `nft -j list
//! ruleset`.

use std::process::Command;

use bridge::ipmasq::{ipmasq_setup, ReferenceNames};
use bridge::spoofchk::spoofchk_setup;
use cni_common::mac::MacAddr;
use cni_common::naming::AttachmentKey;
use serde_json::Value;

/// Runs `f` on a thread of its own moved into a new network namespace (children it spawns are
/// in it too); the namespace goes with the thread.
fn in_new_netns<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET)
                .expect("unshare(CLONE_NEWNET), as root");
            f()
        })
        .join()
        .expect("the namespace's thread")
    })
}

/// `nft ARGS` (with `script` on stdin): its stdout; the test fails if it does.
fn nft(args: &[&str], script: Option<&str>) -> String {
    let mut cmd = Command::new("nft");
    cmd.args(args);
    let out = netns_tests::run_command(cmd, script.unwrap_or_default().as_bytes());
    netns_tests::expect_success(&out, &format!("nft {args:?}"))
}

/// The ruleset as nft lists it, without the handles the kernel numbers objects with.
fn ruleset() -> Vec<Value> {
    let doc: Value = serde_json::from_str(&nft(&["-j", "list", "ruleset"], None)).expect("json");
    doc["nftables"]
        .as_array()
        .expect("nftables")
        .iter()
        .filter(|o| o.get("metainfo").is_none())
        .cloned()
        .map(|mut o| {
            for (_, body) in o.as_object_mut().expect("object").iter_mut() {
                body.as_object_mut().expect("body").remove("handle");
            }
            o
        })
        .collect()
}

fn key() -> AttachmentKey {
    AttachmentKey::new("net1", "c0ffee", "eth0")
}

#[test]
fn the_spoof_check_is_what_the_previous_release_made() {
    netns_tests::skip_unless_root!();
    let mac: MacAddr = "02:42:ac:11:00:02".parse().expect("mac");
    let label = "net1/c0ffee/eth0";
    let ours = in_new_netns(|| {
        spoofchk_setup(&key(), "veth0123", &mac, label).expect("setup");
        ruleset()
    });
    let t = "bridge cni_bridge_spoofchk";
    let chain = format!("att-{}", key());
    let script = format!(
        "add table {t}\n\
         add map {t} ports {{ type ifname : verdict; }}\n\
         add chain {t} prerouting {{ type filter hook prerouting priority -300; policy accept; }}\n\
         flush chain {t} prerouting\n\
         add rule {t} prerouting iifname vmap @ports\n\
         add chain {t} {chain}\n\
         flush chain {t} {chain}\n\
         add rule {t} {chain} ether saddr {mac} return comment \"{label}\"\n\
         add rule {t} {chain} drop\n\
         add element {t} ports {{ \"veth0123\" : jump {chain} }}\n"
    );
    let previous = in_new_netns(|| {
        nft(&["-f", "-"], Some(&script));
        ruleset()
    });
    assert!(!ours.is_empty());
    assert_eq!(ours, previous);
}

#[test]
fn the_masquerade_is_what_the_previous_release_made() {
    netns_tests::skip_unless_root!();
    let addrs = [
        "10.1.0.2/24".parse().expect("v4"),
        "fd00:1::2/64".parse().expect("v6"),
    ];
    let label = "net1/c0ffee/eth0";
    let names = ReferenceNames {
        network: "net1",
        container_id: "c0ffee",
    };
    let ours = in_new_netns(|| {
        ipmasq_setup(&key(), &addrs, label, &names).expect("setup");
        ruleset()
    });
    let t = "inet cni_bridge_masquerade";
    let chain = format!("att-{}", key());
    let script = format!(
        "add table {t}\n\
         add map {t} saddr4 {{ type ipv4_addr : verdict; }}\n\
         add map {t} saddr6 {{ type ipv6_addr : verdict; }}\n\
         add chain {t} postrouting {{ type nat hook postrouting priority srcnat; policy accept; }}\n\
         flush chain {t} postrouting\n\
         add rule {t} postrouting ip daddr 224.0.0.0/4 return\n\
         add rule {t} postrouting ip6 daddr ff00::/8 return\n\
         add rule {t} postrouting ip saddr vmap @saddr4\n\
         add rule {t} postrouting ip6 saddr vmap @saddr6\n\
         add chain {t} {chain}\n\
         flush chain {t} {chain}\n\
         add rule {t} {chain} ip saddr 10.1.0.2 ip daddr != 10.1.0.0/24 masquerade comment \"{label}\"\n\
         add element {t} saddr4 {{ 10.1.0.2 : jump {chain} }}\n\
         add rule {t} {chain} ip6 saddr fd00:1::2 ip6 daddr != fd00:1::/64 masquerade comment \"{label}\"\n\
         add element {t} saddr6 {{ fd00:1::2 : jump {chain} }}\n"
    );
    let previous = in_new_netns(|| {
        nft(&["-f", "-"], Some(&script));
        ruleset()
    });
    // Ours also leaves the reference plugin's iptables chain, which iptables-nft shows in
    // nftables: compare our tables only.
    let of_ours = |objects: Vec<Value>| -> Vec<Value> {
        objects
            .into_iter()
            .filter(|o| o.to_string().contains("cni_bridge_masquerade"))
            .collect()
    };
    let ours = of_ours(ours);
    assert!(!ours.is_empty());
    assert_eq!(ours, of_ours(previous));
}

#[test]
fn our_del_removes_what_the_previous_release_made() {
    netns_tests::skip_unless_root!();
    let mac: MacAddr = "02:42:ac:11:00:03".parse().expect("mac");
    in_new_netns(|| {
        let t = "bridge cni_bridge_spoofchk";
        let chain = format!("att-{}", key());
        nft(
            &["-f", "-"],
            Some(&format!(
                "add table {t}\n\
                 add map {t} ports {{ type ifname : verdict; }}\n\
                 add chain {t} prerouting {{ type filter hook prerouting priority -300; policy accept; }}\n\
                 add rule {t} prerouting iifname vmap @ports\n\
                 add chain {t} {chain}\n\
                 add rule {t} {chain} ether saddr {mac} return comment \"x\"\n\
                 add rule {t} {chain} drop\n\
                 add element {t} ports {{ \"veth0123\" : jump {chain} }}\n"
            )),
        );
        bridge::spoofchk::spoofchk_check(&key(), "veth0123", &mac).expect("check passes");
        bridge::spoofchk::spoofchk_teardown(&key(), "veth0123").expect("teardown");
        let left = nft(&["list", "ruleset"], None);
        assert!(
            !left.contains("att-") && !left.contains("veth0123"),
            "{left}"
        );
    });
}
