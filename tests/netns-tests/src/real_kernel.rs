//! The real-kernel tier's machinery: Debian's own 6.1 kernel booted with virtme-ng in QEMU
//! (software emulation: KVM guests hang on our machines), for what the host kernel cannot do
//! (bridge VLAN filtering, 802.1Q, the openvswitch datapath). The guest shares the host's root
//! filesystem read-only, so binaries built on the host run inside as they are.
//!
//! - [`setup`]: installs what is needed, idempotently, as root;
//! - [`run`]: boots the kernel, runs one command as root in the guest, powers off and reports
//!   the command's exit status; its command line is in `cli`, the guest's script and virtme-ng's
//!   arguments in `guest`, the kernel console's handling in `console`, and how a run ended in
//!   `report`;
//! - [`check`]: inside the guest, verifies loudly the kernel features the project's tests need.
//!
//! The `real-kernel` binary exposes the three as subcommands; the tests call them through
//! [`crate::real_kernel_tier`]. Only the guest's PID 1 stays a shell script
//! (`scripts/real-kernel.d/guest-init`), since it must run before anything else is mounted.

pub mod check;
mod cli;
mod console;
mod error;
mod exec;
mod guest;
mod report;
pub mod run;
pub mod setup;

use std::path::{Path, PathBuf};

pub use error::{Context, Error, Result};

/// Set to `1` inside the guest by [`run`].
pub const GUEST_ENV: &str = "REAL_KERNEL_GUEST";

/// Env variable that moves [`DEFAULT_DIR`].
pub const DIR_ENV: &str = "CNI_REAL_KERNEL_DIR";

/// Env variable that pins the kernel package (`linux-image-6.1.0-NN-amd64`).
pub const PACKAGE_ENV: &str = "CNI_REAL_KERNEL_PACKAGE";

/// Where everything [`setup`] installs outside apt lives: virtme-ng's venv, the extracted kernel
/// (`kernel-<abi>/` with `boot/` and `lib/modules/`; `current` points at it) and failure logs.
/// Not under /var/cache: the guest mounts a tmpfs over /var/cache, which would hide the kernel's
/// modules.
pub const DEFAULT_DIR: &str = "/var/lib/cni-real-kernel";

/// The repository root (this crate is `tests/netns-tests` in it).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The tier's directory: `$CNI_REAL_KERNEL_DIR`, else [`DEFAULT_DIR`], checked to be visible
/// inside the guest.
///
/// # Errors
/// If it is relative or lies where the guest mounts something else over it.
pub fn cache_dir() -> Result<PathBuf> {
    let dir = std::env::var_os(DIR_ENV)
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DIR));
    check_cache_dir(&dir)?;
    Ok(dir)
}

/// Directories the guest mounts a tmpfs of its own over: it sees none of the host's files there
/// unless they are shared with it (`--rodir`, `--rwdir`).
pub const TMPFS_IN_GUEST: &[&str] = &["/run", "/var/cache", "/var/tmp", "/var/log"];

/// What to share with the guest for it to see `path`: the directory right below the tmpfs that
/// hides it (`/var/cache/x` for `/var/cache/x/y/z`), so that what lies beside `path` in that tree
/// comes along; None when the guest sees `path` as it is.
pub fn hidden_tree(path: &Path) -> Option<PathBuf> {
    let tmpfs = TMPFS_IN_GUEST.iter().find(|d| path.starts_with(d))?;
    let below = path.strip_prefix(tmpfs).ok()?.components().next()?;
    Some(Path::new(tmpfs).join(below))
}

/// Directories the guest hides behind a tmpfs or an empty overlay.
const HIDDEN_IN_GUEST: &[&str] = &[
    "/tmp",
    "/run",
    "/var/cache",
    "/var/tmp",
    "/var/log",
    "/dev",
    "/proc",
    "/sys",
];

fn check_cache_dir(dir: &Path) -> Result<()> {
    if !dir.is_absolute() {
        return Err(Error::msg(format!(
            "{DIR_ENV} must be an absolute path, not '{}'",
            dir.display()
        )));
    }
    if HIDDEN_IN_GUEST.iter().any(|h| dir.starts_with(h)) {
        return Err(Error::msg(format!(
            "{DIR_ENV}={} is hidden inside the guest; use a directory such as {DEFAULT_DIR}",
            dir.display()
        )));
    }
    Ok(())
}

/// Fails unless the effective uid is 0.
fn require_root(why: &str) -> Result<()> {
    if crate::is_root() {
        Ok(())
    } else {
        Err(Error::msg(format!("must run as root ({why})")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_under_a_tmpfs_of_the_guest_is_shared_by_its_top_directory() {
        assert_eq!(
            hidden_tree(Path::new(
                "/var/cache/cni-go-plugins-1.9.1/root/usr/lib/cni"
            )),
            Some(PathBuf::from("/var/cache/cni-go-plugins-1.9.1"))
        );
        assert_eq!(hidden_tree(Path::new("/usr/lib/cni")), None);
        assert_eq!(hidden_tree(Path::new("/var/cache")), None);
        assert_eq!(hidden_tree(Path::new("/var/cachex/y")), None);
    }

    #[test]
    fn the_cache_dir_must_be_absolute() {
        assert!(check_cache_dir(Path::new("var/lib/x")).is_err());
        assert!(check_cache_dir(Path::new(DEFAULT_DIR)).is_ok());
    }

    #[test]
    fn the_cache_dir_must_not_be_hidden_in_the_guest() {
        for dir in ["/tmp/rk", "/var/cache/rk", "/run/rk", "/var/log/x/y"] {
            assert!(check_cache_dir(Path::new(dir)).is_err(), "{dir}");
        }
        // Only whole path components count.
        assert!(check_cache_dir(Path::new("/tmpfoo/rk")).is_ok());
    }
}
