//! `node-agent uninstall`: removes what we installed, and only that. A file whose sha256
//! is neither the one in the record nor the one pending there (an install stopped between its
//! rename and its record) was changed by someone else and stays; a kept original
//! (`.<name>.orig`) is renamed back over ours, so the name never goes missing in between.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use tracing::{info, info_span};

use crate::atomic;
use crate::error::{Context, Result};
use crate::install::{check_name, inspect, Existing};
use crate::record::{self, Record};
use agent_runtime::lock::DirLock;

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

impl Report {
    /// One line per plugin, and one per temporary file swept.
    pub fn log(&self) {
        for name in &self.swept {
            info!("removed {name}, left by an interrupted install");
        }
        for (name, action) in &self.plugins {
            match action {
                Action::Removed => info!("{name}: removed"),
                Action::Restored { original } => info!("{name}: {original} put back"),
                Action::KeptChanged { now, original_left } => info!(
                    "{name}: kept, changed since it was installed ({now}){}",
                    original_left
                        .as_ref()
                        .map(|o| format!("; {o} left in place"))
                        .unwrap_or_default()
                ),
                Action::Missing => info!("{name}: already gone"),
                Action::NotOurs => info!("{name}: not installed by node-agent, left alone"),
            }
        }
    }
}

/// Removes what the record lists (see the module's description) and logs what was done.
pub fn uninstall(opts: &Options) -> Result<Report> {
    let _round = info_span!("uninstall", to = %opts.to.display()).entered();
    let report = uninstall_plugins(opts)?;
    report.log();
    Ok(report)
}

fn uninstall_plugins(opts: &Options) -> Result<Report> {
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
        None => {
            let all: BTreeSet<&String> =
                record.plugins.keys().chain(record.pending.keys()).collect();
            all.into_iter().cloned().collect()
        }
    };
    for name in names {
        check_name(&name)?;
        if !record.plugins.contains_key(&name) && !record.pending.contains_key(&name) {
            report.plugins.push((name, Action::NotOurs));
            continue;
        }
        let target = to.join(&name);
        let existing = inspect(&target)?;
        let is_ours =
            matches!(&existing, Existing::Regular { sha256, .. } if record.is_ours(&name, sha256));
        let entry = record.plugins.remove(&name);
        let pending = record.pending.remove(&name);
        // The recorded original; with a binary still pending, a `.orig` the record does not
        // know of was kept by the install that was stopped before recording it.
        let kept = entry
            .as_ref()
            .and_then(|e| e.original.clone())
            .or_else(|| pending.as_ref().map(|_| record::original_name(&name)));
        let original = kept
            .as_deref()
            .map(|o| to.join(o))
            .filter(|o| fs::symlink_metadata(o).is_ok());
        let original_left = kept.filter(|_| original.is_some());
        let action = match existing {
            Existing::Regular { .. } if is_ours => match put_back(&target, original.as_deref())? {
                Some(original) => Action::Restored { original },
                None => Action::Removed,
            },
            Existing::Missing => match put_back(&target, original.as_deref())? {
                Some(original) => Action::Restored { original },
                None => Action::Missing,
            },
            Existing::Regular { sha256, .. } => Action::KeptChanged {
                now: format!("sha256 {sha256}"),
                original_left,
            },
            Existing::Symlink { target } => Action::KeptChanged {
                now: format!("a symlink to {target}"),
                original_left,
            },
            Existing::Other { kind } => Action::KeptChanged {
                now: format!("a {kind}"),
                original_left,
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
                format!("renaming {} to {}", original.display(), target.display())
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
