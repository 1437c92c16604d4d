//! Running a child process with its input, its captured output and a deadline.

use std::io::{Read, Write};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use wait_timeout::ChildExt;

/// PATH given to plugins and to the driver (the rest of the environment is cleared).
pub(crate) const PLUGIN_ENV_PATH: &str =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Upper bound for one plugin or driver invocation; a hung plugin fails the test.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs `cmd` with `stdin` fed to it, capturing stdout and stderr, and kills it (by its own pid)
/// if it runs longer than [`COMMAND_TIMEOUT`].
///
/// # Panics
/// If the command cannot be spawned or times out.
pub fn run_command(mut cmd: Command, stdin: &[u8]) -> Output {
    let desc = format!("{cmd:?}");
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot spawn {desc}: {e}"));

    let input = stdin.to_vec();
    let writer = child.stdin.take().map(|mut pipe| {
        thread::spawn(move || {
            // A plugin may exit without reading stdin (e.g. VERSION): ignore EPIPE.
            let _ = pipe.write_all(&input);
        })
    });
    let stdout = child.stdout.take().map(spawn_reader);
    let stderr = child.stderr.take().map(spawn_reader);

    let status = wait_with_deadline(&mut child, &desc);
    if let Some(w) = writer {
        let _ = w.join();
    }
    Output {
        status,
        stdout: stdout.map(join_reader).unwrap_or_default(),
        stderr: stderr.map(join_reader).unwrap_or_default(),
    }
}

fn spawn_reader<R: Read + Send + 'static>(mut pipe: R) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        buf
    })
}

fn join_reader(handle: thread::JoinHandle<Vec<u8>>) -> Vec<u8> {
    handle.join().unwrap_or_default()
}

fn wait_with_deadline(child: &mut Child, desc: &str) -> ExitStatus {
    match child.wait_timeout(COMMAND_TIMEOUT) {
        Ok(Some(status)) => status,
        Ok(None) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{desc} did not finish within {COMMAND_TIMEOUT:?}; killed it");
        }
        Err(e) => panic!("waiting for {desc}: {e}"),
    }
}

/// Renders an [`Output`] for failure messages.
pub fn describe_output(out: &Output) -> String {
    format!(
        "exit status: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Asserts that `out` is a success and returns its stdout.
///
/// # Panics
/// If the exit status is non-zero.
pub fn expect_success(out: &Output, what: &str) -> String {
    if !out.status.success() {
        panic!("{what} failed:\n{}", describe_output(out));
    }
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Asserts that `out` is a failure and returns its stderr.
///
/// # Panics
/// If the exit status is zero.
pub fn expect_failure(out: &Output, what: &str) -> String {
    if out.status.success() {
        panic!("{what} unexpectedly succeeded:\n{}", describe_output(out));
    }
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs a program to completion and panics (showing its output) unless it succeeds.
pub(crate) fn run_checked(program: &str, args: &[&str]) -> String {
    let mut cmd = Command::new(program);
    cmd.args(args);
    let out = run_command(cmd, b"");
    expect_success(&out, &format!("`{program} {}`", args.join(" ")))
}

/// Polls `cond` every 20 ms until it holds or `timeout` passes; returns whether it held.
/// For kernel work that completes asynchronously (e.g. veth teardown after `ip netns del`).
pub fn wait_for(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(20));
    }
}
