//! Temporary directories that go away with the test.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::names::{clean_tag, NAME_PREFIX};

/// A directory under the system temp dir, removed recursively on drop. A thin layer over
/// [`tempfile::TempDir`] that names the directory after the test and writes JSON configs.
#[derive(Debug)]
pub struct TempDir {
    dir: tempfile::TempDir,
}

impl TempDir {
    /// Creates `$TMPDIR/cnit-<tag>-<random>`.
    ///
    /// # Panics
    /// If the directory cannot be created.
    pub fn new(tag: &str) -> TempDir {
        TempDir::new_in(&std::env::temp_dir(), tag)
    }

    /// Creates `<parent>/cnit-<tag>-<random>`: for a directory the tests' node policy does not
    /// allow, which all of the system temp dir is.
    ///
    /// # Panics
    /// If the directory cannot be created.
    pub fn new_in(parent: &Path, tag: &str) -> TempDir {
        let prefix = format!("{NAME_PREFIX}-{}-", clean_tag(tag));
        let dir = tempfile::Builder::new()
            .prefix(&prefix)
            .tempdir_in(parent)
            .unwrap_or_else(|e| {
                panic!(
                    "cannot create a temporary directory {}/{prefix}*: {e}",
                    parent.display()
                )
            });
        TempDir { dir }
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `self.path().join(rel)`.
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Writes `value` as pretty JSON to `<dir>/<file>` and returns the path.
    ///
    /// # Panics
    /// If the file cannot be written.
    pub fn write_json(&self, file: &str, value: &Value) -> PathBuf {
        let path = self.join(file);
        let text = serde_json::to_string_pretty(value).expect("a JSON value always serializes");
        std::fs::write(&path, text)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_named_after_the_tag_and_removed_on_drop() {
        let dir = TempDir::new("Some Tag");
        let path = dir.path().to_path_buf();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        assert!(name.starts_with("cnit-some-tag-"), "{name}");
        dir.write_json("x.json", &serde_json::json!({"a": 1}));
        assert!(path.join("x.json").is_file());
        drop(dir);
        assert!(!path.exists());
    }
}
