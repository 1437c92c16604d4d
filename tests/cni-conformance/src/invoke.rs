//! Running the plugin binary the way a runtime does: a clean environment
//! with the CNI_* variables, the request on stdin, stdout/stderr captured and
//! the exit status read. The process always runs inside the suite's
//! throwaway "host" namespace through `ip netns exec`, which also mounts a
//! sysfs of that namespace, so the plugin sees that namespace as "the host".

use serde_json::{Map, Value};
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use wait_timeout::ChildExt;

/// Environment variable naming the check's host namespace, for `--host-setup`/`--host-teardown`.
pub const HOST_NS_VAR: &str = "CNIC_HOST_NS";
/// Environment variable holding the check's temp dir; `${CNIC_TMP}` in the config is replaced
/// by the same path.
pub const TMP_VAR: &str = "CNIC_TMP";

/// How a plugin process ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
    TimedOut,
    SpawnFailed(String),
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(c) => write!(f, "exit {c}"),
            Exit::Signal(s) => write!(f, "killed by signal {s}"),
            Exit::TimedOut => write!(f, "timed out (killed)"),
            Exit::SpawnFailed(e) => write!(f, "could not be started: {e}"),
        }
    }
}

pub struct Output {
    pub exit: Exit,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

pub struct Runner {
    pub plugin: PathBuf,
    /// PATH given to the plugin (for helpers it may run).
    pub path_env: String,
    /// What the runtime's own environment adds (`--env`).
    pub runtime_env: Vec<(String, String)>,
    pub timeout: Duration,
}

/// Kill the process group led by our child (the plugin and anything it forked).
fn kill_group(pid: u32) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill(2) on the process group of our own, not yet reaped, child.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

impl Runner {
    /// Run the plugin in network namespace `host_ns` with exactly `env` (plus PATH and the
    /// runtime's own variables) and `stdin`.
    pub fn run(&self, host_ns: &str, env: &[(&'static str, String)], stdin: &[u8]) -> Output {
        let mut cmd = Command::new("ip");
        cmd.arg("netns")
            .arg("exec")
            .arg(host_ns)
            .arg(&self.plugin)
            .env_clear()
            .env("PATH", &self.path_env)
            .envs(self.runtime_env.iter().map(|(k, v)| (k, v)));
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = run_piped(cmd, stdin, self.timeout);
        let vars: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        tracing::debug!(
            "--- [{host_ns}] {} {}\n    stdin:  {}\n    {}\n    stdout: {}\n    stderr: {}",
            vars.join(" "),
            self.plugin.display(),
            String::from_utf8_lossy(stdin),
            out.exit,
            String::from_utf8_lossy(&out.stdout).trim_end(),
            String::from_utf8_lossy(&out.stderr).trim_end()
        );
        out
    }
}

/// Runs `cmd` in a process group of its own with `stdin` as its input and its stdout and stderr
/// captured through pipes. Like a runtime, it waits for the plugin to exit and for its output to
/// end: a process the plugin left holding stdout counts against the time limit. When `timeout`
/// runs out, the process group is killed.
fn run_piped(mut cmd: Command, stdin: &[u8], timeout: Duration) -> Output {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let failed = |e: String| Output {
        exit: Exit::SpawnFailed(e),
        stdout: Vec::new(),
        stderr: Vec::new(),
    };
    let deadline = Instant::now() + timeout;
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return failed(e.to_string()),
    };
    if let Some(mut pipe) = child.stdin.take() {
        let data = stdin.to_vec();
        // A plugin may exit without reading stdin (VERSION): ignore EPIPE.
        std::thread::spawn(move || {
            let _ = pipe.write_all(&data);
        });
    }
    let out_rx = read_to_end_in_background(child.stdout.take());
    let err_rx = read_to_end_in_background(child.stderr.take());
    let left = |until: Instant| until.saturating_duration_since(Instant::now());
    // The output is awaited before the exit, so that the child is not reaped while its
    // process group may still need killing.
    let out = out_rx.recv_timeout(left(deadline)).ok();
    let err = match out {
        Some(_) => err_rx.recv_timeout(left(deadline)).ok(),
        None => None,
    };
    match (out, err) {
        (Some(stdout), Some(stderr)) => Output {
            exit: wait_or_kill(&mut child, left(deadline)),
            stdout,
            stderr,
        },
        (out, err) => {
            kill_group(child.id());
            let _ = child.wait();
            // Children of the plugin may still hold the pipes: do not wait forever.
            let grace = Instant::now() + Duration::from_secs(5);
            let out = out.or_else(|| out_rx.recv_timeout(left(grace)).ok());
            let err = err.or_else(|| err_rx.recv_timeout(left(grace)).ok());
            let (stdout, stderr) = out.zip(err).unwrap_or_default();
            Output {
                exit: Exit::TimedOut,
                stdout,
                stderr,
            }
        }
    }
}

/// Reads `pipe` to its end on a thread of its own; the bytes arrive on the returned channel.
fn read_to_end_in_background<R: Read + Send + 'static>(pipe: Option<R>) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        let _ = tx.send(bytes);
    });
    rx
}

/// A shell command run in each check's host namespace: `--host-setup` or `--host-teardown`.
#[derive(Clone, Debug)]
pub struct Hook {
    /// `--host-setup` or `--host-teardown`, for messages.
    pub option: &'static str,
    pub command: String,
    pub path_env: String,
    pub timeout: Duration,
}

/// How a hook ended and what it wrote.
pub struct HookOutput {
    pub exit: Exit,
    pub stdout: String,
    pub stderr: String,
}

impl HookOutput {
    pub fn success(&self) -> bool {
        self.exit == Exit::Code(0)
    }

    /// "exit 1, stderr: <stderr>" on one line, for a failure message. A long stderr keeps its
    /// beginning (what failed) and its end (the latest log lines).
    pub fn describe(&self) -> String {
        const KEEP: usize = 300;
        let flat: Vec<char> = self
            .stderr
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .collect();
        if flat.is_empty() {
            return format!("{}, nothing on stderr", self.exit);
        }
        let shown: String = if flat.len() > 2 * KEEP {
            let head: String = flat[..KEEP].iter().collect();
            let tail: String = flat[flat.len() - KEEP..].iter().collect();
            format!("{head} ... {tail}")
        } else {
            flat.into_iter().collect()
        };
        format!("{}, stderr: {shown}", self.exit)
    }
}

impl Hook {
    /// `ip netns exec <host_ns> sh -c <command>`, as the plugin is run there, with a clean
    /// environment: PATH, CNIC_HOST_NS and CNIC_TMP.
    pub fn run(&self, host_ns: &str, tmp: &Path) -> HookOutput {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", host_ns, "sh", "-c", &self.command])
            .env_clear()
            .env("PATH", &self.path_env)
            .env(HOST_NS_VAR, host_ns)
            .env(TMP_VAR, tmp);
        let out = run_captured(cmd, self.timeout);
        tracing::debug!(
            "--- [{host_ns}] {} {}: {}\n    stdout: {}\n    stderr: {}",
            self.option,
            self.command,
            out.exit,
            out.stdout.trim_end(),
            out.stderr.trim_end()
        );
        out
    }
}

/// Runs `cmd` in a process group of its own with stdin closed and stdout and stderr going to
/// unlinked temp files, not pipes: a daemon the command starts may keep them open, and must not
/// hold the suite up. After `timeout` the process group is killed.
pub fn run_captured(mut cmd: Command, timeout: Duration) -> HookOutput {
    let failed = |e: String| HookOutput {
        exit: Exit::SpawnFailed(e),
        stdout: String::new(),
        stderr: String::new(),
    };
    // Already unlinked: they vanish with their last descriptor.
    let (mut out_file, mut err_file) = match (tempfile::tempfile(), tempfile::tempfile()) {
        (Ok(o), Ok(e)) => (o, e),
        (Err(e), _) | (_, Err(e)) => return failed(format!("cannot create a temp file: {e}")),
    };
    let streams = out_file
        .try_clone()
        .and_then(|o| Ok((o, err_file.try_clone()?)));
    let (out_stream, err_stream) = match streams {
        Ok(s) => s,
        Err(e) => return failed(format!("cannot duplicate a temp file: {e}")),
    };
    cmd.stdin(Stdio::null())
        .stdout(out_stream)
        .stderr(err_stream)
        .process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return failed(e.to_string()),
    };
    let exit = wait_or_kill(&mut child, timeout);
    HookOutput {
        exit,
        stdout: read_back(&mut out_file),
        stderr: read_back(&mut err_file),
    }
}

/// Waits for `child` to exit; after `timeout`, kills its process group.
fn wait_or_kill(child: &mut Child, timeout: Duration) -> Exit {
    match child.wait_timeout(timeout) {
        Ok(Some(status)) => match status.code() {
            Some(code) => Exit::Code(code),
            None => Exit::Signal(status.signal().unwrap_or(0)),
        },
        Ok(None) => {
            kill_group(child.id());
            let _ = child.wait();
            Exit::TimedOut
        }
        Err(e) => Exit::SpawnFailed(format!("waiting: {e}")),
    }
}

fn read_back(file: &mut File) -> String {
    let mut bytes = Vec::new();
    if file.rewind().is_ok() {
        let _ = file.read_to_end(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// `CNI_*` variables in the order libcni sets them.
pub(crate) type Env = Vec<(&'static str, String)>;

/// Sets `key` to `value` in `env`, or unsets it.
pub(crate) fn set_var(env: &mut Env, key: &'static str, value: Option<&str>) {
    env.retain(|(k, _)| *k != key);
    if let Some(v) = value {
        env.push((key, v.to_string()));
    }
}

/// The configuration as stdin.
pub(crate) fn to_bytes(cfg: &Map<String, Value>) -> Vec<u8> {
    serde_json::to_vec(cfg).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", script]);
        cmd
    }

    #[test]
    fn a_plugin_gets_its_stdin_and_its_exit_stdout_and_stderr_are_captured() {
        let out = run_piped(
            sh("cat; echo err >&2; exit 4"),
            b"{\"cniVersion\":\"1.0.0\"}",
            Duration::from_secs(10),
        );
        assert_eq!(out.exit, Exit::Code(4));
        assert_eq!(out.stdout, b"{\"cniVersion\":\"1.0.0\"}");
        assert_eq!(out.stderr, b"err\n");
    }

    #[test]
    fn a_plugin_that_does_not_read_its_stdin_still_runs() {
        let big = vec![b'x'; 1 << 20];
        let out = run_piped(sh("echo {}"), &big, Duration::from_secs(10));
        assert_eq!(out.exit, Exit::Code(0));
        assert_eq!(out.stdout, b"{}\n");
    }

    #[test]
    fn a_plugin_running_too_long_is_killed() {
        let started = Instant::now();
        let out = run_piped(sh("sleep 20"), b"", Duration::from_millis(200));
        assert_eq!(out.exit, Exit::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_process_the_plugin_left_holding_stdout_counts_against_the_time_limit() {
        let started = Instant::now();
        let out = run_piped(
            sh("sleep 20 & echo started"),
            b"",
            Duration::from_millis(300),
        );
        assert_eq!(out.exit, Exit::TimedOut);
        assert_eq!(out.stdout, b"started\n");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_plugin_that_cannot_be_started_says_why() {
        let out = run_piped(
            Command::new("/nonexistent/cnic-plugin"),
            b"",
            Duration::from_secs(10),
        );
        assert!(matches!(out.exit, Exit::SpawnFailed(_)), "{:?}", out.exit);
    }

    #[test]
    fn a_hooks_exit_stdout_and_stderr_are_captured() {
        let out = run_captured(
            sh("echo out; echo err >&2; exit 3"),
            Duration::from_secs(10),
        );
        assert_eq!(out.exit, Exit::Code(3));
        assert_eq!(out.stdout, "out\n");
        assert_eq!(out.stderr, "err\n");
        assert!(!out.success());
        assert_eq!(out.describe(), "exit 3, stderr: err");
    }

    #[test]
    fn a_daemon_keeping_the_output_open_does_not_hold_it_up() {
        let started = Instant::now();
        let out = run_captured(
            sh("setsid sleep 3 >/dev/stderr 2>&1 & echo started"),
            Duration::from_secs(10),
        );
        assert!(out.success(), "{}", out.describe());
        assert_eq!(out.stdout, "started\n");
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn a_hook_running_too_long_is_killed() {
        let started = Instant::now();
        let out = run_captured(sh("sleep 20"), Duration::from_millis(200));
        assert_eq!(out.exit, Exit::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
