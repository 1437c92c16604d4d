//! The Go reference plugins that benchmarks and tests compare against, and which release they
//! are: the directory `$GO_PLUGINS_DIR` names when set (the current release, from
//! `scripts/go-plugins-1.9.1`), else Debian's package in /usr/lib/cni (1.1.1 on Debian 12).

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::paths::{go_plugin, go_plugin_dir, is_executable_file};
use crate::process::run_command;

/// Names a directory of Go reference plugins to use instead of Debian's.
pub const GO_PLUGINS_DIR_ENV: &str = "GO_PLUGINS_DIR";

/// Where Debian's packages keep the changelog, relative to the `usr` directory that holds
/// `lib/cni`.
const DEBIAN_CHANGELOG: &str = "share/doc/containernetworking-plugins/changelog.Debian.gz";

/// The directory of the Go reference plugins: `$GO_PLUGINS_DIR` when set and not empty, else
/// Debian's /usr/lib/cni.
pub fn go_reference_dir() -> PathBuf {
    match std::env::var_os(GO_PLUGINS_DIR_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => go_plugin_dir(),
    }
}

/// Path of the Go reference plugin `name`, from [`go_reference_dir`].
///
/// # Panics
/// If the binary is missing, saying how to get it.
pub fn go_reference(name: &str) -> PathBuf {
    match std::env::var_os(GO_PLUGINS_DIR_ENV) {
        Some(dir) if !dir.is_empty() => {
            let path = Path::new(&dir).join(name);
            if !is_executable_file(&path) {
                panic!(
                    "{GO_PLUGINS_DIR_ENV}={} holds no `{name}`; `scripts/go-plugins-1.9.1` \
                     fetches the current Go reference plugins and prints their directory",
                    Path::new(&dir).display()
                );
            }
            path
        }
        _ => go_plugin(name),
    }
}

/// A release of the Go reference plugins, `major.minor.patch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Release {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl Release {
    pub const fn new(major: u32, minor: u32, patch: u32) -> Release {
        Release {
            major,
            minor,
            patch,
        }
    }

    /// The first `N.N.N` in `text` (a leading `v` or a Debian suffix such as `+ds1-1` around it
    /// does not matter).
    pub fn find_in(text: &str) -> Option<Release> {
        let bytes = text.as_bytes();
        (0..bytes.len())
            .filter(|&i| bytes[i].is_ascii_digit() && (i == 0 || !bytes[i - 1].is_ascii_digit()))
            .find_map(|i| {
                let mut parts = text[i..].splitn(3, '.');
                let major = parts.next()?.parse().ok()?;
                let minor = parts.next()?.parse().ok()?;
                let rest = parts.next()?;
                let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
                let patch = rest.get(..digits)?.parse().ok()?;
                Some(Release::new(major, minor, patch))
            })
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// Which release the Go plugin `binary` is: what it says about itself when run without
/// CNI_COMMAND (`CNI bridge plugin v1.9.1` when the build stamped its version), else the Debian
/// changelog of the package it was unpacked from (`<usr>/share/doc/...` beside `<usr>/lib/cni`,
/// which is also where a `dpkg -x` of the package puts it). None when neither tells.
pub fn go_release(binary: &Path) -> Option<Release> {
    release_from_binary(binary).or_else(|| release_from_debian_changelog(binary))
}

/// [`go_release`] of `binary` as a label for output: `1.9.1`, or `of unknown release`.
pub fn go_release_label(binary: &Path) -> String {
    go_release(binary).map_or_else(|| "of unknown release".to_string(), |r| r.to_string())
}

fn release_from_binary(binary: &Path) -> Option<Release> {
    let mut cmd = Command::new(binary);
    cmd.env_clear();
    let out = run_command(cmd, b"");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    // `CNI <name> plugin <version>`, where an unstamped build says `version unknown`.
    let line = text
        .lines()
        .find(|l| l.starts_with("CNI ") && l.contains(" plugin "))?;
    let (_, version) = line.split_once(" plugin ")?;
    Release::find_in(version)
}

fn release_from_debian_changelog(binary: &Path) -> Option<Release> {
    // <usr>/lib/cni/<name>
    let usr = binary.parent()?.parent()?.parent()?;
    let changelog = usr.join(DEBIAN_CHANGELOG);
    if !changelog.is_file() {
        return None;
    }
    let mut cmd = Command::new("gzip");
    cmd.arg("-dc").arg(&changelog);
    let out = run_command(cmd, b"");
    // `golang-github-containernetworking-plugins (1.9.1+ds1-1) unstable; urgency=medium`
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next()?;
    let (_, rest) = first.split_once('(')?;
    let (version, _) = rest.split_once(')')?;
    Release::find_in(version)
}

/// The CNI spec versions `binary` supports, from its answer to `CNI_COMMAND=VERSION`.
///
/// # Panics
/// If it gives no such answer.
pub fn cni_versions(binary: &Path) -> Vec<String> {
    let mut cmd = Command::new(binary);
    cmd.env_clear().env("CNI_COMMAND", "VERSION");
    let out = run_command(cmd, br#"{"cniVersion":"1.0.0"}"#);
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{} answered VERSION with no JSON ({e}):\n{}",
            binary.display(),
            crate::describe_output(&out)
        )
    });
    answer["supportedVersions"]
        .as_array()
        .unwrap_or_else(|| panic!("{} lists no supportedVersions: {answer}", binary.display()))
        .iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

/// The newest CNI spec version that every one of `binaries` supports.
///
/// # Panics
/// If they have none in common.
pub fn newest_common_cni_version(binaries: &[&Path]) -> String {
    let lists: Vec<Vec<String>> = binaries.iter().map(|b| cni_versions(b)).collect();
    newest_common(&lists).unwrap_or_else(|| {
        panic!("{binaries:?} have no CNI version in common: {lists:?}");
    })
}

fn newest_common(lists: &[Vec<String>]) -> Option<String> {
    let first = lists.first()?;
    first
        .iter()
        .filter(|v| lists.iter().all(|l| l.contains(v)))
        .max_by_key(|v| Release::find_in(v))
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_are_found_in_what_binaries_and_changelogs_say() {
        assert_eq!(Release::find_in("v1.9.1"), Some(Release::new(1, 9, 1)));
        assert_eq!(Release::find_in("1.1.1+ds1-3"), Some(Release::new(1, 1, 1)));
        assert_eq!(Release::find_in("1.10.0-rc1"), Some(Release::new(1, 10, 0)));
        assert_eq!(Release::find_in("version unknown"), None);
        assert_eq!(Release::find_in("1.2"), None);
        assert!(Release::new(1, 9, 1) > Release::new(1, 6, 0));
        assert!(Release::new(1, 10, 0) > Release::new(1, 9, 1));
        assert_eq!(Release::new(1, 9, 1).to_string(), "1.9.1");
    }

    #[test]
    fn the_newest_common_version_is_compared_as_numbers() {
        let list = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let go_111 = list(&["0.1.0", "0.3.1", "0.4.0", "1.0.0"]);
        let go_191 = list(&["0.1.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]);
        let ours = list(&["0.1.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]);
        assert_eq!(
            newest_common(&[ours.clone(), go_191]).as_deref(),
            Some("1.1.0")
        );
        assert_eq!(newest_common(&[ours, go_111]).as_deref(), Some("1.0.0"));
        assert_eq!(
            newest_common(&[list(&["0.10.0", "0.9.0"])]).as_deref(),
            Some("0.10.0")
        );
        assert_eq!(newest_common(&[list(&["1.0.0"]), list(&["0.4.0"])]), None);
    }
}
