//! The cluster's long-running processes: each started with its output in a log file, checked
//! while the cluster runs, and stopped by its own pid (SIGTERM, then SIGKILL).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use wait_timeout::ChildExt;

/// Every process of the tier gets these: the kubelet (through its cloud SDKs) would otherwise
/// probe the EC2 metadata address at start, traffic that must never leave the machine.
pub const ENV: &[(&str, &str)] = &[("AWS_EC2_METADATA_DISABLED", "true")];

pub struct Daemon {
    name: String,
    child: Child,
    log: PathBuf,
}

impl Daemon {
    /// Starts `cmd` with stdout and stderr appended to `<log_dir>/<name>.log`.
    pub fn spawn(name: &str, mut cmd: Command, log_dir: &Path) -> Result<Daemon> {
        let log = log_dir.join(format!("{name}.log"));
        // Appended to: a process started again (after a crash) keeps the log of its last run.
        let out = File::options()
            .create(true)
            .append(true)
            .open(&log)
            .with_context(|| format!("create {}", log.display()))?;
        let err = out.try_clone()?;
        cmd.envs(ENV.iter().copied())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        // `kube-tier up` blocks SIGINT and SIGTERM to wait for them; a daemon would inherit the
        // mask through exec and ignore the SIGTERM that stops it.
        // SAFETY: between fork and exec only pthread_sigmask runs, which is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                nix::sys::signal::SigSet::empty()
                    .thread_set_mask()
                    .map_err(std::io::Error::from)
            });
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("start {name} ({:?})", cmd.get_program()))?;
        Ok(Daemon {
            name: name.to_string(),
            child,
            log,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Fails, with the end of its log, when the process has exited.
    pub fn check_running(&mut self) -> Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!(
                "{} exited ({status}); the end of {}:\n{}",
                self.name,
                self.log.display(),
                tail(&self.log, 30)
            );
        }
        Ok(())
    }

    /// SIGKILL at once, as a crash or the OOM killer ends a process.
    pub fn crash(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, up to `grace` to exit, then SIGKILL. Idempotent.
    pub fn stop(&mut self, grace: Duration) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        let pid = Pid::from_raw(self.child.id() as i32);
        // Teardown goes on whatever happens: a process that is gone already cannot be signalled.
        let _ = kill(pid, Signal::SIGTERM);
        if matches!(self.child.wait_timeout(grace), Ok(Some(_))) {
            return;
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(10));
    }
}

/// The last `lines` lines of a log file (at most its last 64 KiB).
pub fn tail(path: &Path, lines: usize) -> String {
    let Ok(mut f) = File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)));
    let mut text = String::new();
    let _ = f.read_to_string(&mut text);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Runs a command to completion; its stdout on success, an error with its stderr otherwise.
pub fn run(cmd: &mut Command) -> Result<String> {
    run_with_stdin(cmd, &[])
}

/// Polls `cond` every 200 ms until it returns `Some`, or fails after `timeout` naming `what`.
pub fn wait_for<T>(
    what: &str,
    timeout: Duration,
    mut cond: impl FnMut() -> Result<Option<T>>,
) -> Result<T> {
    let deadline = Instant::now() + timeout;
    let mut last_err = None;
    loop {
        match cond() {
            Ok(Some(v)) => return Ok(v),
            Ok(None) => {}
            Err(e) => last_err = Some(e),
        }
        if Instant::now() >= deadline {
            match last_err {
                Some(e) => bail!("{what}: not within {timeout:?}; last error: {e:#}"),
                None => bail!("{what}: not within {timeout:?}"),
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// [`run`] with `input` on the command's stdin.
pub fn run_with_stdin(cmd: &mut Command, input: &[u8]) -> Result<String> {
    use std::io::Write;
    cmd.envs(ENV.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .with_context(|| format!("run {:?}", cmd.get_program()))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input)?;
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!(
            "{:?} {:?} failed ({}): {}{}",
            cmd.get_program(),
            cmd.get_args().collect::<Vec<_>>(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim(),
            String::from_utf8_lossy(&out.stdout).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
