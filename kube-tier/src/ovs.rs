//! Open vSwitch on the node, in userspace (the host kernel has no openvswitch datapath): a
//! private database and switch whose database socket is where the ovs DaemonSet looks for it,
//! `/var/run/openvswitch/db.sock`. Everything else of theirs stays in a private run directory.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Result};

use crate::daemon::{run, wait_for, Daemon};

pub const DB_SOCK: &str = "/var/run/openvswitch/db.sock";

pub struct Ovs {
    dir: PathBuf,
    daemons: Vec<Daemon>,
    created_run_dir: bool,
}

impl Ovs {
    pub fn start(dir: &Path, logs: &Path) -> Result<Ovs> {
        if Path::new(DB_SOCK).exists() {
            bail!("{DB_SOCK} exists: Open vSwitch already runs on this machine; the tier does not touch it");
        }
        std::fs::create_dir_all(dir)?;
        let run_dir = Path::new(DB_SOCK).parent().unwrap_or(Path::new("/"));
        let created_run_dir = !run_dir.exists();
        std::fs::create_dir_all(run_dir)?;
        let mut ovs = Ovs {
            dir: dir.to_path_buf(),
            daemons: Vec::new(),
            created_run_dir,
        };
        let db = dir.join("conf.db");
        run(Command::new("ovsdb-tool")
            .arg("create")
            .arg(&db)
            .arg("/usr/share/openvswitch/vswitch.ovsschema"))?;
        let mut server = ovs.command("ovsdb-server");
        server.arg(&db).arg(format!("--remote=punix:{DB_SOCK}"));
        ovs.daemons
            .push(Daemon::spawn("ovsdb-server", server, logs)?);
        wait_for("ovsdb-server's socket", Duration::from_secs(20), || {
            Ok(Path::new(DB_SOCK).exists().then_some(()))
        })?;
        run(ovs.vsctl().args(["--no-wait", "init"]))?;
        let mut switch = ovs.command("ovs-vswitchd");
        switch.arg(format!("unix:{DB_SOCK}"));
        ovs.daemons
            .push(Daemon::spawn("ovs-vswitchd", switch, logs)?);
        Ok(ovs)
    }

    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
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

    pub fn del_br(&self, name: &str) -> Result<()> {
        run(self.vsctl().args(["--if-exists", "del-br", name])).map(drop)
    }

    pub fn stop(&mut self) {
        for d in self.daemons.iter_mut().rev() {
            d.stop(Duration::from_secs(10));
        }
        self.daemons.clear();
        let _ = std::fs::remove_file(DB_SOCK);
        if self.created_run_dir {
            let _ = std::fs::remove_dir(
                Path::new(DB_SOCK)
                    .parent()
                    .unwrap_or(Path::new("/nonexistent")),
            );
        }
    }
}

impl Drop for Ovs {
    fn drop(&mut self) {
        self.stop();
    }
}
