//! The journal: the snapshot of everything an apply will change, written (atomically, synced)
//! before the first change and removed once the change is kept or undone. A journal found at
//! start means a process died mid-apply: [`crate::recover`] puts the node back from it.

use std::path::{Path, PathBuf};

use cni_common::state::StateDir;
use serde::{Deserialize, Serialize};

use crate::error::Context;
use crate::plan::Snapshot;
use crate::Error;

/// The journal format's version; a journal of another version is not guessed at. 2: the
/// snapshot records the routes the apply adds and removes, and what a rollback verifies.
const VERSION: u32 = 2;

#[derive(Debug, Serialize, Deserialize)]
struct Content {
    version: u32,
    snapshot: Snapshot,
}

/// A journal file.
#[derive(Debug, Clone)]
pub(crate) struct Journal {
    path: PathBuf,
}

impl Journal {
    pub(crate) fn at(path: &Path) -> Journal {
        Journal {
            path: path.to_path_buf(),
        }
    }

    /// The context of its failures.
    fn named(&self) -> String {
        format!("journal {}", self.path.display())
    }

    /// Its directory as a state directory (durable writes) and its file name.
    fn parts(&self) -> Result<(StateDir, String), Error> {
        let name = self
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| Error::Journal("not a file path".to_string()))
            .with_context(|| self.named())?;
        let dir = self
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        Ok((StateDir::new(dir), name.to_string()))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn exists(&self) -> bool {
        self.path.exists()
    }

    pub(crate) fn write(&self, snapshot: &Snapshot) -> Result<(), Error> {
        let (dir, name) = self.parts()?;
        let content = Content {
            version: VERSION,
            snapshot: snapshot.clone(),
        };
        dir.write(&name, &content).with_context(|| self.named())
    }

    pub(crate) fn read(&self) -> Result<Option<Snapshot>, Error> {
        let (dir, name) = self.parts()?;
        let Some(raw) = dir
            .read::<serde_json::Value>(&name)
            .with_context(|| self.named())?
        else {
            return Ok(None);
        };
        let version = raw.get("version").and_then(serde_json::Value::as_u64);
        if version != Some(u64::from(VERSION)) {
            return Err(Error::wrap(
                self.named(),
                Error::Journal(format!(
                    "version {version:?} is not {VERSION}: not restored"
                )),
            ));
        }
        let content: Content = serde_json::from_value(raw).with_context(|| self.named())?;
        Ok(Some(content.snapshot))
    }

    pub(crate) fn remove(&self) -> Result<(), Error> {
        let (dir, name) = self.parts()?;
        dir.remove(&name).with_context(|| self.named())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journal_of_another_version_is_not_restored_and_says_why() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("apply.journal");
        std::fs::write(&path, r#"{"version": 1, "snapshot": {}}"#).expect("written");
        let err = Journal::at(&path).read().expect_err("another version");
        assert_eq!(
            error_context::report(&err),
            format!(
                "journal {}: version Some(1) is not 2: not restored",
                path.display()
            )
        );
    }
}
