//! Running an installed plugin the way a runtime first does: CNI_COMMAND=VERSION, empty stdin,
//! no other CNI variable, and reading the JSON it prints.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::error::{Context, Error, Result};

/// A plugin that has not answered VERSION by then is broken.
const TIMEOUT: Duration = Duration::from_secs(10);

/// What a plugin answers to VERSION.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginVersion {
    pub cni_version: String,
    pub supported_versions: Vec<String>,
}

/// Runs `path` with CNI_COMMAND=VERSION and parses its answer.
pub fn version(path: &Path) -> Result<PluginVersion> {
    let doing = || format!("running {} with CNI_COMMAND=VERSION", path.display());
    let mut child = Command::new(path)
        .env_clear()
        .env("CNI_COMMAND", "VERSION")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(doing)?;
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().with_context(doing)? {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::new(format!(
                "{}: no answer in {}s",
                doing(),
                TIMEOUT.as_secs()
            )));
        }
        thread::sleep(Duration::from_millis(2));
    };
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    if let Some(mut out) = child.stdout.take() {
        out.read_to_end(&mut stdout).with_context(doing)?;
    }
    if let Some(mut err) = child.stderr.take() {
        err.read_to_end(&mut stderr).with_context(doing)?;
    }
    if !status.success() {
        return Err(Error::new(format!(
            "{}: {status}: {}{}",
            doing(),
            String::from_utf8_lossy(&stdout).trim(),
            String::from_utf8_lossy(&stderr).trim()
        )));
    }
    parse(&stdout).map_err(|e| e.context(doing()))
}

/// Parses a VERSION answer: both fields present, neither empty.
pub fn parse(stdout: &[u8]) -> Result<PluginVersion> {
    let v: PluginVersion = serde_json::from_slice(stdout).with_context(|| {
        format!(
            "not a CNI version answer: {:?}",
            String::from_utf8_lossy(stdout).trim()
        )
    })?;
    if v.cni_version.is_empty() || v.supported_versions.is_empty() {
        return Err(Error::new(format!(
            "empty cniVersion or supportedVersions: {:?}",
            String::from_utf8_lossy(stdout).trim()
        )));
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

    #[test]
    fn a_failing_or_missing_binary_is_an_error() {
        assert!(version(Path::new("/nonexistent/plugin")).is_err());
        // `false` exits 1 and prints nothing.
        let err = version(Path::new("/bin/false")).expect_err("exit 1");
        assert!(err.msg().contains("exit status: 1"), "{err}");
    }
}
