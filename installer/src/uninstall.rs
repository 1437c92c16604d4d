//! `cni-installer uninstall`: removes what we installed, and only that. A file whose sha256
//! is no longer the one in the record was changed by someone else and stays; a kept original
//! (`.<name>.orig`) is renamed back over ours, so the name never goes missing in between.

use std::fs;
use std::path::{Path, PathBuf};

use crate::atomic;
use crate::error::{Context, Result};
use crate::install::{check_name, inspect, Existing};
use crate::lock::DirLock;
use crate::record::Record;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub to: PathBuf,
    /// None: everything in the record.
    pub plugins: Option<Vec<String>>,
}

/// What was done for one plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Removed,
    /// The kept original was put back.
    Restored {
        original: String,
    },
    /// Not ours any more (changed since we installed it): left as it is, and so is a kept
    /// original.
    KeptChanged {
        now: String,
        original_left: Option<String>,
    },
    /// Already gone.
    Missing,
    /// Not in the record: never ours.
    NotOurs,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub swept: Vec<String>,
    pub plugins: Vec<(String, Action)>,
}

pub fn uninstall(opts: &Options) -> Result<Report> {
    let to = opts.to.as_path();
    let mut report = Report::default();
    if !to.is_dir() {
        return Ok(report);
    }
    let _lock = DirLock::acquire(to)?;
    report.swept = atomic::sweep_temps(to)?;
    let old_record = Record::load(to)?;
    let mut record = old_record.clone();
    let names: Vec<String> = match &opts.plugins {
        Some(names) => names.clone(),
        None => record.plugins.keys().cloned().collect(),
    };
    for name in names {
        check_name(&name)?;
        let Some(entry) = record.plugins.remove(&name) else {
            report.plugins.push((name, Action::NotOurs));
            continue;
        };
        let target = to.join(&name);
        let original = entry
            .original
            .as_deref()
            .map(|o| to.join(o))
            .filter(|o| fs::symlink_metadata(o).is_ok());
        let action = match inspect(&target)? {
            Existing::Regular { sha256, .. } if sha256 == entry.sha256 => {
                match put_back(&target, original.as_deref())? {
                    Some(original) => Action::Restored { original },
                    None => Action::Removed,
                }
            }
            Existing::Missing => match put_back(&target, original.as_deref())? {
                Some(original) => Action::Restored { original },
                None => Action::Missing,
            },
            Existing::Regular { sha256, .. } => Action::KeptChanged {
                now: format!("sha256 {sha256}"),
                original_left: entry.original.clone().filter(|_| original.is_some()),
            },
            Existing::Symlink { target } => Action::KeptChanged {
                now: format!("a symlink to {target}"),
                original_left: entry.original.clone().filter(|_| original.is_some()),
            },
            Existing::Other { kind } => Action::KeptChanged {
                now: format!("a {kind}"),
                original_left: entry.original.clone().filter(|_| original.is_some()),
            },
        };
        report.plugins.push((name, action));
    }
    if record != old_record {
        // The removals and renames first, then the record that no longer lists them.
        atomic::fsync_dir(to)?;
        record.save(to)?;
    }
    Ok(report)
}

/// Renames the kept original over `target`, or removes `target` when there is none.
fn put_back(target: &Path, original: Option<&Path>) -> Result<Option<String>> {
    match original {
        Some(original) => {
            fs::rename(original, target).with_context(|| {
                format!(
                    "renaming {} back to {}",
                    original.display(),
                    target.display()
                )
            })?;
            Ok(Some(
                original
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            ))
        }
        None => {
            atomic::remove_if_exists(target)?;
            Ok(None)
        }
    }
}
