//! What a network's config may name on this node.
//!
//! The plugins run as root, but their configs are written by whoever may create a
//! NetworkAttachmentDefinition in a namespace. So every field that names a directory, a file or a
//! socket is checked here before the node is touched, against what the node's administrator
//! allows: the defaults below, plus what the node's policy file adds. The policy file is written
//! by the node agent (never by a network config) as `node-policy.json` beside the plugin
//! binaries; `CNI_NODE_POLICY` names another one (a runtime's environment, which no network
//! config can set).
//!
//! A refused path is code 7 (invalid network config) and names the field. A policy file that
//! cannot be used is code 50 (the plugin cannot serve on this node): the administrator must fix
//! it, so it is not the transient failure that 11 invites the runtime to retry.

use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Code, Error, Result};

/// The environment variable that names the policy file instead of the one beside the binary.
pub const POLICY_ENV: &str = "CNI_NODE_POLICY";
/// The policy file's name in the CNI binary directory.
pub const POLICY_FILE_NAME: &str = "node-policy.json";

/// Where state directories may be: the CNI state roots every runtime already uses. A state
/// directory must be strictly below one of them.
pub const STATE_ROOTS: [&str; 2] = ["/run/cni", "/var/lib/cni"];
/// Directories below the state roots that belong to others (OpenShift's CNI binaries, libcni's
/// result cache, Multus, host-local's leases): never a plugin's state directory, nor below one.
pub const RESERVED_STATE_DIRS: [&str; 4] = [
    "/var/lib/cni/bin",
    "/var/lib/cni/results",
    "/var/lib/cni/multus",
    "/var/lib/cni/networks",
];
/// host-local's own lease directory, its `dataDir` when the config names none.
pub const HOST_LOCAL_LEASE_DIR: &str = "/var/lib/cni/networks";
/// The OVSDB endpoints of Open vSwitch's packaging (`/var/run` is a link to `/run`).
pub const DEFAULT_OVSDB_ENDPOINTS: [&str; 2] = [
    "unix:/var/run/openvswitch/db.sock",
    "unix:/run/openvswitch/db.sock",
];
/// Where configuration files may be read from: ovs-cni's flat-file directories.
pub const CONFIG_DIRS: [&str; 2] = ["/etc/kubernetes/cni/net.d/ovs.d", "/etc/cni/net.d/ovs.d"];
/// The largest configuration file (or policy file) read; ovs-cni's flat file is a few hundred
/// bytes.
pub const MAX_CONFIG_FILE: u64 = 64 * 1024;
/// Longer paths are refused before any system call (the kernel's PATH_MAX is 4096 with its NUL).
const MAX_PATH: usize = 4095;
/// The longest name of one path component (NAME_MAX).
const MAX_NAME: usize = 255;

/// The policy file, as the node agent writes it: what it adds to the defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicyFile {
    /// More directories below which state directories may be (absolute).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub state_dirs: Vec<PathBuf>,
    /// More OVSDB endpoints a config may name (`unix:PATH` or `tcp:IP:PORT`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ovsdb_endpoints: Vec<String>,
    /// Directories below which any unix socket is an OVSDB endpoint a config may name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ovsdb_socket_dirs: Vec<PathBuf>,
    /// More directories whose regular files a config may name as its configuration file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config_dirs: Vec<PathBuf>,
}

/// What configs may name on this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodePolicy {
    state_roots: Vec<PathBuf>,
    ovsdb_endpoints: Vec<String>,
    ovsdb_socket_dirs: Vec<PathBuf>,
    config_dirs: Vec<PathBuf>,
}

impl Default for NodePolicy {
    fn default() -> Self {
        NodePolicy {
            state_roots: STATE_ROOTS.iter().map(PathBuf::from).collect(),
            ovsdb_endpoints: DEFAULT_OVSDB_ENDPOINTS.map(String::from).to_vec(),
            ovsdb_socket_dirs: Vec::new(),
            config_dirs: CONFIG_DIRS.iter().map(PathBuf::from).collect(),
        }
    }
}

impl NodePolicy {
    /// The node's policy: the defaults, plus the policy file when there is one. A policy file
    /// that cannot be read or parsed is an error (code 50): the administrator meant something by
    /// it, and no retry helps until it is fixed.
    pub fn load() -> Result<NodePolicy> {
        let path = match std::env::var_os(POLICY_ENV) {
            Some(p) if !p.is_empty() => PathBuf::from(p),
            _ => match std::env::current_exe()
                .ok()
                .and_then(|exe| exe.parent().map(|dir| dir.join(POLICY_FILE_NAME)))
            {
                Some(p) => p,
                None => return Ok(NodePolicy::default()),
            },
        };
        NodePolicy::load_from(&path)
    }

    /// The defaults plus the policy file at `path`, when it exists.
    fn load_from(path: &Path) -> Result<NodePolicy> {
        let file = match read_bounded(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(NodePolicy::default()),
            Err(e) => return Err(unusable_policy(path, e)),
        };
        let file: PolicyFile =
            serde_json::from_slice(&file).map_err(|e| unusable_policy(path, e))?;
        NodePolicy::default().with(file)
    }

    /// The defaults plus what `file` adds; its paths must be absolute and plain.
    pub fn with(mut self, file: PolicyFile) -> Result<NodePolicy> {
        let plain = |what: &str, p: &Path| {
            check_plain_path(&format!("{POLICY_FILE_NAME} {what}"), &p.to_string_lossy())
                .map(|()| p.to_path_buf())
        };
        for dir in file.state_dirs {
            self.state_roots.push(plain("stateDirs", &dir)?);
        }
        for dir in file.ovsdb_socket_dirs {
            self.ovsdb_socket_dirs.push(plain("ovsdbSocketDirs", &dir)?);
        }
        for dir in file.config_dirs {
            self.config_dirs.push(plain("configDirs", &dir)?);
        }
        self.ovsdb_endpoints.extend(file.ovsdb_endpoints);
        Ok(self)
    }

    /// The OVSDB endpoints configs may name, as written (the caller compares them parsed).
    pub fn ovsdb_endpoints(&self) -> &[String] {
        &self.ovsdb_endpoints
    }

    /// Whether the unix socket `path` is below one of the policy's `ovsdbSocketDirs` (links
    /// resolved; a plain path only).
    pub fn allows_ovsdb_socket(&self, path: &Path) -> bool {
        if check_plain_path("socket_file", &path.to_string_lossy()).is_err() {
            return false;
        }
        let Ok(resolved) = resolve_existing(path) else {
            return false;
        };
        below_any(&resolved, &self.ovsdb_socket_dirs)
    }

    /// Checks the state directory `value` of config field `field` and returns it with the
    /// symbolic links of its existing part resolved: the path every later step must use.
    pub fn state_dir(&self, field: &str, value: &str) -> Result<PathBuf> {
        check_plain_path(field, value)?;
        let resolved = resolve_existing(Path::new(value))
            .map_err(|e| unusable_path(format!("{field} {value:?}"), e))?;
        let below_root = below_any(&resolved, &self.state_roots);
        let reserved = RESERVED_STATE_DIRS.iter().any(|r| {
            let r = fs::canonicalize(r).unwrap_or_else(|_| PathBuf::from(r));
            resolved.starts_with(r)
        });
        if !below_root || reserved {
            return Err(Error::invalid_config(format!(
                "{field} {value:?}{} is not allowed: a state directory must be below {} and \
                 not in {} (the node's {POLICY_FILE_NAME} can allow more)",
                shown_if_different(value, &resolved),
                self.roots_text(),
                RESERVED_STATE_DIRS.join(", ")
            )));
        }
        Ok(resolved)
    }

    /// Checks host-local's lease directory `value` of config field `field` (its `dataDir`), which
    /// a GC lists and releases leases from, and returns it with the links of its existing part
    /// resolved. Allowed: host-local's own directory or below it, or a state directory
    /// ([`NodePolicy::state_dir`]).
    pub fn lease_dir(&self, field: &str, value: &str) -> Result<PathBuf> {
        check_plain_path(field, value)?;
        let resolved = resolve_existing(Path::new(value))
            .map_err(|e| unusable_path(format!("{field} {value:?}"), e))?;
        let own = fs::canonicalize(HOST_LOCAL_LEASE_DIR)
            .unwrap_or_else(|_| PathBuf::from(HOST_LOCAL_LEASE_DIR));
        if resolved.starts_with(own) || self.state_dir(field, value).is_ok() {
            return Ok(resolved);
        }
        Err(Error::invalid_config(format!(
            "{field} {value:?}{} is not allowed: host-local's leases must be in \
             {HOST_LOCAL_LEASE_DIR} or in a state directory below {} (the node's \
             {POLICY_FILE_NAME} can allow more)",
            shown_if_different(value, &resolved),
            self.roots_text(),
        )))
    }

    /// Checks that the configuration file `value` of config field `field` is a file in one of
    /// the allowed directories (links resolved), and returns its resolved path; `None` when it
    /// does not exist.
    pub fn config_file(&self, field: &str, value: &str) -> Result<Option<PathBuf>> {
        check_plain_path(field, value)?;
        let resolved = match fs::canonicalize(value) {
            Ok(p) => p,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // Refused all the same when it could not be allowed once it exists.
                let lexical = Path::new(value);
                return match self.in_config_dir(lexical) {
                    true => Ok(None),
                    false => Err(self.config_refusal(field, value, lexical)),
                };
            }
            Err(e) => return Err(unusable_path(format!("{field} {value:?}"), e)),
        };
        if !self.in_config_dir(&resolved) {
            return Err(self.config_refusal(field, value, &resolved));
        }
        Ok(Some(resolved))
    }

    fn in_config_dir(&self, path: &Path) -> bool {
        below_any(path, &self.config_dirs)
    }

    fn config_refusal(&self, field: &str, value: &str, resolved: &Path) -> Error {
        let dirs: Vec<String> = self
            .config_dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        Error::invalid_config(format!(
            "{field} {value:?}{} is not allowed: a configuration file must be in {} (the \
             node's {POLICY_FILE_NAME} can allow more)",
            shown_if_different(value, resolved),
            dirs.join(", ")
        ))
    }

    fn roots_text(&self) -> String {
        let roots: Vec<String> = self
            .state_roots
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        roots.join(", ")
    }
}

/// Reads a configuration file whose path [`NodePolicy::config_file`] allowed: only a regular
/// file, at most [`MAX_CONFIG_FILE`] bytes, without ever blocking on a FIFO or a device.
/// `None` when it does not exist.
pub fn read_config_file(field: &str, path: &Path) -> Result<Option<Vec<u8>>> {
    match read_bounded(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(unusable_path(
            format!("{field}: reading {}", path.display()),
            e,
        )),
    }
}

/// A regular file of at most [`MAX_CONFIG_FILE`] bytes. Opened non-blocking and without
/// following a final link, so a FIFO, a device or a socket is refused at once.
fn read_bounded(path: &Path) -> io::Result<Vec<u8>> {
    let file: File = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    if meta.len() > MAX_CONFIG_FILE {
        return Err(io::Error::other(format!(
            "{} bytes, more than the {MAX_CONFIG_FILE} allowed",
            meta.len()
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // The file may grow after the check.
    file.take(MAX_CONFIG_FILE + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_CONFIG_FILE {
        return Err(io::Error::other(format!(
            "more than the {MAX_CONFIG_FILE} bytes allowed"
        )));
    }
    Ok(bytes)
}

/// Absolute, of sane length, no NUL, no `.` or `..` components and no empty ones but a final
/// slash: what a path written by a person for a directory looks like. Checked on the text, so
/// nothing is resolved or touched for a refused value.
pub fn check_plain_path(field: &str, value: &str) -> Result<()> {
    let refuse = |why: &str| {
        Err(Error::invalid_config(format!(
            "{field} {:?}: {why}",
            shorten(value)
        )))
    };
    if value.is_empty() {
        return refuse("must not be empty");
    }
    if value.len() > MAX_PATH {
        return refuse(&format!("longer than {MAX_PATH} bytes"));
    }
    if value.contains('\0') {
        return refuse("contains a NUL byte");
    }
    if !value.starts_with('/') {
        return refuse("must be an absolute path");
    }
    let body = value.trim_end_matches('/');
    for part in body.split('/').skip(1) {
        match part {
            "" => return refuse("has an empty component (//)"),
            "." | ".." => return refuse("must not contain . or .. components"),
            p if p.len() > MAX_NAME => {
                return refuse(&format!("has a component longer than {MAX_NAME} bytes"))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Whether `path` is strictly below one of `dirs` (their links resolved).
fn below_any(path: &Path, dirs: &[PathBuf]) -> bool {
    dirs.iter().any(|dir| {
        let dir = fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
        path != dir && path.starts_with(&dir)
    })
}

/// `path` with its longest existing prefix resolved (links followed), the rest appended as is.
fn resolve_existing(path: &Path) -> io::Result<PathBuf> {
    let mut existing = path.to_path_buf();
    let mut rest: Vec<&OsStr> = Vec::new();
    let components: Vec<Component> = path.components().collect();
    let mut n = components.len();
    loop {
        match fs::canonicalize(&existing) {
            Ok(mut resolved) => {
                for part in rest.iter().rev() {
                    resolved.push(part);
                }
                return Ok(resolved);
            }
            // A file where a directory is wanted fails later, where it is used.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) && n > 1 =>
            {
                n -= 1;
                if let Component::Normal(part) = components[n] {
                    rest.push(part);
                }
                existing = components[..n].iter().collect();
            }
            Err(e) => return Err(e),
        }
    }
}

fn shown_if_different(value: &str, resolved: &Path) -> String {
    match Path::new(value) == resolved {
        true => String::new(),
        false => format!(" (resolved to {:?})", shorten(&resolved.to_string_lossy())),
    }
}

/// Long hostile values are cut in messages, so an error stays readable in a runtime's log.
fn shorten(value: &str) -> String {
    const SHOWN: usize = 120;
    match value.char_indices().nth(SHOWN) {
        Some((end, _)) => format!("{}…", &value[..end]),
        None => value.to_string(),
    }
}

/// A path a config names that cannot be looked at: the config's problem (7), whatever the file
/// system said, as its other paths that are refused.
fn unusable_path(context: String, cause: io::Error) -> Error {
    Error::classified(Code::InvalidConfig, context, cause)
}

/// A policy file that cannot be read or decoded: the plugin cannot serve anything until the
/// node is fixed (50), which is not the config's fault (7) nor an I/O failure of the call (5).
fn unusable_policy(
    path: &Path,
    cause: impl Into<Box<dyn std::error::Error + Send + Sync>>,
) -> Error {
    Error::classified(
        Code::NotAvailable,
        format!("the node policy {} cannot be used", path.display()),
        cause,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy_with_state(root: &Path) -> NodePolicy {
        NodePolicy::default()
            .with(PolicyFile {
                state_dirs: vec![root.to_path_buf()],
                ..Default::default()
            })
            .expect("policy")
    }

    #[test]
    fn a_directory_below_a_state_root_is_allowed() {
        let p = NodePolicy::default();
        let dir = p.state_dir("dataDir", "/run/cni/tuning").expect("allowed");
        assert!(dir.ends_with("cni/tuning"), "{}", dir.display());
        p.state_dir("dataDir", "/var/lib/cni/tuning/")
            .expect("allowed");
    }

    #[test]
    fn a_state_root_itself_and_what_is_outside_are_refused() {
        let p = NodePolicy::default();
        for bad in [
            "/run/cni",
            "/",
            "/etc",
            "/opt/cni/bin",
            "/etc/cni/net.d",
            "/run",
        ] {
            let e = p.state_dir("dataDir", bad).expect_err(bad);
            assert_eq!(e.code(), Code::InvalidConfig, "{bad}");
            assert!(e.msg().starts_with("dataDir "), "{}", e.msg());
        }
    }

    #[test]
    fn directories_of_others_below_the_roots_are_refused() {
        let p = NodePolicy::default();
        for bad in [
            "/var/lib/cni/bin",
            "/var/lib/cni/results/x",
            "/var/lib/cni/networks",
        ] {
            assert!(p.state_dir("dataDir", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn dot_segments_relative_paths_nul_and_overlong_values_are_refused_on_the_text() {
        let p = NodePolicy::default();
        let long = format!("/run/cni/{}", "a".repeat(5000));
        let long_name = format!("/run/cni/{}", "a".repeat(300));
        for bad in [
            "/run/cni/../../etc",
            "/run/cni/./x/..",
            "run/cni/x",
            "",
            "/run/cni//x",
            "/run/cni/x\0y",
            &long,
            &long_name,
        ] {
            let e = p.state_dir("dataDir", bad).expect_err(bad);
            assert_eq!(e.code(), Code::InvalidConfig);
            assert!(e.msg().len() < 400, "{}", e.msg());
        }
    }

    #[test]
    fn a_link_below_a_root_that_leads_outside_is_refused() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path().join("root");
        fs::create_dir(&root).expect("root");
        let outside = tmp.path().join("outside");
        fs::create_dir(&outside).expect("outside");
        std::os::unix::fs::symlink(&outside, root.join("link")).expect("link");
        let p = policy_with_state(&root);
        let e = p
            .state_dir("dataDir", &format!("{}/link/state", root.display()))
            .expect_err("through a link outside");
        assert!(e.msg().contains("resolved to"), "{}", e.msg());
        let ok = p
            .state_dir("dataDir", &format!("{}/new/state", root.display()))
            .expect("a directory yet to be made");
        assert!(ok.starts_with(fs::canonicalize(&root).expect("canon")));
    }

    #[test]
    fn a_lease_directory_is_host_locals_own_or_a_state_directory() {
        let p = NodePolicy::default();
        for ok in [
            "/var/lib/cni/networks",
            "/var/lib/cni/networks/",
            "/run/cni/leases",
        ] {
            p.lease_dir("ipam.dataDir", ok).expect(ok);
        }
        for bad in [
            "/etc",
            "/",
            "/var/lib/cni",
            "/var/lib/cni/results",
            "/run/cni/../../etc",
        ] {
            let e = p.lease_dir("ipam.dataDir", bad).expect_err(bad);
            assert_eq!(e.code(), Code::InvalidConfig, "{bad}");
            assert!(e.msg().starts_with("ipam.dataDir "), "{}", e.msg());
        }
    }

    #[test]
    fn a_config_file_must_be_in_an_allowed_directory() {
        let tmp = tempfile::tempdir().expect("tmp");
        let p = NodePolicy::default()
            .with(PolicyFile {
                config_dirs: vec![tmp.path().to_path_buf()],
                ..Default::default()
            })
            .expect("policy");
        fs::write(tmp.path().join("ovs.conf"), b"{}").expect("file");
        let ok = format!("{}/ovs.conf", tmp.path().display());
        assert!(p
            .config_file("configuration_path", &ok)
            .expect("ok")
            .is_some());
        let absent = format!("{}/none.conf", tmp.path().display());
        assert_eq!(
            p.config_file("configuration_path", &absent).expect("ok"),
            None
        );
        for bad in [
            "/etc/passwd",
            "/dev/zero",
            "/etc/kubernetes/cni/net.d/ovs.d",
        ] {
            let e = p.config_file("configuration_path", bad).expect_err(bad);
            assert_eq!(e.code(), Code::InvalidConfig);
        }
    }

    #[test]
    fn a_config_file_that_is_not_a_small_regular_file_is_refused_at_once() {
        let tmp = tempfile::tempdir().expect("tmp");
        let fifo = tmp.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("fifo");
        assert!(read_config_file("f", &fifo).is_err());
        let big = tmp.path().join("big");
        fs::write(&big, vec![b' '; MAX_CONFIG_FILE as usize + 1]).expect("big");
        assert!(read_config_file("f", &big).is_err());
        assert!(read_config_file("f", Path::new("/dev/zero")).is_err());
        assert_eq!(
            read_config_file("f", &tmp.path().join("none")).expect("ok"),
            None
        );
    }

    #[test]
    fn a_policy_file_that_cannot_be_used_is_code_50_not_a_transient_11() {
        let tmp = tempfile::tempdir().expect("tmp");
        let garbled = tmp.path().join("node-policy.json");
        fs::write(&garbled, b"{\"stateDirs\": ").expect("policy");
        let fifo = tmp.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("fifo");
        for path in [&garbled, &fifo] {
            let e = NodePolicy::load_from(path).expect_err("unusable");
            assert_eq!(e.code(), Code::NotAvailable, "{}", e.msg());
            assert_eq!(e.code().as_u32(), 50);
        }
        let absent = NodePolicy::load_from(&tmp.path().join("none")).expect("the defaults");
        assert_eq!(absent, NodePolicy::default());
    }

    #[test]
    fn a_policy_file_with_a_relative_or_dotted_path_is_refused() {
        for bad in ["relative", "/a/../b"] {
            let file = PolicyFile {
                state_dirs: vec![PathBuf::from(bad)],
                ..Default::default()
            };
            assert!(NodePolicy::default().with(file).is_err(), "{bad}");
        }
    }
}
