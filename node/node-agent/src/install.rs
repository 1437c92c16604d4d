//! `node-agent install`: puts the plugin binaries into the destination directory.
//!
//! For each plugin: a destination with the same sha256 is left alone (nothing is written);
//! otherwise the new binary is written next to it as `.<name>.cni-installer.tmp`, fsynced,
//! made 0755, run with CNI_COMMAND=VERSION, named as pending in the record, renamed over the
//! target, and run again from there; then the record lists it and no longer as pending.
//! A file we did not install (its sha256 neither the recorded nor the pending one, or a
//! symlink) is "foreign" and is only replaced with `--replace-foreign`, which keeps it as
//! `.<name>.orig` for uninstall. Every plugin is inspected before anything is written, so a
//! refusal writes nothing.
//!
//! `plugins` says what is to be installed, `decision` what to do with each, `foreign` refuses
//! or keeps what another installer put there, `entry` records what is in place, `node_policy`
//! writes the node's policy, and `report` tells what was done.

mod decision;
mod entry;
mod foreign;
mod node_policy;
mod plugins;
mod report;

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use cni_common::node_policy::PolicyFile;
use tracing::info_span;

use crate::atomic::{self, Temp};
use crate::digest::{self, short};
use crate::error::{Context, Error, Result};
use crate::record::{Record, MODE};
use crate::verify;
use agent_runtime::lock::DirLock;

pub use decision::{decide, inspect, Decision, Existing};
pub use plugins::{check_name, Plugin};
pub use report::{Action, Outcome, Report};

use entry::update_entry;
use foreign::{keep_original, refuse_foreign};
use node_policy::write_node_policy;
use plugins::plugin_list;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Where the image keeps the binaries.
    pub from: PathBuf,
    /// The node's CNI binary directory.
    pub to: PathBuf,
    /// None: every file in `from`, each under its own name.
    pub plugins: Option<Vec<Plugin>>,
    pub replace_foreign: bool,
    /// What the node allows network configs to name beyond the defaults, written beside the
    /// plugins as their `node-policy.json`; None leaves any file there as it is.
    pub node_policy: Option<PolicyFile>,
}

/// One plugin, inspected.
struct Planned {
    name: String,
    source_name: String,
    source: PathBuf,
    source_sha256: String,
    decision: Decision,
}

/// Installs the plugins (see the module's description) and logs what was done.
pub fn install(opts: &Options) -> Result<Report> {
    let _round = info_span!("install", to = %opts.to.display()).entered();
    let report = install_plugins(opts)?;
    report.log();
    Ok(report)
}

fn install_plugins(opts: &Options) -> Result<Report> {
    let plugins = plugin_list(opts)?;
    let to = opts.to.as_path();
    if !to.is_dir() {
        fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    }
    let _lock = DirLock::acquire(to)?;
    let mut report = Report {
        swept: atomic::sweep_temps(to)?,
        ..Report::default()
    };
    let old_record = Record::load(to)?;
    let mut record = old_record.clone();

    let planned = plan(opts, plugins, &record)?;
    refuse_foreign(to, &planned)?;

    // What was installed before a failure is recorded all the same.
    let applied = apply(to, planned, &mut record, &mut report);
    if record != old_record {
        record.save(to)?;
        report.record_written = true;
    }
    applied?;
    if let Some(policy) = &opts.node_policy {
        write_node_policy(to, policy)?;
    }
    Ok(report)
}

/// Inspects every plugin and decides what to do with it; writes nothing.
fn plan(opts: &Options, plugins: Vec<Plugin>, record: &Record) -> Result<Vec<Planned>> {
    let mut planned = Vec::with_capacity(plugins.len());
    for Plugin {
        name,
        source: source_name,
    } in plugins
    {
        let source = opts.from.join(&source_name);
        let source_sha256 = source_digest(&source)?;
        let existing = inspect(&opts.to.join(&name))?;
        let decision = decide(
            &existing,
            &source_sha256,
            record.plugins.get(&name),
            record.pending.get(&name).map(String::as_str),
            opts.replace_foreign,
        );
        planned.push(Planned {
            name,
            source_name,
            source,
            source_sha256,
            decision,
        });
    }
    Ok(planned)
}

/// Carries out the decisions, recording each plugin as it is done.
fn apply(to: &Path, planned: Vec<Planned>, record: &mut Record, report: &mut Report) -> Result<()> {
    for plan in planned {
        let name = plan.name;
        let action = match plan.decision {
            Decision::Keep(action) => action,
            Decision::Write(action) => {
                write_plugin(to, &name, &plan.source, &plan.source_sha256, action, record)
                    .with_context(|| format!("installing {name}"))?
            }
            // refuse_foreign returned early for these.
            Decision::Refuse(why) | Decision::Impossible(why) => {
                return Err(Error::msg(format!("{name}: {why}")))
            }
        };
        // The name itself answers, whether it was just written or already there.
        let version =
            verify::version(&to.join(&name)).with_context(|| format!("checking {name}"))?;
        let outcome = Outcome {
            name,
            source: plan.source_name,
            action,
            sha256: plan.source_sha256,
            version,
        };
        update_entry(record, to, &outcome)?;
        // Recorded now (or found in place): no longer pending. A pending sha256 stays after a
        // failure above, as the binary it names may be in place.
        record.pending.remove(&outcome.name);
        report.plugins.push(outcome);
    }
    Ok(())
}

fn source_digest(source: &Path) -> Result<String> {
    let meta = fs::metadata(source).with_context(|| format!("source {}", source.display()))?;
    if !meta.is_file() {
        return Err(Error::msg(format!(
            "source {} is not a regular file",
            source.display()
        )));
    }
    digest::sha256_file(source)
}

/// Writes one binary: temporary file, checks, keep the original, the record naming it as
/// pending, rename, fsync.
fn write_plugin(
    to: &Path,
    name: &str,
    source: &Path,
    source_sha256: &str,
    action: Action,
    record: &mut Record,
) -> Result<Action> {
    let mut temp = Temp::create(to, name)?;
    let mut from = File::open(source).with_context(|| format!("opening {}", source.display()))?;
    let temp_path = temp.path().to_path_buf();
    // File to file, std copies inside the kernel (copy_file_range) where it can.
    io::copy(&mut from, temp.file()?)
        .with_context(|| format!("copying {} to {}", source.display(), temp_path.display()))?;
    temp.finish(MODE)?;
    // What is on disk, read back, and whether it runs, before it replaces anything.
    let written = digest::sha256_file(temp.path())?;
    if written != source_sha256 {
        return Err(Error::msg(format!(
            "{} holds sha256 {}, not the source's {} (did {} change meanwhile?)",
            temp_path.display(),
            short(&written),
            short(source_sha256),
            source.display()
        )));
    }
    verify::version(temp.path())?;

    let action = match action {
        Action::ReplacedForeign { .. } => {
            let kept = keep_original(to, name, record.plugins.get(name))?;
            Action::ReplacedForeign { kept_as: kept }
        }
        other => other,
    };
    // Should we be killed after the rename but before the record lists the new binary, the
    // next install must still know it as ours, whichever source it installs.
    if record.pending.get(name).map(String::as_str) != Some(source_sha256) {
        record
            .pending
            .insert(name.to_string(), source_sha256.to_string());
        record.save(to)?;
    }
    temp.commit(MODE)?;
    Ok(action)
}
