//! What the installer's integration tests share: the binary under test, directories of their
//! own on a real disk (so fsync means something), plugin binaries to install, file facts, and
//! throwaway network namespaces.

#![allow(dead_code)] // each test binary uses a different part

pub mod fake_api;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::thread;

use cni_common::netns::NetNs;
use nix::sched::{unshare, CloneFlags};
use sha2::{Digest, Sha256};

/// The node-agent binary under test.
pub fn installer() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_node-agent"))
}

/// Runs node-agent with `args`.
pub fn run(args: &[&str]) -> Output {
    Command::new(installer())
        .args(args)
        .output()
        .expect("run node-agent")
}

/// Runs node-agent and fails the test unless it succeeds; its stderr.
pub fn run_ok(args: &[&str]) -> String {
    let out = run(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "node-agent {args:?} failed: {stderr}");
    stderr
}

/// Runs node-agent and fails the test unless it fails; its stderr.
pub fn run_err(args: &[&str]) -> String {
    let out = run(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "node-agent {args:?} succeeded: {stderr}"
    );
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    stderr
}

/// A directory of the test's own under the target directory (a real filesystem, not tmpfs),
/// removed on drop.
pub struct TestDir(tempfile::TempDir);

impl TestDir {
    pub fn new(tag: &str) -> TestDir {
        let dir = tempfile::Builder::new()
            .prefix(&format!("installer-{tag}-"))
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .expect("create test dir");
        TestDir(dir)
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }

    /// The `src` and `dst` subdirectories, as paths and as the strings the command line takes.
    pub fn src_dst(&self) -> (PathBuf, PathBuf, String, String) {
        let (src, dst) = (self.sub("src"), self.sub("dst"));
        let (s, d) = (src.display().to_string(), dst.display().to_string());
        (src, dst, s, d)
    }

    /// A subdirectory, created.
    pub fn sub(&self, name: &str) -> PathBuf {
        let p = self.path().join(name);
        fs::create_dir_all(&p).expect("create subdir");
        p
    }

    pub fn str(&self, name: &str) -> String {
        self.sub(name).display().to_string()
    }
}

/// A real plugin binary: ours from target/cni-bin/ (scripts/build-plugins) when built, else a
/// small fixture compiled with rustc once per test binary.
pub fn plugin_binary() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let built = root.join("target/cni-bin/tuning");
        if built.is_file() {
            return built;
        }
        let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("installer-fixture-plugin-{}", std::process::id()));
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/version_plugin.rs");
        let status = Command::new("rustc")
            .args(["--edition", "2021", "-O", "-o"])
            .arg(&out)
            .arg(&src)
            .status()
            .expect("run rustc for the fixture plugin");
        assert!(status.success(), "compiling the fixture plugin");
        out
    })
}

/// Writes `dir/name`: the plugin binary followed by `padding` bytes of `fill` (ELF ignores
/// trailing bytes, so it still runs), mode 0755. Different fills give different files.
pub fn write_plugin(dir: &Path, name: &str, fill: u8, padding: usize) -> String {
    let mut bytes = fs::read(plugin_binary()).expect("read plugin binary");
    bytes.extend(std::iter::repeat_n(fill, padding));
    let path = dir.join(name);
    fs::write(&path, &bytes).expect("write source plugin");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod");
    sha256_bytes(&bytes)
}

pub fn sha256_bytes(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub fn sha256(path: &Path) -> String {
    sha256_bytes(&fs::read(path).expect("read for sha256"))
}

/// What changes when a file is written, replaced or chmod-ed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    pub ino: u64,
    pub mode: u32,
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
}

pub fn stamp(path: &Path) -> Stamp {
    let m = fs::symlink_metadata(path).expect("stat");
    Stamp {
        ino: m.ino(),
        mode: m.mode(),
        mtime: (m.mtime(), m.mtime_nsec()),
        ctime: (m.ctime(), m.ctime_nsec()),
    }
}

pub fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).expect("stat").mode() & 0o7777
}

/// Names in `dir`, sorted.
pub fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Runs `path` with CNI_COMMAND=VERSION; its stdout when it succeeded.
pub fn version_of(path: &Path) -> std::io::Result<String> {
    let out = Command::new(path)
        .env_clear()
        .env("CNI_COMMAND", "VERSION")
        .stdin(std::process::Stdio::null())
        .output()?;
    if !out.status.success() {
        return Err(std::io::Error::other(format!(
            "{} exited {}",
            path.display(),
            out.status
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A fresh network namespace, made on a throwaway thread so the test's own never moves.
pub fn new_netns() -> NetNs {
    thread::spawn(|| {
        unshare(CloneFlags::CLONE_NEWNET).expect("unshare(CLONE_NEWNET) (tests run as root)");
        NetNs::current().expect("open the new netns")
    })
    .join()
    .expect("unshare thread")
}
