//! An exclusive flock(2) on a directory itself: the node agent holds its destination directory
//! while installing or uninstalling (several DaemonSets may install into the same directory and
//! share its record), and the nmstate handler its state directory while it applies. Locking
//! the directory creates no file, and the kernel releases the lock when the process dies, even
//! by SIGKILL.

use std::fs::File;
use std::path::Path;

use nix::fcntl::{Flock, FlockArg};

use crate::error::{Error, Result};

pub struct DirLock {
    _lock: Flock<File>,
}

impl DirLock {
    /// Blocks until the lock on `dir` is ours.
    pub fn acquire(dir: &Path) -> Result<DirLock> {
        let file = File::open(dir).map_err(|e| Error::io("opening", dir, e))?;
        let lock = Flock::lock(file, FlockArg::LockExclusive)
            .map_err(|(_, errno)| Error::io("locking", dir, errno.into()))?;
        Ok(DirLock { _lock: lock })
    }
}
