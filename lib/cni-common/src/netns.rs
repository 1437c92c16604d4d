//! Network namespaces by path (CNI_NETNS), and running code inside one.
//!
//! A namespace is entered only on a dedicated, freshly spawned OS thread, never on the caller's
//! thread: that thread may be shared (a tokio worker, the main thread) and must stay where it is.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use nix::sched::{setns, CloneFlags};
use nix::sys::statfs::{fstatfs, NSFS_MAGIC, PROC_SUPER_MAGIC};

use crate::error::{Code, Context, Error, Result};

/// The calling thread's network namespace; `/proc/self` would name the main thread's.
const THREAD_NETNS: &str = "/proc/thread-self/ns/net";

/// An open network namespace. The open file keeps the namespace alive and is what `setns` and
/// `IFLA_NET_NS_FD` take.
#[derive(Debug)]
pub struct NetNs {
    file: File,
    path: PathBuf,
}

impl NetNs {
    /// Opens `path` and checks that it is a network namespace (code 8 otherwise).
    pub fn open(path: impl AsRef<Path>) -> Result<NetNs> {
        let path = path.as_ref();
        match NetNs::open_if_exists(path)? {
            Some(ns) => Ok(ns),
            None if !path.exists() => Err(Error::new(
                Code::InvalidNetns,
                format!("netns {} does not exist", path.display()),
            )),
            None => Err(Error::new(
                Code::InvalidNetns,
                format!("{} is not a network namespace", path.display()),
            )),
        }
    }

    /// Like [`NetNs::open`], but `Ok(None)` when the namespace is gone: the path does not exist,
    /// or it is no longer a namespace (a bind-mount target left behind after `ip netns del`).
    /// This is what DEL needs to stay idempotent.
    pub fn open_if_exists(path: impl AsRef<Path>) -> Result<Option<NetNs>> {
        let path = path.as_ref();
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(unusable_netns(path, e)),
        };
        let fs_type = fstatfs(&file)
            .map_err(|e| unusable_netns(path, e))?
            .filesystem_type();
        if fs_type == NSFS_MAGIC {
            // nsfs holds every namespace type; make sure this one is a network namespace.
            // SAFETY: NS_GET_NSTYPE takes no argument and only reads the fd.
            let nstype = unsafe { libc::ioctl(file.as_raw_fd(), libc::NS_GET_NSTYPE) };
            if nstype < 0 {
                let e = io::Error::last_os_error();
                // Kernels before 4.11 (ENOTTY) and emulators such as qemu-user (ENOSYS) cannot
                // tell: setns(CLONE_NEWNET) still refuses a namespace of another type.
                if !matches!(e.raw_os_error(), Some(libc::ENOTTY) | Some(libc::ENOSYS)) {
                    return Err(unusable_netns(path, e));
                }
            } else if nstype != libc::CLONE_NEWNET {
                return Ok(None);
            }
        } else if fs_type != PROC_SUPER_MAGIC {
            // Kernels before 3.19 exposed namespaces on procfs; anything else is not one.
            return Ok(None);
        }
        Ok(Some(NetNs {
            file,
            path: path.to_path_buf(),
        }))
    }

    /// The calling thread's network namespace.
    pub fn current() -> Result<NetNs> {
        NetNs::open(THREAD_NETNS)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// True when this is the calling thread's namespace. Go's skel refuses such a CNI_NETNS
    /// (code 8): a plugin must never configure its own namespace as the container's.
    pub fn is_same_as_current(&self) -> Result<bool> {
        let ours = self.file.metadata().context("stat of netns")?;
        let current =
            std::fs::metadata(THREAD_NETNS).with_context(|| format!("stat of {THREAD_NETNS}"))?;
        Ok(ours.dev() == current.dev() && ours.ino() == current.ino())
    }

    /// Runs `f` on a new OS thread that has joined this namespace, and returns its result.
    /// Used for `/proc/sys/net` and for creating netlink sockets bound to the namespace.
    pub fn run<T: Send, F: FnOnce() -> Result<T> + Send>(&self, f: F) -> Result<T> {
        std::thread::scope(|scope| {
            let thread = std::thread::Builder::new()
                .name("netns".to_string())
                .spawn_scoped(scope, || {
                    setns(&self.file, CloneFlags::CLONE_NEWNET)
                        .with_context(|| format!("entering netns {}", self.path.display()))?;
                    f()
                })
                .context("spawning a thread for the netns")?;
            thread.join().map_err(|_| {
                Error::system(format!("thread in netns {} panicked", self.path.display()))
            })?
        })
    }
}

/// CNI_NETNS names something that cannot be opened as a namespace: whatever the system call
/// said, the runtime passed a bad namespace (8). The cause reads as [`Error`] prints it.
fn unusable_netns(path: &Path, cause: impl Into<Error>) -> Error {
    Error::classified(
        Code::InvalidNetns,
        format!("opening netns {}", path.display()),
        cause.into(),
    )
}

impl AsFd for NetNs {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}

impl AsRawFd for NetNs {
    fn as_raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_path_is_none_or_invalid_netns() {
        let path = "/nonexistent/cni-common-test-netns";
        assert!(NetNs::open_if_exists(path).expect("no error").is_none());
        let err = NetNs::open(path).expect_err("does not exist");
        assert_eq!(err.code(), Code::InvalidNetns);
    }

    #[test]
    fn regular_file_is_not_a_netns() {
        // What a bind-mount target looks like once the namespace is unmounted.
        let path = std::env::temp_dir().join(format!("cni-common-netns-{}", std::process::id()));
        std::fs::write(&path, b"").expect("create file");
        let gone = NetNs::open_if_exists(&path).expect("no error");
        let err = NetNs::open(&path).expect_err("not a netns");
        std::fs::remove_file(&path).expect("remove file");
        assert!(gone.is_none());
        assert_eq!(err.code(), Code::InvalidNetns);
        assert!(err.msg().contains("is not a network namespace"), "{err}");
    }

    #[test]
    fn other_namespace_types_are_not_a_netns() {
        let err = NetNs::open("/proc/thread-self/ns/uts").expect_err("uts is not net");
        assert_eq!(err.code(), Code::InvalidNetns);
    }

    #[test]
    fn current_is_same_as_current_and_run_stays_there() {
        netns_tests::skip_unless_root!();
        let ns = NetNs::current().expect("current netns");
        assert!(ns.is_same_as_current().expect("stat"));
        let in_thread = ns.run(|| ns.is_same_as_current()).expect("run");
        assert!(in_thread);
        assert_eq!(ns.run(|| Ok(7)).expect("run"), 7);
    }

    #[test]
    fn run_returns_the_closures_error() {
        netns_tests::skip_unless_root!();
        let ns = NetNs::current().expect("current netns");
        let err = ns
            .run(|| -> Result<()> { Err(Error::invalid_config("boom")) })
            .expect_err("closure failed");
        assert_eq!(err.code(), Code::InvalidConfig);
        assert_eq!(err.msg(), "boom");
    }
}
