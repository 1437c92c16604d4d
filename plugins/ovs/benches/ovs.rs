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
//! `cargo bench -p ovs --bench ovs` (as root; BENCH_ITERS sets the rounds, default 100).

#[path = "../tests/common/mod.rs"]
mod common;

use std::fs::File;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{OvsNode, Pod, BRIDGE, IFNAME};
use nix::sched::{setns, CloneFlags};
use serde_json::json;

/// Wall and CPU (user + system) time of what one side did in a round.
#[derive(Default, Clone, Copy)]
struct Cost {
    wall: Duration,
    cpu: Duration,
}

impl std::ops::AddAssign for Cost {
    fn add_assign(&mut self, o: Cost) {
        self.wall += o.wall;
        self.cpu += o.cpu;
    }
}

/// Runs one command to completion and reaps it with wait4 for its own rusage.
#[allow(clippy::zombie_processes)] // reaped by wait4 below, which std's Child cannot see
fn run(mut cmd: Command, stdin: &[u8]) -> Cost {
    use std::io::Write;
    let desc = format!("{cmd:?}");
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {desc}: {e}"));
    if let Some(mut pipe) = child.stdin.take() {
        let _ = pipe.write_all(stdin);
    }
    let mut status = 0;
    // SAFETY: rusage is plain data filled in by the kernel; the pid is our own child's.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = i32::try_from(child.id()).expect("pid fits i32");
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = start.elapsed();
    assert_eq!(rc, pid, "wait4 failed");
    let mut out = String::new();
    if let Some(mut s) = child.stdout.take() {
        let _ = s.read_to_string(&mut out);
    }
    if let Some(mut s) = child.stderr.take() {
        let _ = s.read_to_string(&mut out);
    }
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{desc} failed: {out}"
    );
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.unsigned_abs())
            + Duration::from_micros(t.tv_usec.unsigned_abs())
    };
    Cost {
        wall,
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[derive(Default)]
struct Samples {
    add: Vec<Duration>,
    del: Vec<Duration>,
    total: Vec<Duration>,
    cpu: Vec<Duration>,
}

impl Samples {
    fn push(&mut self, add: Cost, del: Cost) {
        self.add.push(add.wall);
        self.del.push(del.wall);
        self.total.push(add.wall + del.wall);
        self.cpu.push(add.cpu + del.cpu);
    }
}

fn main() {
    netns_tests::require_root();
    let iters: usize = std::env::var("BENCH_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(100);
    let node = OvsNode::start("bench-ovs");
    let pod = Pod::new("bench-ovs-pod");
    // Join the host namespace for good: every command below starts in it directly.
    let host_ns = File::open(node.host.netns().path()).expect("open the host namespace");
    setns(&host_ns, CloneFlags::CLONE_NEWNET).expect("join the host namespace");

    let plugin = common::plugin_dir().join("ovs");
    let conf = node.config(json!({"vlan": 100})).to_string();
    let socket = format!("--db={}", node.socket());
    let ours = |verb: &str| {
        let mut cmd = Command::new(&plugin);
        cmd.env_clear()
            .env("CNI_COMMAND", verb)
            .env("CNI_CONTAINERID", &pod.container_id)
            .env("CNI_NETNS", pod.ns.path_str())
            .env("CNI_IFNAME", IFNAME)
            .env("CNI_PATH", common::plugin_dir());
        run(cmd, conf.as_bytes())
    };
    let host = "vethbench0";
    let tool = |program: &str, args: &[&str]| {
        let mut cmd = Command::new(program);
        cmd.args(args).env("OVS_RUNDIR", node.dir.path());
        run(cmd, b"")
    };
    let script_add = || {
        let mut c = tool(
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
        c += tool("ip", &["link", "set", host, "up"]);
        c += tool("ip", &["-n", pod.ns.name(), "link", "set", IFNAME, "up"]);
        c += tool(
            "ovs-vsctl",
            &[
                &socket, "add-port", BRIDGE, host, "--", "set", "Port", host, "tag=100",
            ],
        );
        c
    };
    let script_del = || {
        let mut c = tool("ovs-vsctl", &[&socket, "del-port", BRIDGE, host]);
        c += tool("ip", &["link", "del", host]);
        c
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
        let total = median(s.total);
        println!(
            "{:<34} {:>8.2}ms {:>8.2}ms {:>10.2}ms {:>8.2}ms",
            name,
            ms(median(s.add)),
            ms(median(s.del)),
            ms(total),
            ms(median(s.cpu)),
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
