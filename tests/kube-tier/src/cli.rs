//! The `kube-tier` command: `up` keeps a cluster for looking around and for scripts; `kubectl`,
//! `exec` and `down` act on the cluster that `up` keeps, found through the file it writes once
//! every node is Ready ([`Session`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use nix::sys::signal::{SigSet, Signal};
use serde_json::json;

use crate::cluster::{node_count_from_env, Cluster};
use crate::daemon::wait_for;

pub const USAGE: &str =
    "usage (as root; after scripts/build-plugins, scripts/kube-build and scripts/multus):
  kube-tier up [--nodes N]           start a cluster of N nodes (default 2), print `ready` once
                                     every node is Ready, keep it until SIGINT, SIGTERM or `down`
  kube-tier kubectl ARGS...          kubectl against the cluster `up` keeps
  kube-tier exec NODE -- COMMAND...  COMMAND in NODE's network, mount and UTS namespaces
  kube-tier down                     tear the cluster down";

/// What a running `up` tells the other commands: written once every node is Ready, removed at
/// teardown.
struct Session {
    pid: i32,
    control_plane_netns: String,
    kubectl: PathBuf,
    kubeconfig: PathBuf,
    kubectl_cache: PathBuf,
    /// Node name to the pid holding its namespaces.
    nodes: BTreeMap<String, u32>,
}

fn session_file() -> PathBuf {
    std::env::temp_dir().join("kube-tier.session")
}

impl Session {
    fn of(cluster: &Cluster) -> Session {
        Session {
            pid: std::process::id() as i32,
            control_plane_netns: cluster.network().control_plane().to_string(),
            kubectl: cluster.kubectl_path(),
            kubeconfig: cluster.kubeconfig().to_path_buf(),
            kubectl_cache: cluster.base().join("kubectl-cache"),
            nodes: cluster
                .nodes()
                .iter()
                .map(|n| (n.name().to_string(), n.holder_pid()))
                .collect(),
        }
    }

    fn write(&self) -> Result<()> {
        let text = json!({
            "pid": self.pid,
            "controlPlaneNetns": self.control_plane_netns,
            "kubectl": self.kubectl,
            "kubeconfig": self.kubeconfig,
            "kubectlCache": self.kubectl_cache,
            "nodes": self.nodes,
        });
        let tmp = session_file().with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(&text)?)?;
        std::fs::rename(&tmp, session_file())?;
        Ok(())
    }

    /// The session of the `up` that runs now.
    fn read() -> Result<Session> {
        let file = session_file();
        let text = std::fs::read(&file)
            .with_context(|| format!("no cluster is up ({} is missing)", file.display()))?;
        let v: serde_json::Value = serde_json::from_slice(&text)?;
        let path = |key: &str| PathBuf::from(v[key].as_str().unwrap_or_default());
        let session = Session {
            pid: v["pid"].as_i64().unwrap_or_default() as i32,
            control_plane_netns: v["controlPlaneNetns"].as_str().unwrap_or_default().into(),
            kubectl: path("kubectl"),
            kubeconfig: path("kubeconfig"),
            kubectl_cache: path("kubectlCache"),
            nodes: serde_json::from_value(v["nodes"].clone()).unwrap_or_default(),
        };
        if session.pid <= 0 || !Path::new(&format!("/proc/{}", session.pid)).exists() {
            bail!("the cluster in {} is gone", file.display());
        }
        Ok(session)
    }
}

/// Runs the command line; the exit code.
pub fn main(args: &[String]) -> ExitCode {
    let result = match args.first().map(String::as_str) {
        Some("up") => up(&args[1..]),
        Some("kubectl") => kubectl(&args[1..]),
        Some("exec") => exec(&args[1..]),
        Some("down") => down(),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::FAILURE;
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("kube-tier: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn up(args: &[String]) -> Result<ExitCode> {
    let nodes = match args {
        [] => node_count_from_env()?,
        [flag, n] if flag == "--nodes" => n
            .parse()
            .ok()
            .filter(|n| (1..=9).contains(n))
            .with_context(|| format!("--nodes {n}: a number of nodes from 1 to 9"))?,
        _ => bail!("{USAGE}"),
    };
    // Blocked before any thread exists, so every thread leaves the signals to sigwait.
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGINT);
    signals.add(Signal::SIGTERM);
    signals.thread_block()?;
    let repo = crate::repo();
    let cluster = Cluster::start(&crate::kube_bin()?, &repo, nodes)?;
    let session = Session::of(&cluster);
    session.write()?;
    println!("ready");
    let _ = signals.wait();
    let _ = std::fs::remove_file(session_file());
    drop(cluster);
    Ok(ExitCode::SUCCESS)
}

fn kubectl(args: &[String]) -> Result<ExitCode> {
    let s = Session::read()?;
    let mut cmd = Command::new("nsenter");
    cmd.arg(format!("--net=/run/netns/{}", s.control_plane_netns))
        .arg("--")
        .arg(&s.kubectl)
        .arg("--kubeconfig")
        .arg(&s.kubeconfig)
        .arg("--cache-dir")
        .arg(&s.kubectl_cache)
        .args(args);
    status(cmd)
}

fn exec(args: &[String]) -> Result<ExitCode> {
    let (node, command) = match args {
        [node, dashes, command @ ..] if dashes == "--" && !command.is_empty() => (node, command),
        _ => bail!("{USAGE}"),
    };
    let s = Session::read()?;
    let holder = s.nodes.get(node).with_context(|| {
        format!(
            "no node {node}; the nodes are {}",
            s.nodes.keys().cloned().collect::<Vec<_>>().join(", ")
        )
    })?;
    let mut cmd = crate::node::Enter::of(*holder).command(&command[0]);
    cmd.args(&command[1..]);
    status(cmd)
}

fn down() -> Result<ExitCode> {
    let s = Session::read()?;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(s.pid), Signal::SIGTERM)?;
    wait_for(
        "the cluster to be torn down",
        Duration::from_secs(300),
        || Ok((!Path::new(&format!("/proc/{}", s.pid)).exists()).then_some(())),
    )?;
    Ok(ExitCode::SUCCESS)
}

fn status(mut cmd: Command) -> Result<ExitCode> {
    let status = cmd
        .status()
        .with_context(|| format!("run {:?}", cmd.get_program()))?;
    Ok(ExitCode::from(
        status.code().unwrap_or(1).clamp(0, 255) as u8
    ))
}
