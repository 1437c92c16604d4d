//! A private Open vSwitch for the ovs plugin's tests and benchmark: ovsdb-server and
//! ovs-vswitchd (userspace datapath) started inside a throwaway "host" namespace, with their
//! database, sockets, pidfiles and logs in a temp dir of their own, and stopped by the pids in
//! their pidfiles. The plugin runs in the same namespace, because ovs-vswitchd opens port devices
//! in its own namespace.

use std::fs::File;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

use crate::{
    expect_success, run_command, unique_name, wait_for, HostSandbox, Link, Netns, TempDir,
};

pub const BRIDGE: &str = "br0";
pub const IFNAME: &str = "net1";
pub const NETWORK: &str = "ovstest";
const SCHEMA: &str = "/usr/share/openvswitch/vswitch.ovsschema";
/// ovsdb-server also listens here (inside the host namespace) for the tcp: endpoint test.
pub const TCP_PORT: u16 = 6640;

/// One OVS "node": daemons, the host namespace they run in, and their directory. Fields drop in
/// this order: the daemons stop before their namespace and directory go.
pub struct OvsNode {
    pub daemons: Daemons,
    pub host: HostSandbox,
    pub dir: TempDir,
}

/// The daemons of one node, stopped by pid on drop.
pub struct Daemons {
    dir: PathBuf,
    host: String,
}

impl OvsNode {
    /// A node with bridge `br0` (datapath_type=netdev), ready for ports.
    pub fn start(tag: &str) -> OvsNode {
        OvsNode::start_on(tag, "netdev")
    }

    /// The same with another datapath type: `system` is the kernel's (the real-kernel tier).
    pub fn start_on(tag: &str, datapath: &str) -> OvsNode {
        let host = HostSandbox::new(tag);
        let dir = TempDir::new(&format!("{tag}-ovs"));
        let daemons = Daemons {
            dir: dir.path().to_path_buf(),
            host: host.netns().name().to_string(),
        };
        let node = OvsNode { daemons, host, dir };
        node.daemons.run_ok(
            "ovsdb-tool",
            &["create", &node.path("conf.db"), SCHEMA],
            false,
        );
        node.daemons.start_ovsdb();
        node.vsctl(&["--no-wait", "init"]);
        node.daemons.start_vswitchd();
        node.vsctl(&[
            "add-br",
            BRIDGE,
            "--",
            "set",
            "bridge",
            BRIDGE,
            &format!("datapath_type={datapath}"),
        ]);
        node
    }

    pub fn path(&self, file: &str) -> String {
        self.dir.join(file).display().to_string()
    }

    /// `unix:<dir>/db.sock`.
    pub fn socket(&self) -> String {
        format!("unix:{}", self.path("db.sock"))
    }

    /// The root ovs-cni's cache directories are taken from (`OVS_CNI_ROOT`): the test's own.
    pub fn cache_root(&self) -> String {
        self.path("root")
    }

    /// `ovs-vsctl --db=<ours> args...`, which must succeed; returns stdout trimmed.
    pub fn vsctl(&self, args: &[&str]) -> String {
        let out = self.vsctl_output(args);
        expect_success(&out, &format!("ovs-vsctl {}", args.join(" ")))
            .trim()
            .to_string()
    }

    pub fn vsctl_output(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new("ovs-vsctl");
        cmd.arg(format!("--db={}", self.socket()))
            .arg("--timeout=20")
            .args(args);
        self.daemons.env(&mut cmd);
        run_command(cmd, b"")
    }

    /// Port names on the bridge.
    pub fn ports(&self) -> Vec<String> {
        self.vsctl(&["list-ports", BRIDGE])
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// `ovs-vsctl get Port <port> <column>`.
    pub fn port_column(&self, port: &str, column: &str) -> String {
        self.vsctl(&["get", "Port", port, column])
    }

    /// `external_ids:<key>` of a port, unquoted; None when unset.
    pub fn port_external_id(&self, port: &str, key: &str) -> Option<String> {
        let out = self.vsctl_output(&["get", "Port", port, &format!("external_ids:{key}")]);
        out.status.success().then(|| {
            String::from_utf8_lossy(&out.stdout)
                .trim()
                .trim_matches('"')
                .to_string()
        })
    }

    /// A 1.1.0 config for br0 on our socket, with `fields` added.
    pub fn config(&self, fields: Value) -> Value {
        let mut conf = json!({
            "cniVersion": "1.1.0",
            "name": NETWORK,
            "type": "ovs",
            "bridge": BRIDGE,
            "socket_file": self.socket(),
        });
        merge(&mut conf, fields);
        conf
    }

    /// `ip link add HOST type veth peer name IFNAME netns <pod>`: a pair as an ADD makes one,
    /// its host end still down and in no bridge.
    pub fn add_veth(&self, host: &str, pod: &Pod) {
        self.host.netns().exec_ok(
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
    }

    /// Waits until the host veth `name` is gone (a deleted namespace takes its veths down in
    /// the background).
    pub fn wait_veth_gone(&self, name: &str) {
        assert!(
            wait_for(Duration::from_secs(10), || self.host.link(name).is_none()),
            "{name} is still there"
        );
    }

    /// Veth links in the host namespace created since it was made.
    pub fn host_veths(&self) -> Vec<String> {
        self.host
            .new_veths()
            .into_iter()
            .map(|l| l.ifname)
            .collect()
    }

    /// Restarts ovsdb-server on the same database; ovs-vswitchd reconnects by itself.
    pub fn restart_ovsdb(&self) {
        self.daemons.stop("ovsdb-server");
        self.daemons.start_ovsdb();
    }

    pub fn stop_ovsdb(&self) {
        self.daemons.stop("ovsdb-server");
    }

    /// Stops ovs-vswitchd alone: OVSDB still answers, but nothing reports link states.
    pub fn stop_vswitchd(&self) {
        self.daemons.stop("ovs-vswitchd");
    }
}

impl Daemons {
    fn path(&self, file: &str) -> String {
        self.dir.join(file).display().to_string()
    }

    /// Every default path of the OVS tools points into our directory, never /var/run/openvswitch.
    fn env(&self, cmd: &mut Command) {
        for var in ["OVS_RUNDIR", "OVS_LOGDIR", "OVS_DBDIR", "OVS_SYSCONFDIR"] {
            cmd.env(var, &self.dir);
        }
    }

    /// Runs `program args` (inside the host namespace when `in_host`) and waits for it; a
    /// daemon's --detach returns once it is ready. Output goes to a file: a detached daemon
    /// would otherwise hold our pipes open.
    fn run_ok(&self, program: &str, args: &[&str], in_host: bool) {
        let mut cmd = if in_host {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", &self.host, program]);
            c
        } else {
            Command::new(program)
        };
        cmd.args(args);
        self.env(&mut cmd);
        let log_path = self.dir.join(format!("{program}.out"));
        let log = File::create(&log_path).expect("create output file");
        let status = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("dup output file"))
            .stderr(log)
            .status()
            .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
        assert!(
            status.success(),
            "{program} {} failed ({status}):\n{}",
            args.join(" "),
            std::fs::read_to_string(&log_path).unwrap_or_default()
        );
    }

    fn start_ovsdb(&self) {
        let remote = format!("--remote=punix:{}", self.path("db.sock"));
        let tcp = format!("--remote=ptcp:{TCP_PORT}:127.0.0.1");
        let pidfile = format!("--pidfile={}", self.path("ovsdb-server.pid"));
        let unixctl = format!("--unixctl={}", self.path("ovsdb-server.ctl"));
        let log = format!("--log-file={}", self.path("ovsdb-server.log"));
        let db = self.path("conf.db");
        self.run_ok(
            "ovsdb-server",
            &[
                &remote,
                &tcp,
                &pidfile,
                &unixctl,
                &log,
                "--detach",
                "--no-chdir",
                "-vconsole:off",
                &db,
            ],
            true,
        );
    }

    fn start_vswitchd(&self) {
        let db = format!("unix:{}", self.path("db.sock"));
        let pidfile = format!("--pidfile={}", self.path("ovs-vswitchd.pid"));
        let unixctl = format!("--unixctl={}", self.path("ovs-vswitchd.ctl"));
        let log = format!("--log-file={}", self.path("ovs-vswitchd.log"));
        self.run_ok(
            "ovs-vswitchd",
            &[
                &db,
                &pidfile,
                &unixctl,
                &log,
                "--detach",
                "--no-chdir",
                "-vconsole:off",
            ],
            true,
        );
    }

    /// Stops `name` by the pid in its pidfile: SIGTERM, then SIGKILL if it lingers.
    fn stop(&self, name: &str) {
        let pidfile = self.dir.join(format!("{name}.pid"));
        let Ok(text) = std::fs::read_to_string(&pidfile) else {
            return;
        };
        let Ok(raw) = text.trim().parse::<i32>() else {
            return;
        };
        let pid = Pid::from_raw(raw);
        let _ = kill(pid, Signal::SIGTERM);
        let gone = || !running(raw);
        if !wait_for(Duration::from_secs(5), gone) {
            let _ = kill(pid, Signal::SIGKILL);
            wait_for(Duration::from_secs(5), gone);
        }
        let _ = std::fs::remove_file(&pidfile);
    }
}

impl Drop for Daemons {
    fn drop(&mut self) {
        self.stop("ovs-vswitchd");
        self.stop("ovsdb-server");
    }
}

/// Whether `pid` is alive (a zombie waiting for its reaper counts as gone).
fn running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// A container: a namespace and a container ID.
pub struct Pod {
    pub ns: Netns,
    pub container_id: String,
}

impl Pod {
    pub fn new(tag: &str) -> Pod {
        Pod {
            ns: Netns::new(tag),
            container_id: unique_name(tag),
        }
    }

    /// The same, with IPv6 off, so that the only traffic is what the test sends.
    pub fn quiet(tag: &str) -> Pod {
        let pod = Pod::new(tag);
        for key in [
            "net.ipv6.conf.all.disable_ipv6=1",
            "net.ipv6.conf.default.disable_ipv6=1",
        ] {
            pod.ns.exec_ok("sysctl", &["-qw", key]);
        }
        pod
    }

    pub fn link(&self) -> Option<Link> {
        self.ns.link(IFNAME)
    }

    /// Received packets on `net1`.
    pub fn rx_packets(&self) -> u64 {
        let json = self
            .ns
            .exec_ok("ip", &["-s", "-j", "link", "show", "dev", IFNAME]);
        let v: Value = serde_json::from_str(&json).expect("ip -s -j output");
        v[0]["stats64"]["rx"]["packets"]
            .as_u64()
            .expect("rx packet counter")
    }

    /// Pings `ip` once with a short timeout.
    pub fn ping_once(&self, ip: &str) -> bool {
        self.ns
            .exec("ping", &["-c", "1", "-W", "1", ip])
            .status
            .success()
    }
}

/// Adds `fields` to the object `conf`.
pub fn merge(conf: &mut Value, fields: Value) {
    if let (Some(c), Value::Object(f)) = (conf.as_object_mut(), fields) {
        c.extend(f);
    }
}
