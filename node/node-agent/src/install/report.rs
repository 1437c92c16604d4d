//! What `install` did: per plugin, the action taken and what now answers under its name; the
//! log lines say the same.

use tracing::info;

use crate::digest::short;
use crate::verify::PluginVersion;

/// What was done for one plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// The destination already is this binary, and the record says so: nothing written.
    Unchanged,
    /// The destination already is this binary but the record did not list it (an install
    /// killed between the rename and the record): only the record is written.
    Adopted,
    /// Written where there was no file.
    Installed,
    /// Our own earlier version (with this sha256, recorded or pending) replaced.
    Upgraded { from: String },
    /// Same bytes, but not mode 0755: rewritten.
    ModeRepaired,
    /// A foreign file replaced (`--replace-foreign`).
    ReplacedForeign {
        /// Where the replaced file is kept; None when an earlier original is kept there already.
        kept_as: Option<String>,
    },
}

impl Action {
    /// Whether the binary was written.
    pub fn wrote_binary(&self) -> bool {
        !matches!(self, Action::Unchanged | Action::Adopted)
    }
}

/// One plugin's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub name: String,
    /// The file in the source directory it was installed from (usually `name`).
    pub source: String,
    pub action: Action,
    pub sha256: String,
    pub version: PluginVersion,
}

/// Everything `install` did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Temporary files of an earlier, interrupted run that were removed.
    pub swept: Vec<String>,
    pub plugins: Vec<Outcome>,
    pub record_written: bool,
}

impl Report {
    /// One line per plugin, and one per temporary file swept.
    pub fn log(&self) {
        for name in &self.swept {
            info!("removed {name}, left by an interrupted install");
        }
        for p in &self.plugins {
            let what = match &p.action {
                Action::Unchanged => "unchanged".to_string(),
                Action::Adopted => "already in place, now recorded".to_string(),
                Action::Installed => "installed".to_string(),
                Action::Upgraded { from } => format!("upgraded from sha256 {}", short(from)),
                Action::ModeRepaired => "rewritten with mode 0755".to_string(),
                Action::ReplacedForeign {
                    kept_as: Some(kept),
                } => format!("replaced a foreign file, kept as {kept}"),
                Action::ReplacedForeign { kept_as: None } => {
                    "replaced a foreign file (the original kept earlier stays)".to_string()
                }
            };
            let from = if p.source == p.name {
                String::new()
            } else {
                format!(", a copy of {}", p.source)
            };
            info!(
                "{}: {what} (sha256 {}, cniVersion {}{from})",
                p.name,
                short(&p.sha256),
                p.version.cni_version,
            );
        }
    }

    /// Whether anything in the destination directory was created, changed or removed.
    pub fn wrote_anything(&self) -> bool {
        self.record_written
            || !self.swept.is_empty()
            || self.plugins.iter().any(|p| p.action.wrote_binary())
    }
}
