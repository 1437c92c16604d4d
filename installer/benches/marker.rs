//! How soon `cni-installer run --mark linux-bridge` publishes a bridge that appears, and
//! withdraws one that goes: from the netlink request creating (deleting) the bridge to the
//! PATCH of the Node's status arriving at a small fake API server. Upstream's bridge-marker
//! lists the bridges every 60 s, so it reacts after 30 s on average and 60 s at worst; ours
//! reacts to the kernel's link notifications, and runs here with `--interval 1h` so that only
//! they can explain a reaction. Most of ours is the 100 ms a burst of notifications is given to
//! settle; a removal also counts the kernel's own work before it notifies (the link is taken
//! down and an RCU grace period passes). Everything happens in a network namespace of the benchmark's own. Prints medians and
//! the ratio against upstream's average; it fails only when the agent does not react at all.
//!
//! `cargo bench -p cni-installer --bench marker` (as root; BENCH_ITERS sets the rounds,
//! default 10).

#[path = "../tests/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use cni_common::netlink::Netlink;
use cni_common::netns::NetNs;
use common::{installer, new_netns, write_plugin, TestDir};
use netns_tests::bench::{iterations, median, ms};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};
use wait_timeout::ChildExt;

/// Upstream bridge-marker's (and ovs-cni marker's) update interval.
const UPSTREAM_INTERVAL: Duration = Duration::from_secs(60);

const KEY: &str = "bridge.network.kubevirt.io/brbench";

/// The Node's capacity, and every PATCH of its status with the moment it arrived.
#[derive(Default)]
struct Node {
    capacity: BTreeMap<String, String>,
    patches: Vec<(Instant, Value)>,
}

/// Answers GET /api/v1/nodes/node-1 and PATCH /api/v1/nodes/node-1/status on 127.0.0.1 inside
/// `ns` (HTTP/1.1, keep-alive); its port.
fn fake_api_server(ns: &NetNs, node: Arc<Mutex<Node>>) -> u16 {
    let listener = ns
        .run(|| {
            TcpListener::bind("127.0.0.1:0").map_err(|e| cni_common::Error::system(e.to_string()))
        })
        .expect("listen in the namespace");
    let port = listener.local_addr().expect("addr").port();
    thread::spawn(move || {
        for conn in listener.incoming().map_while(Result::ok) {
            let node = node.clone();
            thread::spawn(move || serve(conn, &node));
        }
    });
    port
}

fn serve(conn: TcpStream, node: &Mutex<Node>) {
    let mut reader = BufReader::new(conn.try_clone().expect("clone"));
    let mut conn = conn;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let arrived = Instant::now();
        let mut node = node.lock().expect("node");
        let mut parts = request_line.split_whitespace();
        let method = parts.next().unwrap_or_default();
        let path = parts.next().unwrap_or_default().split('?').next();
        let status = match (method, path) {
            ("GET", Some("/api/v1/nodes/node-1")) => 200,
            ("PATCH", Some("/api/v1/nodes/node-1/status")) => {
                let patch: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                if let Some(changes) = patch["status"]["capacity"].as_object() {
                    for (key, value) in changes {
                        match value.as_str() {
                            Some(q) => node.capacity.insert(key.clone(), q.to_string()),
                            None => node.capacity.remove(key),
                        };
                    }
                }
                node.patches.push((arrived, patch));
                200
            }
            _ => 404,
        };
        let body = json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "node-1"},
            "status": {"capacity": node.capacity}
        })
        .to_string();
        drop(node);
        let response = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        if conn.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

/// When the first PATCH since `since` that sets `KEY` to `value` (None: removes it) arrived.
fn patched(node: &Mutex<Node>, since: Instant, value: Option<&str>) -> Duration {
    let deadline = since + Duration::from_secs(30);
    while Instant::now() < deadline {
        let found = node
            .lock()
            .expect("node")
            .patches
            .iter()
            .find_map(|(at, p)| {
                let v = &p["status"]["capacity"][KEY];
                let matches = match value {
                    Some(q) => v.as_str() == Some(q),
                    None => v.is_null() && p["status"]["capacity"].get(KEY).is_some(),
                };
                (*at >= since && matches).then_some(*at)
            });
        if let Some(at) = found {
            return at - since;
        }
        thread::sleep(Duration::from_millis(1));
    }
    panic!("no PATCH for {KEY} = {value:?} within 30 s");
}

fn start_agent(t: &TestDir, ns: &NetNs, port: u16) -> Child {
    let (src, _dst, s, d) = t.src_dst();
    write_plugin(&src, "bridge", b'b', 10);
    let kubeconfig = t.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: http://127.0.0.1:{port}\n\
             contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n\
             current-context: fake\nusers:\n- name: fake\n  user: {{}}\n"
        ),
    )
    .expect("kubeconfig");
    Command::new("/usr/bin/nsenter")
        .arg(format!(
            "--net=/proc/{}/fd/{}",
            std::process::id(),
            ns.as_raw_fd()
        ))
        .arg(installer())
        .args(["run", "--from", &s, "--to", &d, "--plugins", "bridge"])
        .args(["--mark", "linux-bridge", "--interval", "1h"])
        .env_clear()
        .env("NODE_NAME", "node-1")
        .env("KUBECONFIG", &kubeconfig)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start cni-installer run")
}

fn main() {
    netns_tests::require_root();
    let iters = iterations(10).max(1);
    let t = TestDir::new("bench-marker");
    let ns = new_netns();
    let nl = Netlink::in_netns(&ns).expect("netlink");
    nl.link_set_up_by_name("lo").expect("lo up");
    let node = Arc::new(Mutex::new(Node::default()));
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
