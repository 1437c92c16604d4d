//! Replacing files so that a reader (or the kernel exec'ing them) sees the old file or the new
//! one, never a mix: write a temporary file in the same directory, fsync it, set its mode, rename
//! it over the target, fsync the directory. rename(2) never writes into the inode a running
//! process holds, so it cannot fail with ETXTBSY, and a crash at any point leaves the old file or
//! the new one. Temporary files have fixed names, `.<name>.cni-installer.tmp`, so a crash leaves
//! at most one per target, and [`sweep_temps`] removes them on the next start.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Context, Error, Result};

/// Keeps the agent's earlier name: the temporary files a killed install of the previous release
/// left are ours to sweep.
const TEMP_SUFFIX: &str = ".cni-installer.tmp";

/// `.<name>.cni-installer.tmp`: where the next version of `<name>` is written.
pub fn temp_name(name: &str) -> String {
    format!(".{name}{TEMP_SUFFIX}")
}

/// Whether `name` is one of our temporary files.
pub fn is_temp_name(name: &str) -> bool {
    name.len() > TEMP_SUFFIX.len() + 1 && name.starts_with('.') && name.ends_with(TEMP_SUFFIX)
}

/// Removes every `.*.cni-installer.tmp` in `dir` (left by an install that was killed) and returns
/// their names. When there is none, nothing is written.
pub fn sweep_temps(dir: &Path) -> Result<Vec<String>> {
    let mut swept = Vec::new();
    let listing = || format!("listing {}", dir.display());
    for entry in fs::read_dir(dir).with_context(listing)? {
        let entry = entry.with_context(listing)?;
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if is_temp_name(&name) {
            remove_if_exists(&dir.join(&name))?;
            swept.push(name);
        }
    }
    if !swept.is_empty() {
        fsync_dir(dir)?;
    }
    swept.sort();
    Ok(swept)
}

/// fsync of a directory: makes the renames and unlinks in it durable.
pub fn fsync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("fsync of directory {}", dir.display()))
}

pub fn remove_if_exists(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        removed => removed.with_context(|| format!("removing {}", path.display())),
    }
}

/// A temporary file being written in the target's directory. Dropped without [`Temp::commit`],
/// it is removed.
pub struct Temp {
    file: Option<File>,
    path: PathBuf,
    target: PathBuf,
    committed: bool,
}

impl Temp {
    /// Creates `.<name>.cni-installer.tmp` next to `dir/<name>`, exclusively (O_EXCL, no symlink
    /// followed) and private (0600) until it is complete. A leftover of that name is removed
    /// first: the caller holds the directory lock, so nobody else is writing it.
    pub fn create(dir: &Path, name: &str) -> Result<Temp> {
        let path = dir.join(temp_name(name));
        remove_if_exists(&path)?;
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .with_context(|| format!("creating {}", path.display()))?;
        Ok(Temp {
            file: Some(file),
            path,
            target: dir.join(name),
            committed: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file to write into.
    pub fn file(&mut self) -> Result<&mut File> {
        let path = &self.path;
        self.file
            .as_mut()
            .ok_or_else(|| Error::msg(format!("{} is already closed", path.display())))
    }

    /// fsync, then fchmod to `mode` (so the file is never visible under its final name without
    /// it), then close. The file stays under its temporary name.
    pub fn finish(&mut self, mode: u32) -> Result<()> {
        let path = self.path.as_path();
        if let Some(mut file) = self.file.take() {
            file.flush()
                .with_context(|| format!("writing {}", path.display()))?;
            file.sync_all()
                .with_context(|| format!("fsync of {}", path.display()))?;
            file.set_permissions(fs::Permissions::from_mode(mode))
                .with_context(|| format!("chmod {mode:o} {}", path.display()))?;
        }
        Ok(())
    }

    /// Renames the finished file over the target and fsyncs the directory.
    pub fn commit(mut self, mode: u32) -> Result<()> {
        self.finish(mode)?;
        fs::rename(&self.path, &self.target).with_context(|| {
            format!(
                "renaming {} to {}",
                self.path.display(),
                self.target.display()
            )
        })?;
        self.committed = true;
        match self.target.parent() {
            Some(dir) => fsync_dir(dir),
            None => Ok(()),
        }
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if !self.committed {
            drop(self.file.take());
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Replaces `dir/<name>` with `bytes` atomically (see the module's description).
pub fn write_atomically(dir: &Path, name: &str, bytes: &[u8], mode: u32) -> Result<()> {
    let mut temp = Temp::create(dir, name)?;
    let path = temp.path().to_path_buf();
    temp.file()?
        .write_all(bytes)
        .with_context(|| format!("writing {}", path.display()))?;
    temp.commit(mode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names_are_recognised_and_nothing_else() {
        assert_eq!(temp_name("bridge"), ".bridge.cni-installer.tmp");
        assert!(is_temp_name(".bridge.cni-installer.tmp"));
        assert!(is_temp_name(&temp_name("cni-installer.json")));
        for other in [
            "bridge",
            ".bridge.orig",
            ".cni-installer.tmp",
            "bridge.cni-installer.tmp",
            ".cni-installer.json",
        ] {
            assert!(!is_temp_name(other), "{other}");
        }
    }
}
