//! ovs ADD+DEL against the same port work done the way most users script it with the OVS tools:
//!
//! ```text
//! ip link add H type veth peer name net1 netns POD; ip link set H up; ip -n POD link set net1 up
//! ovs-vsctl add-port br0 H -- set Port H tag=100
//! ovs-vsctl del-port br0 H; ip link del H
//! ```
//!
//! Both run side by side in one process against one private ovsdb-server + ovs-vswitchd
//! (userspace datapath) in a host namespace of the benchmark's own, which this process joins so
//! that neither side pays for `ip netns exec`. Rounds alternate who goes first. Prints medians
//! and the wall-time ratio against the goal; it fails only when a call fails.
//!
//! `cargo bench -p netns-tests --bench ovs` (as root; BENCH_ITERS sets the rounds, default 100).

use std::fs::File;
use std::process::Command;
use std::time::Duration;

use netns_tests::bench::{iterations, measure, median, ms, Sample};
use netns_tests::openvswitch::{OvsNode, Pod, BRIDGE, IFNAME};
use netns_tests::{our_plugin, our_plugin_dir};
use nix::sched::{setns, CloneFlags};
use serde_json::json;

/// Wall and CPU (user + system) time of what one side did in each round.
#[derive(Default)]
struct Samples {
    add: Vec<Duration>,
    del: Vec<Duration>,
    total: Vec<Duration>,
    cpu: Vec<Duration>,
}

impl Samples {
    fn push(&mut self, add: Sample, del: Sample) {
        self.add.push(add.wall);
        self.del.push(del.wall);
        self.total.push(add.wall + del.wall);
        self.cpu.push(add.cpu + del.cpu);
    }
}

fn main() {
    netns_tests::require_root();
    let iters = iterations(100).max(1);
    let node = OvsNode::start("bench-ovs");
    let pod = Pod::new("bench-ovs-pod");
    // Join the host namespace for good: every command below starts in it directly.
    let host_ns = File::open(node.host.netns().path()).expect("open the host namespace");
    setns(&host_ns, CloneFlags::CLONE_NEWNET).expect("join the host namespace");

    let plugin = our_plugin("ovs");
    let conf = node.config(json!({"vlan": 100})).to_string();
    let socket = format!("--db={}", node.socket());
    let ours = |verb: &str| {
        let mut cmd = Command::new(&plugin);
        cmd.env_clear()
            .env("CNI_COMMAND", verb)
            .env("CNI_CONTAINERID", &pod.container_id)
            .env("CNI_NETNS", pod.ns.path_str())
            .env("CNI_IFNAME", IFNAME)
            .env("CNI_PATH", our_plugin_dir())
            .env(ovs::cache::ROOT_ENV, node.cache_root())
            // the node's private OVSDB socket is in a temp dir: allowed by the tests' policy
            .env(
                netns_tests::NODE_POLICY_ENV,
                netns_tests::test_node_policy(),
            );
        measure(cmd, conf.as_bytes())
    };
    let host = "vethbench0";
    let tool = |program: &str, args: &[&str]| {
        let mut cmd = Command::new(program);
        cmd.args(args).env("OVS_RUNDIR", node.dir.path());
        measure(cmd, b"")
    };
    let script_add = || {
        let c = tool(
            "ip",
            &[
                "link",
                "add",
                host,
                "type",
                "veth",
                "peer",
                "name",
                IFNAME,
                "netns",
                pod.ns.name(),
            ],
        );
        let c = c.then(tool("ip", &["link", "set", host, "up"]));
        let c = c.then(tool(
            "ip",
            &["-n", pod.ns.name(), "link", "set", IFNAME, "up"],
        ));
        c.then(tool(
            "ovs-vsctl",
            &[
                &socket, "add-port", BRIDGE, host, "--", "set", "Port", host, "tag=100",
            ],
        ))
    };
    let script_del = || {
        tool("ovs-vsctl", &[&socket, "del-port", BRIDGE, host])
            .then(tool("ip", &["link", "del", host]))
    };

    // Warm the page cache for every binary before measuring.
    ours("ADD");
    ours("DEL");
    script_add();
    script_del();
    let mut plugin_samples = Samples::default();
    let mut script_samples = Samples::default();
    for i in 0..iters {
        let mut sides = [0, 1];
        if i % 2 == 1 {
            sides.reverse();
        }
        for side in sides {
            if side == 0 {
                let add = ours("ADD");
                let del = ours("DEL");
                plugin_samples.push(add, del);
            } else {
                let add = script_add();
                let del = script_del();
                script_samples.push(add, del);
            }
        }
    }
    assert!(node.ports().is_empty(), "ports left: {:?}", node.ports());

    println!("ovs ADD+DEL (veth, access port tag 100), {iters} rounds each, medians:");
    println!(
        "{:<34} {:>10} {:>10} {:>12} {:>10}",
        "", "ADD wall", "DEL wall", "ADD+DEL wall", "cpu"
    );
    let mut totals = Vec::new();
    for (name, s) in [
        ("ours (OVSDB directly)", plugin_samples),
        ("ip + ovs-vsctl (6 commands)", script_samples),
    ] {
        let total = median(&s.total);
        println!(
            "{:<34} {:>8.2}ms {:>8.2}ms {:>10.2}ms {:>8.2}ms",
            name,
            ms(median(&s.add)),
            ms(median(&s.del)),
            ms(total),
            ms(median(&s.cpu)),
        );
        totals.push(total);
    }
    let ratio = totals[0].as_secs_f64() / totals[1].as_secs_f64();
    let verdict = if ratio <= 0.5 {
        "meets goal"
    } else {
        "MISSES goal"
    };
    println!("wall ratio ours/scripted: {ratio:.2}x (goal <= 0.50x: {verdict})");
}
