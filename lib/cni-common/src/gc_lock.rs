//! ADDs and the node agent's garbage collection exclude each other.
//!
//! The node agent decides which attachments are alive from the runtime's sandboxes and the API's
//! pods, then runs each plugin's GC with that list. An ADD that ran in between would make an
//! attachment the list does not know, and GC would remove it under a starting pod. So every
//! ADD holds a shared lock on one file of the node for its whole run, and the agent holds it
//! exclusively from before it lists anything until the last GC has run: an ADD waits for a
//! collection, and a collection for the ADDs already running.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

use crate::error::{Code, Error, Result};

/// The lock file.
pub const GC_LOCK_FILE: &str = "/run/cni/gc.lock";
/// Names another lock file (the runtime's environment, for tests; never a network config).
pub const GC_LOCK_ENV: &str = "CNI_GC_LOCK";
/// How long an ADD waits for a collection to finish; one takes milliseconds.
pub const ADD_WAIT: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(5);

/// Where the lock is on this node.
pub fn lock_file() -> PathBuf {
    match std::env::var_os(GC_LOCK_ENV) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from(GC_LOCK_FILE),
    }
}

/// Held by an ADD until it is dropped.
#[derive(Debug)]
pub struct AddGuard {
    _lock: Option<Flock<File>>,
}

/// Takes the shared lock for an ADD, waiting up to [`ADD_WAIT`] for a collection to end (code
/// 11, try again later, after that). Where the lock file cannot be made at all no agent can
/// hold it either, so the ADD goes on without it and says so.
pub fn for_add() -> Result<AddGuard> {
    let path = lock_file();
    let file = match open(&path) {
        Ok(file) => file,
        Err(e) => {
            tracing::warn!(
                "cannot open {}: {e}; going on without excluding garbage collection",
                path.display()
            );
            return Ok(AddGuard { _lock: None });
        }
    };
    match lock(file, FlockArg::LockSharedNonblock, ADD_WAIT) {
        Ok(lock) => Ok(AddGuard { _lock: Some(lock) }),
        Err(e) => Err(Error::new(
            Code::TryAgainLater,
            format!(
                "the node agent's garbage collection holds {} ({e}); try again",
                path.display()
            ),
        )),
    }
}

/// The lock a collection holds while it lists and collects: taken once the ADDs running have
/// ended, within `wait`.
pub fn exclusive(path: &Path, wait: Duration) -> io::Result<Flock<File>> {
    lock(open(path)?, FlockArg::LockExclusiveNonblock, wait)
}

fn open(path: &Path) -> io::Result<File> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
}

/// Polls a non-blocking flock: a blocking one could not be given up on after `wait`.
fn lock(mut file: File, arg: FlockArg, wait: Duration) -> io::Result<Flock<File>> {
    let until = Instant::now() + wait;
    loop {
        match Flock::lock(file, arg) {
            Ok(lock) => return Ok(lock),
            Err((back, Errno::EWOULDBLOCK)) if Instant::now() < until => {
                file = back;
                std::thread::sleep(POLL);
            }
            Err((_, Errno::EWOULDBLOCK)) => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("still held after {wait:?}"),
                ))
            }
            Err((_, errno)) => return Err(errno.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_share_the_lock_and_a_collection_waits_for_them() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("run/cni/gc.lock");
        let a = lock(
            open(&path).expect("open"),
            FlockArg::LockSharedNonblock,
            ADD_WAIT,
        );
        let b = lock(
            open(&path).expect("open"),
            FlockArg::LockSharedNonblock,
            ADD_WAIT,
        );
        assert!(a.is_ok() && b.is_ok(), "two ADDs at once");
        let e = exclusive(&path, Duration::from_millis(50)).expect_err("ADDs running");
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        drop((a, b));
        exclusive(&path, Duration::from_millis(50)).expect("no ADD left");
    }

    #[test]
    fn an_add_waits_for_a_collection_and_gives_up_after_its_wait() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("gc.lock");
        let held = exclusive(&path, Duration::ZERO).expect("collection");
        let started = Instant::now();
        let e = lock(
            open(&path).expect("open"),
            FlockArg::LockSharedNonblock,
            Duration::from_millis(100),
        )
        .expect_err("collection running");
        assert!(started.elapsed() >= Duration::from_millis(100));
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        drop(held);
        lock(
            open(&path).expect("open"),
            FlockArg::LockSharedNonblock,
            ADD_WAIT,
        )
        .expect("free");
    }
}
