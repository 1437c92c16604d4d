//! `node-agent probe`: the readiness check (an exec probe; the image has no shell). Ready
//! when every plugin asked for is in the record and the file at its name has the recorded
//! sha256. Only reads: hashing a few MB from the page cache costs milliseconds.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::install::{check_name, inspect, Existing};
use crate::record::{Record, RECORD_FILE};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub to: PathBuf,
    /// None: everything in the record.
    pub plugins: Option<Vec<String>>,
}

/// The plugins verified, or why the directory is not ready.
pub fn probe(opts: &Options) -> Result<Vec<String>> {
    let to = opts.to.as_path();
    let record = Record::load(to)?;
    let names: Vec<String> = match &opts.plugins {
        Some(names) => names.clone(),
        None => record.plugins.keys().cloned().collect(),
    };
    if names.is_empty() {
        return Err(Error::msg(format!(
            "nothing installed in {} ({} lists no plugin)",
            to.display(),
            RECORD_FILE
        )));
    }
    for name in &names {
        check_name(name)?;
        check_one(to, name, &record)?;
    }
    Ok(names)
}

fn check_one(to: &Path, name: &str, record: &Record) -> Result<()> {
    let path = to.join(name);
    let Some(entry) = record.plugins.get(name) else {
        return Err(Error::msg(format!(
            "{} was not installed by node-agent",
            path.display()
        )));
    };
    match inspect(&path)? {
        Existing::Regular { sha256, .. } if sha256 == entry.sha256 => Ok(()),
        Existing::Regular { sha256, .. } => Err(Error::msg(format!(
            "{} has sha256 {sha256}, not the installed {}",
            path.display(),
            entry.sha256
        ))),
        Existing::Missing => Err(Error::msg(format!("{} is missing", path.display()))),
        Existing::Symlink { target } => Err(Error::msg(format!(
            "{} is a symlink to {target}, not the installed file",
            path.display()
        ))),
        Existing::Other { kind } => Err(Error::msg(format!("{} is a {kind}", path.display()))),
    }
}
