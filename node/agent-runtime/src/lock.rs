//! An exclusive flock(2) on a directory itself: the node agent holds its destination directory
//! while installing or uninstalling (several DaemonSets may install into the same directory and
//! share its record), and the nmstate handler its state directory while it applies. Locking
//! the directory creates no file, and the kernel releases the lock when the process dies, even
//! by SIGKILL.

use std::fs::File;
use std::io;
use std::path::Path;

use nix::fcntl::{Flock, FlockArg};

use crate::error::{Context, Result};

pub struct DirLock {
    _lock: Flock<File>,
}

impl DirLock {
    /// Blocks until the lock on `dir` is ours.
    pub fn acquire(dir: &Path) -> Result<DirLock> {
        let file = File::open(dir).with_context(|| format!("opening {}", dir.display()))?;
        let lock = Flock::lock(file, FlockArg::LockExclusive)
            // A failed lock hands the file back beside the errno.
            .map_err(|(_, errno)| io::Error::from(errno))
            .with_context(|| format!("locking {}", dir.display()))?;
        Ok(DirLock { _lock: lock })
    }
}
