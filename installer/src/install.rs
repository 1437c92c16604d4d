//! `cni-installer install`: puts the plugin binaries into the destination directory.
//!
//! For each plugin: a destination with the same sha256 is left alone (nothing is written);
//! otherwise the new binary is written next to it as `.<name>.cni-installer.tmp`, fsynced,
//! made 0755, run with CNI_COMMAND=VERSION, named as pending in the record, renamed over the
//! target, and run again from there; then the record lists it and no longer as pending.
//! A file we did not install (its sha256 neither the recorded nor the pending one, or a
//! symlink) is "foreign" and is only replaced with `--replace-foreign`, which keeps it as
//! `.<name>.orig` for uninstall. Every plugin is inspected before anything is written, so a
//! refusal writes nothing.

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use cni_common::node_policy::{PolicyFile, POLICY_FILE_NAME};
use tracing::{info, info_span};

use crate::atomic::{self, Temp};
use crate::digest::{self, short};
use crate::error::{Error, Result};
use crate::lock::DirLock;
use crate::record::{self, Entry, Record, MODE};
use crate::verify::{self, PluginVersion};

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

/// One binary to install: the name it gets in the destination directory, and the file in the
/// source directory it is a copy of. They differ for the second names some configs use for
/// the same plugin (`cnv-bridge`, a copy of `bridge`); every name is installed, recorded,
/// verified and protected on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plugin {
    pub name: String,
    pub source: String,
}

impl Plugin {
    /// A plugin installed under the name of its source.
    pub fn named(name: &str) -> Plugin {
        Plugin {
            name: name.to_string(),
            source: name.to_string(),
        }
    }

    /// `NAME` or `NAME=SOURCE`; both must be plain file names (see [`check_name`]).
    pub fn parse(s: &str) -> Result<Plugin> {
        let (name, source) = s.split_once('=').unwrap_or((s, s));
        check_name(name)?;
        check_name(source)?;
        Ok(Plugin {
            name: name.to_string(),
            source: source.to_string(),
        })
    }
}

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

/// What is at the destination path now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Existing {
    Missing,
    Symlink {
        target: String,
    },
    Regular {
        sha256: String,
        mode: u32,
    },
    /// A directory, socket, device...: never replaced.
    Other {
        kind: &'static str,
    },
}

/// What to do with one plugin, decided before anything is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Keep(Action),
    Write(Action),
    /// Foreign, and `--replace-foreign` was not given: the reason, for the message.
    Refuse(String),
    /// Cannot be replaced at all.
    Impossible(String),
}

/// The decision for one plugin. `entry` is what the record says we installed there, `pending`
/// the sha256 of a binary an earlier install was renaming there when it was stopped: a file
/// with either sha256 is ours.
pub fn decide(
    existing: &Existing,
    source_sha256: &str,
    entry: Option<&Entry>,
    pending: Option<&str>,
    replace_foreign: bool,
) -> Decision {
    let recorded = entry.map(|e| e.sha256.as_str());
    let ours = |sha256: &str| recorded == Some(sha256) || pending == Some(sha256);
    let foreign = |why: String| {
        if replace_foreign {
            Decision::Write(Action::ReplacedForeign { kept_as: None })
        } else {
            Decision::Refuse(why)
        }
    };
    match existing {
        Existing::Missing => Decision::Write(Action::Installed),
        Existing::Other { kind } => Decision::Impossible(format!("is a {kind}, not a file")),
        Existing::Symlink { target } => foreign(format!("is a symlink to {target}")),
        Existing::Regular { sha256, mode } if sha256 == source_sha256 => {
            if mode & 0o7777 != MODE {
                Decision::Write(Action::ModeRepaired)
            } else if recorded == Some(sha256.as_str()) {
                Decision::Keep(Action::Unchanged)
            } else {
                Decision::Keep(Action::Adopted)
            }
        }
        Existing::Regular { sha256, .. } if ours(sha256) => Decision::Write(Action::Upgraded {
            from: sha256.clone(),
        }),
        Existing::Regular { sha256, .. } => foreign(match recorded {
            Some(_) => format!("has sha256 {sha256}, changed since cni-installer installed it"),
            None => format!("has sha256 {sha256} and was not installed by cni-installer"),
        }),
    }
}

/// Looks at `path` without following a symlink there.
pub fn inspect(path: &Path) -> Result<Existing> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Existing::Missing),
        Err(e) => return Err(Error::io("looking at", path, e)),
    };
    let kind = meta.file_type();
    if kind.is_symlink() {
        let target = fs::read_link(path).map_err(|e| Error::io("reading the symlink", path, e))?;
        return Ok(Existing::Symlink {
            target: target.display().to_string(),
        });
    }
    if !kind.is_file() {
        let kind = if kind.is_dir() {
            "directory"
        } else {
            "special file"
        };
        return Ok(Existing::Other { kind });
    }
    // O_NOFOLLOW: if it became a symlink since, fail rather than hash what it points to.
    let file = open_nofollow(path)?;
    let sha256 = digest::sha256_reader(file).map_err(|e| Error::io("reading", path, e))?;
    Ok(Existing::Regular {
        sha256,
        mode: meta.permissions().mode(),
    })
}

fn open_nofollow(path: &Path) -> Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| Error::io("opening", path, e))
}

/// A plugin name is a plain file name: letters, digits, `.`, `_`, `+`, `-`, not starting with
/// a dot (those are ours: temporary files, kept originals, the record).
pub fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 200
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-'));
    if ok {
        Ok(())
    } else {
        Err(Error::msg(format!(
            "invalid plugin name {name:?}: expected a file name of letters, digits, '.', '_', '+', '-', not starting with '.'"
        )))
    }
}

/// The plugins to install: the ones named, or every file in `from`.
fn plugin_list(opts: &Options) -> Result<Vec<Plugin>> {
    let plugins = match &opts.plugins {
        Some(plugins) => plugins.clone(),
        None => {
            let mut names = Vec::new();
            let listing = |e| Error::io("listing", &opts.from, e);
            for entry in fs::read_dir(&opts.from).map_err(listing)? {
                let entry = entry.map_err(listing)?;
                let name = entry.file_name().to_string_lossy().into_owned();
                // The policy file beside a build's plugins is no plugin.
                if !name.starts_with('.') && name != POLICY_FILE_NAME && entry.path().is_file() {
                    names.push(name);
                }
            }
            names.sort();
            names.iter().map(|n| Plugin::named(n)).collect()
        }
    };
    if plugins.is_empty() {
        return Err(Error::msg(format!(
            "no plugins to install from {}",
            opts.from.display()
        )));
    }
    for (i, plugin) in plugins.iter().enumerate() {
        check_name(&plugin.name)?;
        check_name(&plugin.source)?;
        if plugins[..i].iter().any(|p| p.name == plugin.name) {
            return Err(Error::msg(format!(
                "{} is to be installed twice",
                plugin.name
            )));
        }
    }
    Ok(plugins)
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
        fs::create_dir_all(to).map_err(|e| Error::io("creating", to, e))?;
    }
    let _lock = DirLock::acquire(to)?;
    let mut report = Report {
        swept: atomic::sweep_temps(to)?,
        ..Report::default()
    };
    let old_record = Record::load(to)?;
    let mut record = old_record.clone();

    let mut planned = Vec::with_capacity(plugins.len());
    for Plugin {
        name,
        source: source_name,
    } in plugins
    {
        let source = opts.from.join(&source_name);
        let source_sha256 = source_digest(&source)?;
        let existing = inspect(&to.join(&name))?;
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

/// `node-policy.json`, which the plugins read beside themselves: written whole or not at all,
/// readable by all (it holds no secret), writable by root only.
fn write_node_policy(to: &Path, policy: &PolicyFile) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(policy)
        .map_err(|e| Error::msg(format!("encoding the node policy: {e}")))?;
    bytes.push(b'\n');
    atomic::write_atomically(to, POLICY_FILE_NAME, &bytes, 0o644)?;
    info!(path = %to.join(POLICY_FILE_NAME).display(), "node policy written");
    Ok(())
}

/// Carries out the decisions, recording each plugin as it is done.
fn apply(to: &Path, planned: Vec<Planned>, record: &mut Record, report: &mut Report) -> Result<()> {
    for plan in planned {
        let name = plan.name;
        let action = match plan.decision {
            Decision::Keep(action) => action,
            Decision::Write(action) => {
                write_plugin(to, &name, &plan.source, &plan.source_sha256, action, record)
                    .map_err(|e| Error::wrap(format!("installing {name}"), e))?
            }
            // refuse_foreign returned early for these.
            Decision::Refuse(why) | Decision::Impossible(why) => {
                return Err(Error::msg(format!("{name}: {why}")))
            }
        };
        // The name itself answers, whether it was just written or already there.
        let version = verify::version(&to.join(&name))
            .map_err(|e| Error::wrap(format!("checking {name}"), e))?;
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
    let meta = fs::metadata(source).map_err(|e| Error::io("source", source, e))?;
    if !meta.is_file() {
        return Err(Error::msg(format!(
            "source {} is not a regular file",
            source.display()
        )));
    }
    digest::sha256_file(source)
}

/// Fails, naming every foreign file and the flag, before anything is written.
fn refuse_foreign(to: &Path, planned: &[Planned]) -> Result<()> {
    let mut refused = Vec::new();
    for plan in planned {
        let path = to.join(&plan.name);
        match &plan.decision {
            Decision::Refuse(why) => refused.push(format!(
                "{} {why}; pass --replace-foreign to replace it (it is kept as {} for uninstall to put back)",
                path.display(),
                record::original_name(&plan.name)
            )),
            Decision::Impossible(why) => {
                refused.push(format!("{} {why}; remove it first", path.display()))
            }
            _ => {}
        }
    }
    if refused.is_empty() {
        Ok(())
    } else {
        Err(Error::msg(format!(
            "refusing to replace files cni-installer did not install, nothing was written: {}",
            refused.join("; ")
        )))
    }
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
    let mut from = File::open(source).map_err(|e| Error::io("opening", source, e))?;
    let temp_path = temp.path().to_path_buf();
    // File to file, std copies inside the kernel (copy_file_range) where it can.
    io::copy(&mut from, temp.file()?)
        .map_err(|e| Error::io_pair("copying", source, &temp_path, e))?;
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

/// Hard-links the file about to be replaced to `.<name>.orig` (through a temporary name, so an
/// older `.orig` is replaced atomically). The target stays in place until the rename over it,
/// so runtimes never find it missing. When the record already keeps an original, that one
/// stays: it is what was there before cni-installer came.
fn keep_original(to: &Path, name: &str, entry: Option<&Entry>) -> Result<Option<String>> {
    let orig = record::original_name(name);
    let orig_path = to.join(&orig);
    if entry.and_then(|e| e.original.as_ref()).is_some() && fs::symlink_metadata(&orig_path).is_ok()
    {
        return Ok(None);
    }
    let target = to.join(name);
    let temp = to.join(atomic::temp_name(&format!("{name}.orig")));
    atomic::remove_if_exists(&temp)?;
    // link(2) does not follow a symlink: a symlink is kept as the symlink it is.
    fs::hard_link(&target, &temp).map_err(|e| Error::io_pair("linking", &target, &temp, e))?;
    fs::rename(&temp, &orig_path).map_err(|e| Error::io_pair("renaming", &temp, &orig_path, e))?;
    Ok(Some(orig))
}

/// Records what is now at the target.
fn update_entry(record: &mut Record, to: &Path, outcome: &Outcome) -> Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(sha256: &str) -> Entry {
        Entry {
            sha256: sha256.to_string(),
            cni_version: "1.1.0".to_string(),
            supported_versions: vec!["1.1.0".to_string()],
            installed_at: record::rfc3339(0),
            original: None,
            original_sha256: None,
        }
    }

    fn regular(sha256: &str) -> Existing {
        Existing::Regular {
            sha256: sha256.to_string(),
            mode: 0o100755,
        }
    }

    #[test]
    fn decisions() {
        let link = Existing::Symlink {
            target: "/usr/lib/cni/bridge".to_string(),
        };
        let foreign = Decision::Write(Action::ReplacedForeign { kept_as: None });
        let not_exec = Existing::Regular {
            sha256: "new".to_string(),
            mode: 0o100644,
        };
        let dir = Existing::Other { kind: "directory" };
        // (what is there, what the record says, --replace-foreign, decision)
        let table: Vec<(Existing, Option<Entry>, bool, Decision)> = vec![
            (
                Existing::Missing,
                None,
                false,
                Decision::Write(Action::Installed),
            ),
            (
                Existing::Missing,
                Some(entry("old")),
                false,
                Decision::Write(Action::Installed),
            ),
            (
                regular("new"),
                Some(entry("new")),
                false,
                Decision::Keep(Action::Unchanged),
            ),
            (regular("new"), None, false, Decision::Keep(Action::Adopted)),
            (
                regular("new"),
                Some(entry("old")),
                false,
                Decision::Keep(Action::Adopted),
            ),
            (
                not_exec,
                Some(entry("new")),
                false,
                Decision::Write(Action::ModeRepaired),
            ),
            (
                regular("old"),
                Some(entry("old")),
                false,
                Decision::Write(Action::Upgraded {
                    from: "old".to_string(),
                }),
            ),
            (
                regular("go"),
                None,
                false,
                Decision::Refuse(
                    "has sha256 go and was not installed by cni-installer".to_string(),
                ),
            ),
            (regular("go"), None, true, foreign.clone()),
            (
                regular("edited"),
                Some(entry("old")),
                false,
                Decision::Refuse(
                    "has sha256 edited, changed since cni-installer installed it".to_string(),
                ),
            ),
            (regular("edited"), Some(entry("old")), true, foreign.clone()),
            (
                link.clone(),
                Some(entry("new")),
                false,
                Decision::Refuse("is a symlink to /usr/lib/cni/bridge".to_string()),
            ),
            (link, None, true, foreign),
            (
                dir,
                None,
                true,
                Decision::Impossible("is a directory, not a file".to_string()),
            ),
        ];
        for (existing, recorded, replace, want) in table {
            assert_eq!(
                decide(&existing, "new", recorded.as_ref(), None, replace),
                want,
                "{existing:?} recorded {recorded:?} replace {replace}"
            );
        }
    }

    /// An install killed after its rename but before its record leaves the binary it renamed
    /// as pending: a file with that sha256 is ours, like one with the recorded sha256.
    #[test]
    fn decisions_with_a_pending_binary() {
        let upgrade = |from: &str| {
            Decision::Write(Action::Upgraded {
                from: from.to_string(),
            })
        };
        // (what is there, what the record says, what is pending, --replace-foreign, decision)
        type Case = (
            Existing,
            Option<Entry>,
            Option<&'static str>,
            bool,
            Decision,
        );
        let table: Vec<Case> = vec![
            // Killed after renaming "mid" over "old": "mid" is ours, with or without the flag.
            (
                regular("mid"),
                Some(entry("old")),
                Some("mid"),
                false,
                upgrade("mid"),
            ),
            (
                regular("mid"),
                Some(entry("old")),
                Some("mid"),
                true,
                upgrade("mid"),
            ),
            // Killed after the first rename of a plugin not yet recorded.
            (regular("mid"), None, Some("mid"), false, upgrade("mid")),
            // Killed before the rename: the recorded file is still there.
            (
                regular("old"),
                Some(entry("old")),
                Some("mid"),
                false,
                upgrade("old"),
            ),
            // The pending binary is the one to install: only the record is written.
            (
                regular("new"),
                Some(entry("old")),
                Some("new"),
                false,
                Decision::Keep(Action::Adopted),
            ),
            // Anything else is still foreign.
            (
                regular("edited"),
                Some(entry("old")),
                Some("mid"),
                false,
                Decision::Refuse(
                    "has sha256 edited, changed since cni-installer installed it".to_string(),
                ),
            ),
            (
                regular("go"),
                None,
                Some("mid"),
                false,
                Decision::Refuse(
                    "has sha256 go and was not installed by cni-installer".to_string(),
                ),
            ),
        ];
        for (existing, recorded, pending, replace, want) in table {
            assert_eq!(
                decide(&existing, "new", recorded.as_ref(), pending, replace),
                want,
                "{existing:?} recorded {recorded:?} pending {pending:?} replace {replace}"
            );
        }
    }

    #[test]
    fn a_plugin_is_a_name_or_a_name_and_its_source() {
        assert_eq!(Plugin::parse("bridge").ok(), Some(Plugin::named("bridge")));
        assert_eq!(
            Plugin::parse("cnv-bridge=bridge").ok(),
            Some(Plugin {
                name: "cnv-bridge".to_string(),
                source: "bridge".to_string(),
            })
        );
        for bad in [
            "=bridge",
            "cnv-bridge=",
            "a=b=c",
            "../x=bridge",
            "x=../bridge",
            ".x=y",
        ] {
            assert!(Plugin::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn plugin_names_are_plain_file_names() {
        for ok in ["bridge", "host-local", "a.b_c+d"] {
            check_name(ok).expect(ok);
        }
        for bad in ["", ".hidden", "../bridge", "a/b", "br idge", "x\0"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
