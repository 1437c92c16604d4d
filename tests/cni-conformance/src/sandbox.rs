//! What one check owns: a throwaway "host" namespace the plugin runs in, a container namespace
//! and a temp dir, all removed when the check ends, whether it passed or failed.

use crate::error::{Context, Error};
use crate::invoke::Hook;
use crate::netns::{self, Netns, NETNS_DIR};
use crate::report;
use std::path::{Path, PathBuf};

/// Prefix of every namespace and temp directory the suite creates.
pub const PREFIX: &str = "cnic-";

/// Everything one check owns; dropping it runs `--host-teardown`, then deletes the namespaces
/// and the temp dir (and with them every interface and file the plugin made).
pub struct Sandbox {
    pub host: Netns,
    pub ctr: Netns,
    pub dir: tempfile::TempDir,
    pub cid: String,
    pub ctr_path: String,
    /// MAC of the interface the suite created for a chained plugin.
    pub prepared_mac: Option<String>,
    teardown: Option<Hook>,
}

impl Sandbox {
    /// The `n`th sandbox of this run: `cnic-host-<pid>-<n>`, `cnic-ctr-<pid>-<n>` and
    /// `/tmp/cnic-<pid>-<n>`, named after the run's pid so that a later run can tell whether
    /// they were left behind (see `remove_stale`). `teardown` runs when the sandbox is dropped.
    pub fn create(n: u32, teardown: Option<Hook>) -> Result<Self, Error> {
        let pid = std::process::id();
        let host = Netns::create(format!("{PREFIX}host-{pid}-{n}"))?;
        host.ip(&["link", "set", "lo", "up"])?;
        let ctr = Netns::create(format!("{PREFIX}ctr-{pid}-{n}"))?;
        let name = format!("{PREFIX}{pid}-{n}");
        let dir = tempfile::Builder::new()
            .prefix(&name)
            .rand_bytes(0)
            .tempdir()
            .with_context(|| {
                let path = std::env::temp_dir().join(&name);
                format!("cannot create {}", path.display())
            })?;
        let ctr_path = ctr.path();
        Ok(Sandbox {
            host,
            ctr,
            dir,
            cid: format!("cnic-{pid}-{n}"),
            ctr_path,
            prepared_mac: None,
            teardown,
        })
    }

    /// host-local's dataDir for this check (the suite redirects it here).
    pub fn ipam_dir(&self) -> PathBuf {
        self.dir.path().join("ipam")
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if let Some(hook) = self.teardown.take() {
            let out = hook.run(self.host.name(), self.dir.path());
            if !out.success() {
                report::comment(&format!(
                    "--host-teardown failed in {}: {}",
                    self.host.name(),
                    out.describe()
                ));
            }
        }
    }
}

/// The pid in a name `cnic-[host-|ctr-]<pid>-<n>`.
fn owner_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let rest = rest
        .strip_prefix("host-")
        .or_else(|| rest.strip_prefix("ctr-"))
        .unwrap_or(rest);
    rest.split('-').next()?.parse().ok()
}

/// Remove namespaces and temp dirs left behind by suite runs that were
/// killed (their pid no longer exists). Those of live runs are kept.
pub fn remove_stale() {
    let dead = |name: &str| {
        owner_pid(name).is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists())
    };
    if let Ok(entries) = std::fs::read_dir(NETNS_DIR) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if dead(&name) {
                let _ = netns::ip(&["netns", "delete", &name]);
            }
        }
    }
    if let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if dead(&name) && e.path().is_dir() {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owner_pid_is_read_only_from_the_suites_own_names() {
        assert_eq!(owner_pid("cnic-host-123-4"), Some(123));
        assert_eq!(owner_pid("cnic-ctr-77-0"), Some(77));
        assert_eq!(owner_pid("cnic-55-9"), Some(55));
        assert_eq!(owner_pid("cni-1234"), None);
        assert_eq!(owner_pid("cnic-peer0"), None);
    }
}
