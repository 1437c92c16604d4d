//! Open vSwitch on a node, in userspace (the host kernel has no openvswitch datapath): a private
//! database and switch in the node's namespaces, whose database socket is where the ovs
//! DaemonSet looks for it, `/var/run/openvswitch/db.sock` in the node's view. Everything else of
//! theirs stays in a private run directory.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::Result;

use crate::daemon::{run, wait_for, Daemon};
use crate::node::{Enter, Node};

/// The database socket, in the node's view.
pub const DB_SOCK: &str = "/var/run/openvswitch/db.sock";

pub struct Ovs {
    dir: PathBuf,
    enter: Enter,
    daemons: Vec<Daemon>,
}

impl Ovs {
    /// Starts ovsdb-server and ovs-vswitchd on `node`, their files in `dir`, their logs in
    /// `logs/<node>-ovs*.log`.
    pub fn start(node: &Node, dir: &Path, logs: &Path) -> Result<Ovs> {
        std::fs::create_dir_all(dir)?;
        let mut ovs = Ovs {
            dir: dir.to_path_buf(),
            enter: node.enter(),
            daemons: Vec::new(),
        };
        // The database is on the node's disk: after a reboot the switch starts from it.
        let db = dir.join("conf.db");
        if !db.exists() {
            run(Command::new("ovsdb-tool")
                .arg("create")
                .arg(&db)
                .arg("/usr/share/openvswitch/vswitch.ovsschema"))?;
        }
        let mut server = ovs.command("ovsdb-server");
        server.arg(&db).arg(format!("--remote=punix:{DB_SOCK}"));
        let name = |daemon: &str| format!("{}-{daemon}", node.name());
        ovs.daemons
            .push(Daemon::spawn(&name("ovsdb-server"), server, logs)?);
        let sock = node.host_path(DB_SOCK);
        wait_for("ovsdb-server's socket", Duration::from_secs(20), || {
            Ok(sock.exists().then_some(()))
        })?;
        run(ovs.vsctl().args(["--no-wait", "init"]))?;
        let mut switch = ovs.command("ovs-vswitchd");
        switch.arg(format!("unix:{DB_SOCK}"));
        ovs.daemons
            .push(Daemon::spawn(&name("ovs-vswitchd"), switch, logs)?);
        Ok(ovs)
    }

    fn command(&self, program: &str) -> Command {
        let mut cmd = self.enter.command(program);
        cmd.env("OVS_RUNDIR", &self.dir)
            .env("OVS_DBDIR", &self.dir)
            .env("OVS_LOGDIR", &self.dir);
        cmd
    }

    pub fn vsctl(&self) -> Command {
        let mut cmd = self.command("ovs-vsctl");
        cmd.arg(format!("--db=unix:{DB_SOCK}"));
        cmd
    }

    /// `ovs-vsctl add-br NAME -- set bridge NAME datapath_type=netdev`.
    pub fn add_br(&self, name: &str) -> Result<()> {
        run(self.vsctl().args([
            "add-br",
            name,
            "--",
            "set",
            "bridge",
            name,
            "datapath_type=netdev",
        ]))
        .map(drop)
    }

    /// `ovs-vsctl add-port BRIDGE PORT`: a port of the node's, a trunk (no tag).
    pub fn add_port(&self, bridge: &str, port: &str) -> Result<()> {
        run(self.vsctl().args(["add-port", bridge, port])).map(drop)
    }

    /// The ports that carry a VLAN tag (access ports, such as the ovs plugin's), by name.
    pub fn port_tags(&self) -> Result<std::collections::BTreeMap<String, u16>> {
        let out = run(self
            .vsctl()
            .args(["--format=json", "--columns=name,tag", "list", "port"]))?;
        let table: serde_json::Value = serde_json::from_str(&out)?;
        Ok(table["data"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|row| {
                let name = row[0].as_str()?.to_string();
                // An empty tag is the OVSDB set `["set", []]`.
                let tag = row[1].as_u64().and_then(|t| u16::try_from(t).ok())?;
                Some((name, tag))
            })
            .collect())
    }

    pub fn del_br(&self, name: &str) -> Result<()> {
        run(self.vsctl().args(["--if-exists", "del-br", name])).map(drop)
    }

    /// SIGKILL to both daemons, as a power loss ends them.
    pub fn crash(&mut self) {
        for d in &mut self.daemons {
            d.crash();
        }
        self.daemons.clear();
    }

    pub fn stop(&mut self) {
        for d in self.daemons.iter_mut().rev() {
            d.stop(Duration::from_secs(10));
        }
        self.daemons.clear();
    }
}

impl Drop for Ovs {
    fn drop(&mut self) {
        self.stop();
    }
}
