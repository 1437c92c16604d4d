//! `node-agent run` end to end: it installs, stays up, publishes the Linux bridges of its
//! network namespace on a Node held by a small fake API server (in the same throwaway
//! namespace, reached through a kubeconfig), follows bridges coming and going (on the kernel's
//! link notifications, not only its ticks), and exits 0 on SIGTERM.

mod common;

use std::fs;
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use cni_common::netlink::Netlink;
use cni_common::netns::NetNs;
use common::fake_api::{fake_api_server, marking_command, Cluster};
use common::*;
use netns_tests::openvswitch::OvsNode;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::json;
use wait_timeout::ChildExt;

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
            panic!("node-agent run did not stop on SIGTERM");
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

/// Starts `node-agent run <marking>` in `ns`, installing `bridge` from the `src` to the
/// `dst` subdirectory of `t`, against the fake API server on `port`.
fn start_marking(t: &TestDir, ns: &NetNs, port: u16, marking: &[&str]) -> Marking {
    let child = marking_command(t, ns, port, marking)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start node-agent run");
    Marking(child)
}

#[test]
fn run_installs_marks_bridges_follows_them_and_stops_on_sigterm() {
    netns_tests::skip_unless_root!();
    let t = TestDir::new("run");
    let (src, _dst, _, d) = t.src_dst();
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
    let mut child = start_marking(&t, &ns, port, &LINUX_BRIDGES_EVERY_100MS);

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
        let patch = &c.patches[0];
        assert_eq!(patch.content_type, "application/merge-patch+json");
        assert_eq!(
            &patch.body,
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
    let (src, ..) = t.src_dst();
    write_plugin(&src, "bridge", b'b', 10);
    let ns = new_netns();
    let nl = Netlink::in_netns(&ns).expect("netlink");
    nl.link_set_up_by_name("lo").expect("lo up");
    nl.link_add_bridge("br0", None, false).expect("bridge");
    let cluster = Arc::new(Mutex::new(Cluster::default()));
    let port = fake_api_server(&ns, cluster.clone());
    let mut child = start_marking(&t, &ns, port, &LINUX_BRIDGES_EVERY_HOUR);
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
    // The capacity is what counts: the agent logs a change only once the API server answered
    // its PATCH, which may be after the SIGTERM.
    assert!(status.success(), "exit on SIGTERM: {status}: {log}");
}

/// An Open vSwitch bridge has a netdev in the kernel too (a tap with the userspace datapath):
/// with an interval of an hour, its link notifications alone make `--mark ovs` publish a bridge
/// added after it started, and withdraw it once deleted, within seconds.
#[test]
fn ovs_bridges_are_published_and_withdrawn_on_link_events_long_before_the_interval() {
    netns_tests::skip_unless_root!();
    let t = TestDir::new("run-ovs-events");
    let (src, ..) = t.src_dst();
    write_plugin(&src, "bridge", b'b', 10);
    // ovsdb-server and ovs-vswitchd in a namespace of the test's own, with bridge br0.
    let ovs = OvsNode::start("inst-run-ovs");
    let ns = NetNs::open(ovs.host.netns().path()).expect("the OVS node's namespace");
    let cluster = Arc::new(Mutex::new(Cluster::default()));
    let port = fake_api_server(&ns, cluster.clone());
    let db = ovs.socket();
    let marking = ["--mark", "ovs", "--ovsdb", &db, "--interval", "1h"];
    let mut child = start_marking(&t, &ns, port, &marking);
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
    let (src, ..) = t.src_dst();
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
    let mut child = start_marking(&t, &ns, port, &LINUX_BRIDGES_EVERY_100MS);
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
        .expect("start node-agent run");
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
