//! Running an installed plugin the way a runtime first does: CNI_COMMAND=VERSION, empty stdin,
//! no other CNI variable, and reading the JSON it prints.

use std::io::{self, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde::Deserialize;
use wait_timeout::ChildExt;

use crate::error::{Context, Result, VersionError};

/// A plugin that has not answered VERSION by then is broken.
const TIMEOUT: Duration = Duration::from_secs(10);

/// At most this much of each of stdout and stderr is kept; the rest is read and dropped, so
/// the plugin never blocks on a full pipe.
const OUTPUT_LIMIT: usize = 1 << 20;

/// What a plugin answers to VERSION.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginVersion {
    pub cni_version: String,
    pub supported_versions: Vec<String>,
}

/// Which of the plugin's outputs a reader thread drained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    Stdout,
    Stderr,
}

/// Reads `from` to its end on a thread of its own, keeping the first [`OUTPUT_LIMIT`] bytes,
/// and sends them on `done`.
fn drain(
    stream: Stream,
    mut from: impl Read + Send + 'static,
    done: mpsc::Sender<(Stream, io::Result<Vec<u8>>)>,
) {
    thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        let result = loop {
            match from.read(&mut buf) {
                Ok(0) => break Ok(kept),
                Ok(n) => {
                    let room = OUTPUT_LIMIT.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        // The receiver is gone only when version() gave up already.
        let _ = done.send((stream, result));
    });
}

/// Runs `path` with CNI_COMMAND=VERSION and parses its answer.
pub fn version(path: &Path) -> Result<PluginVersion> {
    ask_version(path, TIMEOUT)
        .with_context(|| format!("running {} with CNI_COMMAND=VERSION", path.display()))
}

/// `timeout` bounds the whole: the run, and the reading of what it printed.
fn ask_version(path: &Path, timeout: Duration) -> std::result::Result<PluginVersion, VersionError> {
    let mut child = Command::new(path)
        .env_clear()
        .env("CNI_COMMAND", "VERSION")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let deadline = Instant::now() + timeout;
    // Both pipes are read while the plugin runs: one that fills a pipe (64 KiB) before it
    // exits would otherwise wait for a reader until the timeout.
    let (done, outputs) = mpsc::channel();
    let mut pending = 0;
    if let Some(out) = child.stdout.take() {
        drain(Stream::Stdout, out, done.clone());
        pending += 1;
    }
    if let Some(err) = child.stderr.take() {
        drain(Stream::Stderr, err, done.clone());
        pending += 1;
    }
    drop(done);
    let Some(status) = child.wait_timeout(timeout)? else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(VersionError::NoAnswer { timeout });
    };
    // Its outputs end when it exits, unless it left a process behind that holds them open:
    // that is waited for no longer than the timeout either.
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    for _ in 0..pending {
        let left = deadline.saturating_duration_since(Instant::now());
        let (stream, bytes) = outputs
            .recv_timeout(left)
            // The channel's error only says that the deadline passed.
            .map_err(|_| VersionError::OutputOpen { status, timeout })?;
        match stream {
            Stream::Stdout => stdout = bytes?,
            Stream::Stderr => stderr = bytes?,
        }
    }
    if !status.success() {
        return Err(VersionError::Failed {
            status,
            output: format!(
                "{}{}",
                String::from_utf8_lossy(&stdout).trim(),
                String::from_utf8_lossy(&stderr).trim()
            ),
        });
    }
    parse(&stdout)
}

/// Parses a VERSION answer: both fields present, neither empty.
pub fn parse(stdout: &[u8]) -> std::result::Result<PluginVersion, VersionError> {
    let output = || String::from_utf8_lossy(stdout).trim().to_string();
    // What the plugin printed goes with the decoder's complaint: it shows what went wrong.
    let v: PluginVersion =
        serde_json::from_slice(stdout).map_err(|source| VersionError::NotAnAnswer {
            output: output(),
            source,
        })?;
    if v.cni_version.is_empty() || v.supported_versions.is_empty() {
        return Err(VersionError::Empty { output: output() });
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_parsed_and_garbage_refused() {
        let v = parse(br#"{"cniVersion":"1.1.0","supportedVersions":["0.4.0","1.1.0"]}"#)
            .expect("valid");
        assert_eq!(v.cni_version, "1.1.0");
        assert_eq!(v.supported_versions, ["0.4.0", "1.1.0"]);
        for bad in [
            &b""[..],
            b"about: bridge v1",
            br#"{"cniVersion":"1.1.0"}"#,
            br#"{"cniVersion":"","supportedVersions":["1.0.0"]}"#,
            br#"{"cniVersion":"1.1.0","supportedVersions":[]}"#,
        ] {
            assert!(parse(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    /// A script `name` in `dir`; its path. Written before it is run, it may be busy for an
    /// instant if another test's fork still holds the write descriptor: retried.
    fn script(dir: &tempfile::TempDir, name: &str, body: &str) -> std::path::PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}")).expect("write script");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }

    fn version_retrying_busy(path: &Path) -> Result<PluginVersion> {
        for _ in 0..20 {
            match version(path) {
                Err(e) if e.report().contains("Text file busy") => {
                    thread::sleep(Duration::from_millis(10))
                }
                other => return other,
            }
        }
        version(path)
    }

    /// More than a pipe holds (64 KiB) on both stdout and stderr: read while the plugin runs,
    /// so it answers at once rather than blocking until the timeout.
    #[test]
    fn a_plugin_printing_more_than_a_pipe_holds_is_read_while_it_runs() {
        let dir = tempfile::tempdir().expect("temp dir");
        let blanks = " ".repeat(300 * 1024);
        let answer = r#"{"cniVersion":"1.1.0","supportedVersions":["1.0.0","1.1.0"]}"#;
        let chatty = script(
            &dir,
            "chatty",
            &format!("echo '{blanks}' >&2\necho '{blanks}{answer}'\necho '{blanks}' >&2\n"),
        );
        let started = Instant::now();
        let v = version_retrying_busy(&chatty).expect("a valid answer");
        assert_eq!(v.cni_version, "1.1.0");
        assert!(started.elapsed() < TIMEOUT / 2, "{:?}", started.elapsed());

        // Failing after as much on stderr: its exit status, not a timeout.
        let failing = script(&dir, "failing", &format!("echo '{blanks}' >&2\nexit 3\n"));
        let started = Instant::now();
        let err = version_retrying_busy(&failing).expect_err("exit 3");
        assert!(err.report().contains("exit status: 3"), "{}", err.report());
        assert!(started.elapsed() < TIMEOUT / 2, "{:?}", started.elapsed());
    }

    /// One that never answers is killed when its time is up, and said to be silent.
    #[test]
    fn a_plugin_that_does_not_answer_in_time_is_killed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let silent = script(&dir, "silent", "exec sleep 30\n");
        let timeout = Duration::from_secs(1);
        let started = Instant::now();
        let err = loop {
            match ask_version(&silent, timeout) {
                Err(VersionError::Io(e)) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                    thread::sleep(Duration::from_millis(10))
                }
                other => break other.expect_err("no answer"),
            }
        };
        assert!(matches!(err, VersionError::NoAnswer { .. }), "{err}");
        assert_eq!(err.to_string(), "no answer in 1s");
        // It is waited for once killed: back long before the sleep would have ended.
        let took = started.elapsed();
        assert!(took < Duration::from_secs(20), "{took:?}");
    }

    #[test]
    fn a_failing_or_missing_binary_is_an_error() {
        assert!(version(Path::new("/nonexistent/plugin")).is_err());
        // `false` exits 1 and prints nothing.
        let err = version(Path::new("/bin/false")).expect_err("exit 1");
        assert_eq!(
            err.report(),
            "running /bin/false with CNI_COMMAND=VERSION: exit status: 1:"
        );
    }
}
