//! What to do with each plugin, decided before anything is written: what is at the target
//! (looked at without following a symlink), against the source's sha256 and what the record
//! says we installed there.

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::Action;
use crate::digest;
use crate::error::{Context, Result};
use crate::record::{Entry, MODE};

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
            Some(_) => format!("has sha256 {sha256}, changed since node-agent installed it"),
            None => format!("has sha256 {sha256} and was not installed by node-agent"),
        }),
    }
}

/// Looks at `path` without following a symlink there.
pub fn inspect(path: &Path) -> Result<Existing> {
    let meta = match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Existing::Missing),
        meta => meta.with_context(|| format!("looking at {}", path.display()))?,
    };
    let kind = meta.file_type();
    if kind.is_symlink() {
        let target = fs::read_link(path)
            .with_context(|| format!("reading the symlink {}", path.display()))?;
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
    let sha256 =
        digest::sha256_reader(file).with_context(|| format!("reading {}", path.display()))?;
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
        .with_context(|| format!("opening {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record;

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
                Decision::Refuse("has sha256 go and was not installed by node-agent".to_string()),
            ),
            (regular("go"), None, true, foreign.clone()),
            (
                regular("edited"),
                Some(entry("old")),
                false,
                Decision::Refuse(
                    "has sha256 edited, changed since node-agent installed it".to_string(),
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
                    "has sha256 edited, changed since node-agent installed it".to_string(),
                ),
            ),
            (
                regular("go"),
                None,
                Some("mid"),
                false,
                Decision::Refuse("has sha256 go and was not installed by node-agent".to_string()),
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
}
