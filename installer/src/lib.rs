//! The DaemonSet side of the plugins: `cni-installer` puts the binaries on the node without
//! ever exposing a half-written or missing file, never overwrites files it did not install,
//! reports readiness, and (optionally) publishes the node's bridges as extended resources.

pub mod atomic;
pub mod bridges;
pub mod cli;
pub mod digest;
pub mod error;
pub mod install;
pub mod lock;
pub mod marker;
pub mod node;
pub mod probe;
pub mod record;
pub mod run;
pub mod uninstall;
pub mod verify;

pub use error::{Error, Result};

/// One line per plugin on `log`.
pub fn print_install_report(report: &install::Report, log: &dyn Fn(&str)) {
    use install::Action;
    for name in &report.swept {
        log(&format!("removed {name}, left by an interrupted install"));
    }
    for p in &report.plugins {
        let what = match &p.action {
            Action::Unchanged => "unchanged".to_string(),
            Action::Adopted => "already in place, now recorded".to_string(),
            Action::Installed => "installed".to_string(),
            Action::Upgraded { from } => format!("upgraded from sha256 {}", digest::short(from)),
            Action::ModeRepaired => "rewritten with mode 0755".to_string(),
            Action::ReplacedForeign {
                kept_as: Some(kept),
            } => {
                format!("replaced a foreign file, kept as {kept}")
            }
            Action::ReplacedForeign { kept_as: None } => {
                "replaced a foreign file (the original kept earlier stays)".to_string()
            }
        };
        let from = if p.source == p.name {
            String::new()
        } else {
            format!(", a copy of {}", p.source)
        };
        log(&format!(
            "{}: {what} (sha256 {}, cniVersion {}{from})",
            p.name,
            digest::short(&p.sha256),
            p.version.cni_version,
        ));
    }
}
