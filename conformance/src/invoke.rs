//! Running the plugin binary the way a runtime does: a clean environment
//! with the CNI_* variables, the request on stdin, stdout/stderr captured and
//! the exit status read. The process always runs inside the suite's
//! throwaway "host" namespace through `ip netns exec`, which also mounts a
//! sysfs of that namespace, so the plugin sees that namespace as "the host".

use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

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
    pub timeout: Duration,
    pub verbose: bool,
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
    /// Run the plugin in network namespace `host_ns` with exactly `env`
    /// (plus PATH) and `stdin`.
    pub fn run(&self, host_ns: &str, env: &[(&'static str, String)], stdin: &[u8]) -> Output {
        let mut cmd = Command::new("ip");
        cmd.arg("netns")
            .arg("exec")
            .arg(host_ns)
            .arg(&self.plugin)
            .env_clear()
            .env("PATH", &self.path_env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                return Output {
                    exit: Exit::SpawnFailed(e.to_string()),
                    stdout: Vec::new(),
                    stderr: Vec::new(),
                };
            }
        };
        let pid = child.id();
        if let Some(mut pipe) = child.stdin.take() {
            let data = stdin.to_vec();
            // A plugin may exit without reading stdin (VERSION): ignore EPIPE.
            std::thread::spawn(move || {
                let _ = pipe.write_all(&data);
            });
        }
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        let mut timed_out = false;
        let waited = match rx.recv_timeout(self.timeout) {
            Ok(r) => Some(r),
            Err(_) => {
                timed_out = true;
                kill_group(pid);
                // Children of the plugin may still hold the pipes: do not wait forever.
                rx.recv_timeout(Duration::from_secs(5)).ok()
            }
        };
        let out = match waited {
            Some(Ok(o)) => {
                let exit = if timed_out {
                    Exit::TimedOut
                } else if let Some(code) = o.status.code() {
                    Exit::Code(code)
                } else {
                    Exit::Signal(o.status.signal().unwrap_or(0))
                };
                Output {
                    exit,
                    stdout: o.stdout,
                    stderr: o.stderr,
                }
            }
            Some(Err(e)) => Output {
                exit: Exit::SpawnFailed(e.to_string()),
                stdout: Vec::new(),
                stderr: Vec::new(),
            },
            None => Output {
                exit: Exit::TimedOut,
                stdout: Vec::new(),
                stderr: Vec::new(),
            },
        };
        if self.verbose {
            let vars: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
            eprintln!(
                "--- [{host_ns}] {} {}",
                vars.join(" "),
                self.plugin.display()
            );
            eprintln!("    stdin:  {}", String::from_utf8_lossy(stdin));
            eprintln!("    {}", out.exit);
            eprintln!(
                "    stdout: {}",
                String::from_utf8_lossy(&out.stdout).trim_end()
            );
            eprintln!(
                "    stderr: {}",
                String::from_utf8_lossy(&out.stderr).trim_end()
            );
        }
        out
    }
}
