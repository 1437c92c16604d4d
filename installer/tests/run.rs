//! `cni-installer run` end to end: it installs, stays up, publishes the Linux bridges of its
//! network namespace on a Node held by a small fake API server (in the same throwaway
//! namespace, reached through a kubeconfig), follows bridges coming and going (on the kernel's
//! link notifications, not only its ticks), and exits 0 on SIGTERM.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use cni_common::netlink::Netlink;
use cni_common::netns::NetNs;
use common::*;
use netns_tests::openvswitch::OvsNode;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};
use wait_timeout::ChildExt;

/// The Node `node-1` as the fake API server holds it, every PATCH body it received, and every
/// request it refused as RBAC would. With `hang`, a GET of the Node is never answered (and
/// counted in `hung`), as by an API server that went away without closing the connection.
#[derive(Default)]
struct Cluster {
    capacity: BTreeMap<String, String>,
    patches: Vec<(String, Value)>,
    forbidden: Vec<String>,
    hang: bool,
    hung: usize,
}

/// Serves GET of /api/v1/nodes/node-1 and PATCH of /api/v1/nodes/node-1/status on 127.0.0.1
/// inside `ns`; its port. Like a server enforcing the marker's role (`get` on `nodes`, `patch`
/// on `nodes/status`), it refuses a GET of the status subresource with 403. A socket stays in
/// the namespace it was created in, whichever thread accepts on it.
fn fake_api_server(ns: &NetNs, cluster: Arc<Mutex<Cluster>>) -> u16 {
    let listener = ns
        .run(|| {
            TcpListener::bind("127.0.0.1:0").map_err(|e| cni_common::Error::system(e.to_string()))
        })
        .expect("listen in the test netns");
    let port = listener.local_addr().expect("addr").port();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { break };
            let cluster = cluster.clone();
            thread::spawn(move || serve(conn, &cluster));
        }
    });
    port
}

/// HTTP/1.1 with keep-alive, one request at a time.
fn serve(conn: TcpStream, cluster: &Mutex<Cluster>) {
    let mut reader = BufReader::new(conn.try_clone().expect("clone"));
    let mut conn = conn;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = request_line.split_whitespace();
        let (method, path) = (
            parts.next().unwrap_or_default().to_string(),
            parts.next().unwrap_or_default().to_string(),
        );
        let (mut length, mut content_type) = (0usize, String::new());
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
                match name.to_ascii_lowercase().as_str() {
                    "content-length" => length = value.trim().parse().unwrap_or(0),
                    "content-type" => content_type = value.trim().to_string(),
                    _ => {}
                }
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let path = path.split('?').next().unwrap_or_default().to_string();
        {
            let mut cluster = cluster.lock().expect("cluster");
            if cluster.hang && method == "GET" {
                cluster.hung += 1;
                drop(cluster);
                // Keeps the connection open and silent until the test process ends.
                loop {
                    thread::park();
                }
            }
        }
        let (status, answer) = {
            let mut cluster = cluster.lock().expect("cluster");
            match (method.as_str(), path.as_str()) {
                ("GET", "/api/v1/nodes/node-1") => (200, node(&cluster.capacity)),
                ("GET", "/api/v1/nodes/node-1/status") => {
                    cluster.forbidden.push(format!("{method} {path}"));
                    (
                        403,
                        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                               "reason": "Forbidden", "code": 403,
                               "message": "cannot get resource \"nodes/status\""}),
                    )
                }
                ("PATCH", "/api/v1/nodes/node-1/status") => {
                    let patch: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    if let Some(changes) = patch["status"]["capacity"].as_object() {
                        for (key, value) in changes {
                            match value.as_str() {
                                Some(q) => cluster.capacity.insert(key.clone(), q.to_string()),
                                None => cluster.capacity.remove(key),
                            };
                        }
                    }
                    cluster.patches.push((content_type.clone(), patch));
                    (200, node(&cluster.capacity))
                }
                _ => (
                    404,
                    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404}),
                ),
            }
        };
        let body = answer.to_string();
        let response = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        if conn.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

fn node(capacity: &BTreeMap<String, String>) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "node-1"},
        "status": {"capacity": capacity}
    })
}

/// Waits until `cond` holds on the cluster, or fails after a while.
fn wait_for(cluster: &Mutex<Cluster>, what: &str, cond: impl Fn(&Cluster) -> bool) {
    wait_for_within(cluster, Duration::from_secs(20), what, cond);
}

/// Waits until `cond` holds on the cluster, or fails after `timeout`.
fn wait_for_within(
    cluster: &Mutex<Cluster>,
    timeout: Duration,
    what: &str,
    cond: impl Fn(&Cluster) -> bool,
) {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if cond(&cluster.lock().expect("cluster")) {
            return;
        }
        thread::sleep(Duration::from_millis(20));
    }
    let c = cluster.lock().expect("cluster");
    panic!(
        "{what}: capacity {:?}, patches {:?}, refused {:?}",
        c.capacity, c.patches, c.forbidden
    );
}

fn bridge_keys(c: &Cluster) -> Vec<String> {
    c.capacity
        .keys()
        .filter(|k| k.starts_with("bridge.network.kubevirt.io/"))
        .cloned()
        .collect()
}

const LINUX_BRIDGES_EVERY_100MS: [&str; 4] = ["--mark", "linux-bridge", "--interval", "100ms"];
const LINUX_BRIDGES_EVERY_HOUR: [&str; 4] = ["--mark", "linux-bridge", "--interval", "1h"];

fn ovs_keys(c: &Cluster) -> Vec<String> {
    c.capacity
        .keys()
        .filter(|k| k.starts_with("ovs-cni.network.kubevirt.io/"))
        .cloned()
        .collect()
}

/// Stops a child we started, by its pid.
fn terminate(child: &mut Child) -> std::process::ExitStatus {
    let pid = Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    kill(pid, Signal::SIGTERM).expect("SIGTERM");
    match child.wait_timeout(Duration::from_secs(10)).expect("wait") {
        Some(status) => status,
        None => {
            let _ = kill(pid, Signal::SIGKILL);
            let _ = child.wait();
            panic!("cni-installer run did not stop on SIGTERM");
        }
    }
}

/// A marking `run` we started; killed if a failed test leaves it running (its interval may be
/// an hour).
struct Marking(Child);

impl std::ops::Deref for Marking {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Marking {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for Marking {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Starts `cni-installer run <marking>` in `ns`, installing `bridge` from `src` to `dst`,
/// against the fake API server on `port`.
fn start_marking(
    t: &TestDir,
    ns: &NetNs,
    port: u16,
    (src, dst): (&str, &str),
    marking: &[&str],
) -> Marking {
    let kubeconfig = t.path().join("kubeconfig");
    fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: http://127.0.0.1:{port}\n\
             contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n\
             current-context: fake\nusers:\n- name: fake\n  user: {{}}\n"
        ),
    )
    .expect("kubeconfig");
    let child = Command::new("/usr/bin/nsenter")
        .arg(format!(
            "--net=/proc/{}/fd/{}",
            std::process::id(),
            ns.as_raw_fd()
        ))
        .arg(installer())
        .args(["run", "--from", src, "--to", dst, "--plugins", "bridge"])
        .args(marking)
        .env_clear()
        .env("NODE_NAME", "node-1")
        .env("KUBECONFIG", &kubeconfig)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start cni-installer run");
    Marking(child)
}

#[test]
fn run_installs_marks_bridges_follows_them_and_stops_on_sigterm() {
    netns_tests::skip_unless_root!();
    let t = TestDir::new("run");
    let (src, _dst, s, d) = t.src_dst();
    write_plugin(&src, "bridge", b'b', 10);

    let ns = new_netns();
    let nl = Netlink::in_netns(&ns).expect("netlink");
    nl.link_set_up_by_name("lo").expect("lo up");
    for name in ["br0", "br1"] {
        nl.link_add_bridge(name, None, false).expect("bridge");
    }
    let cluster = Arc::new(Mutex::new(Cluster::default()));
    {
        let mut c = cluster.lock().expect("cluster");
        c.capacity.insert("cpu".to_string(), "2".to_string());
        c.capacity.insert(
            "bridge.network.kubevirt.io/gone".to_string(),
            "1k".to_string(),
        );
        c.capacity.insert(
            "ovs-cni.network.kubevirt.io/br-ex".to_string(),
            "1k".to_string(),
        );
    }
    let port = fake_api_server(&ns, cluster.clone());
    let mut child = start_marking(&t, &ns, port, (&s, &d), &LINUX_BRIDGES_EVERY_100MS);

    wait_for(&cluster, "br0 and br1 published, gone withdrawn", |c| {
        bridge_keys(c)
            == [
                "bridge.network.kubevirt.io/br0",
                "bridge.network.kubevirt.io/br1",
            ]
    });
    // Installed before it marked anything, and ready.
    run_ok(&["probe", "--to", &d, "--plugins", "bridge"]);
    {
        let c = cluster.lock().expect("cluster");
        assert_eq!(
            c.patches.len(),
            1,
            "one patch for all of it: {:?}",
            c.patches
        );
        let (content_type, patch) = &c.patches[0];
        assert_eq!(content_type, "application/merge-patch+json");
        assert_eq!(
            patch,
            &json!({"status": {"capacity": {
                "bridge.network.kubevirt.io/br0": "1k",
                "bridge.network.kubevirt.io/br1": "1k",
                "bridge.network.kubevirt.io/gone": null}}})
        );
        assert_eq!(c.capacity["ovs-cni.network.kubevirt.io/br-ex"], "1k");
        assert_eq!(c.capacity["cpu"], "2");
        assert!(c.forbidden.is_empty(), "refused: {:?}", c.forbidden);
    }

    let br0 = nl.link_show("br0").expect("show").expect("br0");
    nl.link_del(br0.index).expect("del br0");
    nl.link_add_bridge("br2", None, false).expect("br2");
    wait_for(&cluster, "br0 withdrawn, br2 published", |c| {
        bridge_keys(c)
            == [
                "bridge.network.kubevirt.io/br1",
                "bridge.network.kubevirt.io/br2",
            ]
    });
    // Quiet rounds send nothing.
    let patches = cluster.lock().expect("cluster").patches.len();
    thread::sleep(Duration::from_millis(500));
    assert_eq!(cluster.lock().expect("cluster").patches.len(), patches);

    let status = terminate(&mut child);
    let mut log = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut log);
    }
    assert!(status.success(), "exit on SIGTERM: {status}: {log}");
    assert!(log.contains("bridge: installed"), "{log}");
    assert!(
        log.contains("published bridge.network.kubevirt.io/br2"),
        "{log}"
    );
    assert!(
        log.contains("withdrew bridge.network.kubevirt.io/br0"),
        "{log}"
    );
    assert!(log.contains("stopping"), "{log}");
}

/// With an interval of an hour, only the kernel's link notifications can tell the agent: a
/// bridge created after it started is published, and withdrawn once deleted, within seconds.
#[test]
fn bridges_are_published_and_withdrawn_on_link_events_long_before_the_interval() {
    netns_tests::skip_unless_root!();
    let t = TestDir::new("run-events");
    let (src, _dst, s, d) = t.src_dst();
    write_plugin(&src, "bridge", b'b', 10);
    let ns = new_netns();
    let nl = Netlink::in_netns(&ns).expect("netlink");
    nl.link_set_up_by_name("lo").expect("lo up");
    nl.link_add_bridge("br0", None, false).expect("bridge");
    let cluster = Arc::new(Mutex::new(Cluster::default()));
    let port = fake_api_server(&ns, cluster.clone());
    let mut child = start_marking(&t, &ns, port, (&s, &d), &LINUX_BRIDGES_EVERY_HOUR);
    // The first round, at start: the agent listens to link notifications from then on.
    wait_for(&cluster, "br0 published at start", |c| {
        bridge_keys(c) == ["bridge.network.kubevirt.io/br0"]
    });

    let soon = Duration::from_secs(10);
    nl.link_add_bridge("br1", None, false).expect("br1");
    wait_for_within(&cluster, soon, "br1 published", |c| {
        bridge_keys(c)
            == [
                "bridge.network.kubevirt.io/br0",
                "bridge.network.kubevirt.io/br1",
            ]
    });
    let br1 = nl.link_show("br1").expect("show").expect("br1");
    nl.link_del(br1.index).expect("del br1");
    wait_for_within(&cluster, soon, "br1 withdrawn", |c| {
        bridge_keys(c) == ["bridge.network.kubevirt.io/br0"]
    });

    let status = terminate(&mut child);
    let mut log = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut log);
    }
    assert!(status.success(), "exit on SIGTERM: {status}: {log}");
    assert!(
        log.contains("withdrew bridge.network.kubevirt.io/br1"),
        "{log}"
    );
}

/// An Open vSwitch bridge has a netdev in the kernel too (a tap with the userspace datapath):
/// with an interval of an hour, its link notifications alone make `--mark ovs` publish a bridge
/// added after it started, and withdraw it once deleted, within seconds.
#[test]
fn ovs_bridges_are_published_and_withdrawn_on_link_events_long_before_the_interval() {
    netns_tests::skip_unless_root!();
    let t = TestDir::new("run-ovs-events");
    let (src, _dst, s, d) = t.src_dst();
    write_plugin(&src, "bridge", b'b', 10);
    // ovsdb-server and ovs-vswitchd in a namespace of the test's own, with bridge br0.
    let ovs = OvsNode::start("inst-run-ovs");
    let ns = NetNs::open(ovs.host.netns().path()).expect("the OVS node's namespace");
    let cluster = Arc::new(Mutex::new(Cluster::default()));
    let port = fake_api_server(&ns, cluster.clone());
    let db = ovs.socket();
    let marking = ["--mark", "ovs", "--ovsdb", &db, "--interval", "1h"];
    let mut child = start_marking(&t, &ns, port, (&s, &d), &marking);
    wait_for(&cluster, "br0 published at start", |c| {
        ovs_keys(c) == ["ovs-cni.network.kubevirt.io/br0"]
    });

    let soon = Duration::from_secs(10);
    ovs.vsctl(&[
        "add-br",
        "br1",
        "--",
        "set",
        "bridge",
        "br1",
        "datapath_type=netdev",
    ]);
    wait_for_within(&cluster, soon, "br1 published", |c| {
        ovs_keys(c)
            == [
                "ovs-cni.network.kubevirt.io/br0",
                "ovs-cni.network.kubevirt.io/br1",
            ]
    });
    ovs.vsctl(&["del-br", "br1"]);
    wait_for_within(&cluster, soon, "br1 withdrawn", |c| {
        ovs_keys(c) == ["ovs-cni.network.kubevirt.io/br0"]
    });
    assert!(terminate(&mut child).success());
}

/// SIGTERM ends `run` at once even while a round waits for an API server that does not answer
/// (the client's own read timeout is minutes, the pod's grace period 30 s).
#[test]
fn sigterm_stops_run_while_the_api_server_does_not_answer() {
    netns_tests::skip_unless_root!();
    let t = TestDir::new("run-hung");
    let (src, _dst, s, d) = t.src_dst();
    write_plugin(&src, "bridge", b'b', 10);
    let ns = new_netns();
    let nl = Netlink::in_netns(&ns).expect("netlink");
    nl.link_set_up_by_name("lo").expect("lo up");
    nl.link_add_bridge("br0", None, false).expect("bridge");
    let cluster = Arc::new(Mutex::new(Cluster {
        hang: true,
        ..Cluster::default()
    }));
    let port = fake_api_server(&ns, cluster.clone());
    let mut child = start_marking(&t, &ns, port, (&s, &d), &LINUX_BRIDGES_EVERY_100MS);
    wait_for(&cluster, "a GET of the node, left unanswered", |c| {
        c.hung > 0
    });
    thread::sleep(Duration::from_millis(300));
    assert!(child.try_wait().expect("wait").is_none(), "run stays up");

    let started = Instant::now();
    let status = terminate(&mut child);
    let took = started.elapsed();
    let mut log = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut log);
    }
    assert!(status.success(), "exit on SIGTERM: {status}: {log}");
    assert!(
        took < Duration::from_secs(3),
        "stopped after {took:?}: {log}"
    );
    assert!(log.contains("stopping"), "{log}");
    assert!(cluster.lock().expect("cluster").patches.is_empty());
}

#[test]
fn run_without_mark_waits_and_a_failed_install_exits_non_zero() {
    netns_tests::skip_unless_root!();
    let t = TestDir::new("run-plain");
    let (src, dst, s, d) = t.src_dst();
    write_plugin(&src, "tuning", b't', 10);
    let mut child = Command::new(installer())
        .args(["run", "--from", &s, "--to", &d, "--plugins", "tuning"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start cni-installer run");
    let deadline = Instant::now() + Duration::from_secs(10);
    while run(&["probe", "--to", &d, "--plugins", "tuning"])
        .status
        .code()
        != Some(0)
    {
        assert!(Instant::now() < deadline, "never became ready");
        thread::sleep(Duration::from_millis(20));
    }
    thread::sleep(Duration::from_millis(200));
    assert!(child.try_wait().expect("wait").is_none(), "run stays up");
    assert!(terminate(&mut child).success());

    // A foreign file: the install fails, and so does run, at once.
    fs::write(dst.join("bridge"), b"vendor").expect("foreign");
    write_plugin(&src, "bridge", b'b', 10);
    let err = run_err(&["run", "--from", &s, "--to", &d, "--plugins", "bridge"]);
    assert!(err.contains("--replace-foreign"), "{err}");
    // --mark without the node's name fails before anything is installed.
    let err = run_err(&[
        "run",
        "--from",
        &s,
        "--to",
        &d,
        "--plugins",
        "tuning,bridge",
        "--mark",
        "linux-bridge",
    ]);
    assert!(err.contains("NODE_NAME"), "{err}");
}
