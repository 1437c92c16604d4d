//! The two ways the agent reads a conf directory's files, as libcni does: which files are
//! configs, and one file's JSON object. The conf dir and a conflist's subdirectory both read
//! through them.

use std::fs::OpenOptions;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::{Context, Error, Result};

/// libcni's `ConfFiles`, sorted as containerd sorts them: the entries of `dir` whose name ends
/// in one of `extensions` after its last dot, directories left out.
pub(super) fn conf_files(dir: &Path, extensions: &[&str]) -> io::Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            continue;
        }
        let name = entry.file_name();
        let name = name.as_bytes();
        let extension = name
            .iter()
            .rposition(|&b| b == b'.')
            .map(|dot| &name[dot..]);
        if extension.is_some_and(|ext| extensions.iter().any(|e| e.as_bytes() == ext)) {
            files.push(entry.path());
        }
    }
    files.sort_by(|a, b| a.as_os_str().as_bytes().cmp(b.as_os_str().as_bytes()));
    Ok(files)
}

/// A regular file's JSON object. Opened without blocking: a FIFO left in the directory would
/// otherwise hold the agent until someone writes to it.
pub(super) fn read_object(file: &Path) -> Result<Map<String, Value>> {
    let mut handle = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(file)?;
    if !handle.metadata()?.is_file() {
        return Err(Error::msg("not a regular file"));
    }
    let mut text = Vec::new();
    handle.read_to_end(&mut text)?;
    match serde_json::from_slice(&text).context("not JSON")? {
        Value::Object(object) => Ok(object),
        _ => Err(Error::msg("not a JSON object")),
    }
}
