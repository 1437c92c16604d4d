//! How soon `node-agent run --mark linux-bridge` publishes a bridge that appears, and
//! withdraws one that goes: from the netlink request creating (deleting) the bridge to the
//! PATCH of the Node's status arriving at a small fake API server. Upstream's bridge-marker
//! lists the bridges every 60 s, so it reacts after 30 s on average and 60 s at worst; ours
//! reacts to the kernel's link notifications, and runs here with `--interval 1h` so that only
//! they can explain a reaction. Most of ours is the 100 ms a burst of notifications is given to
//! settle; a removal also counts the kernel's own work before it notifies (the link is taken
//! down and an RCU grace period passes). Everything happens in a network namespace of the benchmark's own. Prints medians and
//! the ratio against upstream's average; it fails only when the agent does not react at all.
//!
//! `cargo bench -p node-agent --bench marker` (as root; BENCH_ITERS sets the rounds,
//! default 10).

#[path = "../tests/common/mod.rs"]
mod common;

use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use cni_common::netlink::Netlink;
use cni_common::netns::NetNs;
use common::fake_api::{fake_api_server, marking_command, Cluster};
use common::{new_netns, write_plugin, TestDir};
use netns_tests::bench::{iterations, median, ms};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use wait_timeout::ChildExt;

/// Upstream bridge-marker's (and ovs-cni marker's) update interval.
const UPSTREAM_INTERVAL: Duration = Duration::from_secs(60);

const KEY: &str = "bridge.network.kubevirt.io/brbench";

/// When the first PATCH since `since` that sets `KEY` to `value` (None: removes it) arrived.
fn patched(node: &Mutex<Cluster>, since: Instant, value: Option<&str>) -> Duration {
    let deadline = since + Duration::from_secs(30);
    while Instant::now() < deadline {
        let found = node.lock().expect("node").patches.iter().find_map(|patch| {
            let p = &patch.body;
            let v = &p["status"]["capacity"][KEY];
            let matches = match value {
                Some(q) => v.as_str() == Some(q),
                None => v.is_null() && p["status"]["capacity"].get(KEY).is_some(),
            };
            (patch.at >= since && matches).then_some(patch.at)
        });
        if let Some(at) = found {
            return at - since;
        }
        thread::sleep(Duration::from_millis(1));
    }
    panic!("no PATCH for {KEY} = {value:?} within 30 s");
}

fn start_agent(t: &TestDir, ns: &NetNs, port: u16) -> Child {
    let (src, ..) = t.src_dst();
    write_plugin(&src, "bridge", b'b', 10);
    let marking = ["--mark", "linux-bridge", "--interval", "1h"];
    marking_command(t, ns, port, &marking)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start node-agent run")
}

fn main() {
    netns_tests::require_root();
    let iters = iterations(10).max(1);
    let t = TestDir::new("bench-marker");
    let ns = new_netns();
    let nl = Netlink::in_netns(&ns).expect("netlink");
    nl.link_set_up_by_name("lo").expect("lo up");
    let node = Arc::new(Mutex::new(Cluster::default()));
    let port = fake_api_server(&ns, node.clone());
    // The first round, at start, publishes a bridge already there: once it has, the agent
    // listens to link notifications.
    let started = Instant::now();
    nl.link_add_bridge("brbench", None, false).expect("bridge");
    let mut agent = start_agent(&t, &ns, port);
    patched(&node, started, Some("1k"));
    let index = |nl: &Netlink| {
        nl.link_show("brbench")
            .expect("show")
            .expect("brbench")
            .index
    };
    nl.link_del(index(&nl)).expect("del");
    patched(&node, started, None);

    let (mut created, mut deleted) = (Vec::new(), Vec::new());
    for _ in 0..iters {
        let start = Instant::now();
        nl.link_add_bridge("brbench", None, false).expect("bridge");
        created.push(patched(&node, start, Some("1k")));
        let gone = index(&nl);
        let start = Instant::now();
        nl.link_del(gone).expect("del");
        deleted.push(patched(&node, start, None));
    }

    let pid = Pid::from_raw(i32::try_from(agent.id()).expect("pid"));
    kill(pid, Signal::SIGTERM).expect("SIGTERM");
    if agent
        .wait_timeout(Duration::from_secs(10))
        .expect("wait")
        .is_none()
    {
        let _ = kill(pid, Signal::SIGKILL);
        let _ = agent.wait();
    }

    let max = |v: &[Duration]| v.iter().max().copied().unwrap_or_default();
    let upstream = UPSTREAM_INTERVAL / 2;
    println!("bridge marker, link change -> PATCH of the Node's status, {iters} rounds:");
    println!(
        "{:<38} {:>12} {:>12} {:>12} {:>12}",
        "", "added med", "added max", "removed med", "removed max"
    );
    println!(
        "{:<38} {:>10.1}ms {:>10.1}ms {:>10.1}ms {:>10.1}ms",
        "ours (link notifications)",
        ms(median(&created)),
        ms(max(&created)),
        ms(median(&deleted)),
        ms(max(&deleted)),
    );
    println!(
        "{:<38} {:>10.0}ms {:>10.0}ms {:>10.0}ms {:>10.0}ms",
        format!("upstream (polls every {}s)", UPSTREAM_INTERVAL.as_secs()),
        ms(upstream),
        ms(UPSTREAM_INTERVAL),
        ms(upstream),
        ms(UPSTREAM_INTERVAL),
    );
    println!(
        "ratio ours/upstream (median against the poll's average): added {:.4}x, removed {:.4}x",
        median(&created).as_secs_f64() / upstream.as_secs_f64(),
        median(&deleted).as_secs_f64() / upstream.as_secs_f64(),
    );
}
