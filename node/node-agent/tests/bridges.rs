//! Listing the node's bridges for `run --mark`: Linux bridges in a throwaway network namespace,
//! Open vSwitch bridges in a private ovsdb-server (no ovs-vswitchd needed: the marker reads the
//! database only).

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use cni_common::netlink::{Netlink, Veth};
use common::{new_netns, TestDir};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use node_agent::bridges::{self, Source};
use node_agent::marker::Mark;

fn names(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn linux_bridges_are_listed_and_nothing_else() {
    netns_tests::skip_unless_root!();
    let ns = new_netns();
    let nl = Netlink::in_netns(&ns).expect("netlink");
    assert!(bridges::linux_bridges(&nl).expect("list").is_empty());
    for name in ["br0", "br-vms", "cni0"] {
        assert!(nl.link_add_bridge(name, None, false).expect("bridge"));
    }
    nl.link_add_veth(&Veth {
        name: "veth-a",
        peer_name: "veth-b",
        ..Veth::default()
    })
    .expect("veth");
    assert_eq!(
        bridges::linux_bridges(&nl).expect("list"),
        names(&["br-vms", "br0", "cni0"])
    );
    let br0 = nl.link_show("br0").expect("show").expect("br0 exists");
    nl.link_del(br0.index).expect("del");
    assert_eq!(
        bridges::linux_bridges(&nl).expect("list"),
        names(&["br-vms", "cni0"])
    );
}

/// ovsdb-server on a socket in `dir`, stopped by the pid in its pidfile on drop.
struct OvsdbServer {
    dir: PathBuf,
}

impl OvsdbServer {
    fn start(dir: &Path) -> OvsdbServer {
        let db = dir.join("conf.db");
        run(Command::new("ovsdb-tool")
            .arg("create")
            .arg(&db)
            .arg("/usr/share/openvswitch/vswitch.ovsschema"));
        run(Command::new("ovsdb-server")
            .arg(format!("--remote=punix:{}", dir.join("db.sock").display()))
            .arg(format!("--pidfile={}", dir.join("ovsdb.pid").display()))
            .arg(format!("--log-file={}", dir.join("ovsdb.log").display()))
            .arg(format!("--unixctl={}", dir.join("ovsdb.ctl").display()))
            .arg("--detach")
            .arg(&db));
        let server = OvsdbServer {
            dir: dir.to_path_buf(),
        };
        server.vsctl(&["--no-wait", "init"]);
        server
    }

    fn endpoint(&self) -> String {
        format!("unix:{}", self.dir.join("db.sock").display())
    }

    fn vsctl(&self, args: &[&str]) {
        run(Command::new("ovs-vsctl")
            .arg(format!("--db={}", self.endpoint()))
            .arg("--timeout=10")
            .args(args));
    }
}

impl Drop for OvsdbServer {
    fn drop(&mut self) {
        let Ok(pid) = std::fs::read_to_string(self.dir.join("ovsdb.pid")) else {
            return;
        };
        let Ok(pid) = pid.trim().parse::<i32>() else {
            return;
        };
        let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        // Wait until it is gone, so the test's directory can go too.
        let deadline = Instant::now() + Duration::from_secs(5);
        while kill(Pid::from_raw(pid), None).is_ok() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
    }
}

fn run(cmd: &mut Command) {
    let out = cmd
        .output()
        .expect("run an OVS command (openvswitch-switch installed?)");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn ovs_bridges_are_read_from_ovsdb() {
    netns_tests::skip_unless_root!();
    let t = TestDir::new("ovsdb");
    let server = OvsdbServer::start(t.path());
    let source = Source::open(Mark::Ovs, &server.endpoint()).expect("source");
    assert!(source.list().expect("list").is_empty());
    server.vsctl(&["--no-wait", "add-br", "br-ex"]);
    server.vsctl(&["--no-wait", "add-br", "br1"]);
    assert_eq!(source.list().expect("list"), names(&["br-ex", "br1"]));
    server.vsctl(&["--no-wait", "del-br", "br-ex"]);
    assert_eq!(source.list().expect("list"), names(&["br1"]));

    // An unreachable OVSDB is an error, never an empty list (which would withdraw every bridge).
    drop(server);
    let err = source.list().expect_err("ovsdb-server is gone");
    assert!(err.report().contains("OVSDB"), "{}", err.report());
}
