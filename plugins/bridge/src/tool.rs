//! External commands the plugin still runs: iptables, for what the reference plugin keeps there.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cni_common::{Context, Error, Result};

/// Where `iptables` usually is, for runtimes that call plugins with a PATH without sbin.
const FALLBACK_DIRS: &[&str] = &["/usr/sbin", "/sbin"];

/// The command `name` on PATH, else in sbin.
pub(crate) fn find_tool(name: &str) -> Option<PathBuf> {
    let in_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    in_path
        .into_iter()
        .chain(FALLBACK_DIRS.iter().map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Runs `binary args`, with `stdin` written to it; its stdout, or an error with its stderr.
pub(crate) fn run(binary: &Path, args: &[&str], stdin: Option<&str>) -> Result<String> {
    let mut child = Command::new(binary)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("running {}", binary.display()))?;
    if let (Some(script), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(script.as_bytes())
            .with_context(|| format!("writing to {}", binary.display()))?;
    }
    let out = child
        .wait_with_output()
        .with_context(|| format!("waiting for {}", binary.display()))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(Error::system(format!(
            "{} {}: {}",
            binary.display(),
            args.join(" "),
            stderr.trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
