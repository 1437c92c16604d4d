//! How `Netlink` reads the kernel's answers: replies larger than the receive buffer, dumps
//! spread over several datagrams, and the kernel's extended-ack text in errors. As root, each
//! test in namespaces of its own.

mod common;

use common::{isolate, new_netns, veth_in};
use std::os::fd::AsRawFd;
use std::process::Command;

use cni_common::netlink::Netlink;
use cni_common::netns::NetNs;
use cni_common::Code;
use ipnetwork::IpNetwork;

/// `ip -batch <file>` inside `ns`: hundreds of commands in one process.
fn ip_batch(ns: &NetNs, commands: &str) {
    let file = std::env::temp_dir().join(format!(
        "cni-common-ip-batch-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::write(&file, commands).expect("write batch");
    let out = Command::new("nsenter")
        .arg(format!(
            "--net=/proc/{}/fd/{}",
            std::process::id(),
            ns.as_raw_fd()
        ))
        .args(["ip", "-batch"])
        .arg(&file)
        .output()
        .expect("run nsenter ip");
    std::fs::remove_file(&file).expect("remove batch");
    assert!(
        out.status.success(),
        "ip -batch: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_link_reply_larger_than_the_receive_buffer_is_read_whole() {
    netns_tests::skip_unless_root!();
    isolate();
    let ns = new_netns();
    let nl = Netlink::in_netns(&ns).expect("netlink");
    let index = veth_in(&nl, "cnit-big0", "cnit-big1");
    // Alternative names are all listed in RTM_NEWLINK: 400 of 100 bytes make a ~45 KiB reply,
    // more than the 32 KiB buffer the socket starts with.
    let batch: String = (0..400)
        .map(|i| {
            format!(
                "link property add dev cnit-big0 altname alt{i:04}{}\n",
                "x".repeat(93)
            )
        })
        .collect();
    ip_batch(&ns, &batch);
    for _ in 0..2 {
        let link = nl
            .link_show("cnit-big0")
            .expect("show")
            .expect("cnit-big0 exists");
        assert_eq!(link.index, index);
        assert_eq!(link.kind.as_deref(), Some("veth"));
    }
    // The socket is still in step with the kernel afterwards.
    assert_eq!(
        nl.link_show_index(index).expect("show").map(|l| l.name),
        Some("cnit-big0".to_string())
    );
    nl.link_set_mtu(index, 1400).expect("mtu");
    assert_eq!(
        nl.link_show("cnit-big1").expect("show").map(|l| l.mtu),
        Some(1500)
    );
}

#[test]
fn an_address_dump_over_many_datagrams_is_walked_to_the_end() {
    netns_tests::skip_unless_root!();
    isolate();
    let ns = new_netns();
    let nl = Netlink::in_netns(&ns).expect("netlink");
    let index = veth_in(&nl, "cnit-many0", "cnit-many1");
    let other = veth_in(&nl, "cnit-oth0", "cnit-oth1");
    // About 80 bytes per IPv4 address: 1000 of them need several dump datagrams.
    let want: Vec<IpNetwork> = (0..1000u32)
        .map(|i| {
            format!("10.{}.{}.1/24", i / 250, i % 250)
                .parse()
                .expect("net")
        })
        .collect();
    let batch: String = want
        .iter()
        .map(|net| format!("addr add {net} dev cnit-many0\n"))
        .chain((0..50).map(|i| format!("addr add 192.168.{i}.1/24 dev cnit-oth0\n")))
        .collect();
    ip_batch(&ns, &batch);

    let mut got = nl.addr_list(index).expect("list");
    got.sort();
    let mut want = want;
    want.sort();
    assert_eq!(got.len(), 1000);
    assert_eq!(got, want, "every address of this link and no other's");
    assert_eq!(nl.addr_list(other).expect("list").len(), 50);
    // The next request after a long dump gets its own answer.
    assert_eq!(
        nl.link_show_index(index).expect("show").map(|l| l.name),
        Some("cnit-many0".to_string())
    );
}

#[test]
fn kernel_errors_carry_the_errno_text_and_the_extended_ack() {
    netns_tests::skip_unless_root!();
    isolate();
    let ns = new_netns();
    let nl = Netlink::in_netns(&ns).expect("netlink");
    let index = veth_in(&nl, "cnit-ea0", "cnit-ea1");
    let err = nl
        .link_set_mtu(index, 100_000)
        .expect_err("beyond the veth maximum");
    assert_eq!(err.code(), Code::System);
    assert!(
        err.msg().starts_with(&format!(
            "ip link set {index} mtu 100000: Invalid argument (os error 22)"
        )),
        "{err}"
    );
    // The kernel's own reason, as iproute2 prints it after "Error:".
    assert!(
        err.msg().contains("mtu greater than device maximum"),
        "{err}"
    );

    // A failed request leaves nothing behind that the next one could mistake for its answer.
    nl.link_set_mtu(index, 1280).expect("mtu");
    assert_eq!(
        nl.link_show("cnit-ea0").expect("show").map(|l| l.mtu),
        Some(1280)
    );
}

#[test]
fn one_netlink_serves_several_threads() {
    netns_tests::skip_unless_root!();
    isolate();
    let ns = new_netns();
    let nl = Netlink::in_netns(&ns).expect("netlink");
    let indexes: Vec<u32> = (0..4)
        .map(|i| veth_in(&nl, &format!("cnit-th{i}"), &format!("cnit-th{i}p")))
        .collect();
    std::thread::scope(|s| {
        for (i, &index) in indexes.iter().enumerate() {
            let nl = &nl;
            s.spawn(move || {
                let name = format!("cnit-th{i}");
                for mtu in 1300..1400 {
                    nl.link_set_mtu(index, mtu).expect("mtu");
                    let link = nl.link_show(&name).expect("show").expect("exists");
                    assert_eq!((link.index, link.mtu), (index, mtu), "{name}");
                }
            });
        }
    });
}
