//! What the record says of a plugin once it is in place: its sha256 and versions, when it was
//! written, and the original kept for it, if any.

use std::fs;
use std::path::Path;

use super::{inspect, Action, Existing, Outcome};
use crate::error::Result;
use crate::record::{self, Entry, Record};

/// Records what is now at the target.
pub(super) fn update_entry(record: &mut Record, to: &Path, outcome: &Outcome) -> Result<()> {
    let old = record.plugins.get(&outcome.name);
    if outcome.action == Action::Unchanged {
        if let Some(old) = old {
            if old.original.is_some() || !orig_exists(to, &outcome.name) {
                return Ok(());
            }
        }
    }
    let (mut original, mut original_sha256) = old
        .map(|e| (e.original.clone(), e.original_sha256.clone()))
        .unwrap_or_default();
    if let Action::ReplacedForeign {
        kept_as: Some(kept),
    } = &outcome.action
    {
        original = Some(kept.clone());
        original_sha256 = None;
    }
    // A `.orig` the record does not know of was kept by an install killed before its record.
    if original.is_none() && orig_exists(to, &outcome.name) {
        original = Some(record::original_name(&outcome.name));
    }
    if original.is_some() && original_sha256.is_none() {
        original_sha256 = original_digest(to, &outcome.name)?;
    }
    let unchanged_entry = old.filter(|e| e.sha256 == outcome.sha256);
    let entry = Entry {
        sha256: outcome.sha256.clone(),
        cni_version: outcome.version.cni_version.clone(),
        supported_versions: outcome.version.supported_versions.clone(),
        installed_at: match (unchanged_entry, outcome.action.wrote_binary()) {
            (Some(e), false) => e.installed_at.clone(),
            _ => record::now_rfc3339(),
        },
        original,
        original_sha256,
    };
    record.plugins.insert(outcome.name.clone(), entry);
    Ok(())
}

fn orig_exists(to: &Path, name: &str) -> bool {
    fs::symlink_metadata(to.join(record::original_name(name))).is_ok()
}

/// sha256 of the kept original when it is a regular file.
fn original_digest(to: &Path, name: &str) -> Result<Option<String>> {
    match inspect(&to.join(record::original_name(name)))? {
        Existing::Regular { sha256, .. } => Ok(Some(sha256)),
        _ => Ok(None),
    }
}
