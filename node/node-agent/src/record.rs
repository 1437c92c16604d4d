//! `<dir>/.cni-installer.json`: what we installed in a directory, so that we never overwrite or
//! remove a file we did not put there. Written with the same temp + fsync + rename as the
//! binaries: once before a binary is renamed into place, to name it as pending, and again after
//! it, to record it.
//!
//! ```json
//! {"plugins": {"bridge": {"sha256": "…", "cniVersion": "1.1.0",
//!   "supportedVersions": ["0.1.0", …], "installedAt": "2026-05-01T12:00:00Z",
//!   "original": ".bridge.orig", "originalSha256": "…"}},
//!  "pending": {"tuning": "…"}}
//! ```

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::atomic;
use crate::error::{Context, Result};

/// The record's file name in the destination directory. It keeps the agent's earlier name: it is
/// node state, and a node upgraded in place must still find what the previous release installed.
pub const RECORD_FILE: &str = ".cni-installer.json";

/// Binaries and the record are installed with this mode.
pub const MODE: u32 = 0o755;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    #[serde(default)]
    pub plugins: BTreeMap<String, Entry>,
    /// Per plugin, the sha256 of a binary about to be renamed over its name: written before
    /// the rename and cleared once the plugin is recorded. An install killed in between
    /// leaves it here, so that the next install still knows that binary as ours.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pending: BTreeMap<String, String>,
}

/// One binary we installed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// sha256 of the file as we installed it: a file with another hash is no longer ours.
    pub sha256: String,
    /// What the binary answered to CNI_COMMAND=VERSION.
    pub cni_version: String,
    #[serde(default)]
    pub supported_versions: Vec<String>,
    /// RFC 3339, UTC.
    pub installed_at: String,
    /// The file that was there before (`--replace-foreign`), kept under this name in the same
    /// directory, for uninstall to put back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original: Option<String>,
    /// Its sha256 when it was a regular file (none for a symlink).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_sha256: Option<String>,
}

/// `.<name>.orig`: where the file we replaced is kept.
pub fn original_name(name: &str) -> String {
    format!(".{name}.orig")
}

impl Record {
    /// Reads `<dir>/.cni-installer.json`; an empty record when there is none. A record that
    /// cannot be read is an error: without it every file would look foreign.
    pub fn load(dir: &Path) -> Result<Record> {
        let path = dir.join(RECORD_FILE);
        let bytes = match fs::read(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Record::default()),
            read => read.with_context(|| format!("reading {}", path.display()))?,
        };
        serde_json::from_slice(&bytes).with_context(|| {
            format!(
                "{} is not a record of node-agent (move it away to start afresh)",
                path.display()
            )
        })
    }

    /// Whether a file at `name` with `sha256` is ours: the sha256 recorded for it, or the one
    /// pending for it.
    pub fn is_ours(&self, name: &str, sha256: &str) -> bool {
        self.plugins.get(name).is_some_and(|e| e.sha256 == sha256)
            || self.pending.get(name).is_some_and(|p| p == sha256)
    }

    /// Whether the record lists nothing at all.
    pub fn is_empty(&self) -> bool {
        self.plugins.is_empty() && self.pending.is_empty()
    }

    /// Writes the record atomically; an empty record removes the file.
    pub fn save(&self, dir: &Path) -> Result<()> {
        if self.is_empty() {
            atomic::remove_if_exists(&dir.join(RECORD_FILE))?;
            return atomic::fsync_dir(dir);
        }
        // Maps with string keys and strings: encoding cannot fail.
        let mut bytes = serde_json::to_vec_pretty(self).context("encoding the record")?;
        bytes.push(b'\n');
        atomic::write_atomically(dir, RECORD_FILE, &bytes, 0o644)
    }
}

/// Now as RFC 3339 UTC, to the second.
pub fn now_rfc3339() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339(secs)
}

/// Seconds since the epoch as `YYYY-MM-DDThh:mm:ssZ`.
pub fn rfc3339(secs: u64) -> String {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01, counted in 400-year eras of 146097 days
/// whose years start on March 1st (so the leap day comes last).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468; // days since 0000-03-01
    let era = z / 146_097;
    let doe = z % 146_097; // day of the era, 0..=146096
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // year of the era
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of the (March-based) year
    let mp = (5 * doy + 2) / 153; // month, March = 0
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_match_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_709_251_199), "2024-02-29T23:59:59Z");
        assert_eq!(rfc3339(4_102_444_800), "2100-01-01T00:00:00Z");
    }

    #[test]
    fn record_round_trips_and_omits_absent_originals() {
        let mut record = Record::default();
        record.plugins.insert(
            "bridge".to_string(),
            Entry {
                sha256: "ab".to_string(),
                cni_version: "1.1.0".to_string(),
                supported_versions: vec!["1.0.0".to_string(), "1.1.0".to_string()],
                installed_at: rfc3339(0),
                original: None,
                original_sha256: None,
            },
        );
        let text = serde_json::to_string(&record).expect("encode");
        assert!(!text.contains("original"), "{text}");
        assert!(!text.contains("pending"), "{text}");
        assert!(text.contains("\"cniVersion\":\"1.1.0\""), "{text}");
        let back: Record = serde_json::from_str(&text).expect("decode");
        assert_eq!(back, record);

        record
            .pending
            .insert("tuning".to_string(), "cd".to_string());
        let text = serde_json::to_string(&record).expect("encode");
        assert!(text.contains("\"pending\":{\"tuning\":\"cd\"}"), "{text}");
        let back: Record = serde_json::from_str(&text).expect("decode");
        assert_eq!(back, record);
        assert!(back.is_ours("bridge", "ab") && back.is_ours("tuning", "cd"));
        assert!(!back.is_ours("bridge", "cd") && !back.is_ours("tuning", "ab"));
    }
}
