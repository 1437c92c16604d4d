//! What the tier touches on the machine outside its base directory.
//!
//! Most of the daemons' paths are moved into the base directory by their configuration. A few are
//! fixed in the versions the tier runs: the kubelet 1.20 puts its device-plugin socket under
//! `/var/lib/kubelet/device-plugins` and the pods' logs under `/var/log/pods` (symlinked from
//! `/var/log/containers`) whatever `--root-dir` says; containerd 1.6's shims put their sockets
//! under `/run/containerd/s`; libcni, as containerd 1.6 calls it, caches results under
//! `/var/lib/cni/results`; our plugins' ADDs hold `/run/cni/gc.lock`. For those the tier records,
//! before it starts, what the directories hold ([`Snapshot::take`]); teardown removes what is new
//! in them and only that ([`Snapshot::remove_new`]), then compares the watched directories with
//! the record ([`Snapshot::differences`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Paths the tier's daemons create whatever their configuration says: what is new in them at
/// teardown is the tier's, and is removed.
pub const FIXED: &[&str] = &[
    "/var/lib/kubelet/device-plugins",
    "/var/log/pods",
    "/var/log/containers",
    "/run/containerd/s",
    "/var/lib/cni/results",
    "/run/cni/gc.lock",
];

/// Directories compared before and after a run: the fixed paths' and every other place a
/// kubelet, containerd, the CNI plugins or kubectl use by default.
pub fn watched() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = [
        "/var/lib/kubelet",
        "/run/containerd",
        "/var/lib/containerd",
        "/var/lib/cni",
        "/run/cni",
        "/etc/cni",
        "/opt/cni",
        "/run/netns",
        "/var/log/pods",
        "/var/log/containers",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    if let Some(home) = std::env::var_os("HOME") {
        dirs.push(Path::new(&home).join(".kube"));
    }
    dirs
}

/// How deep a snapshot looks below each watched directory, and how many entries it records at
/// most (a machine with a kubelet of its own may hold many).
const DEPTH: usize = 8;
const MAX_ENTRIES: usize = 200_000;

/// The entries of the watched directories at one moment (the directories themselves included
/// when they exist).
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    entries: BTreeSet<PathBuf>,
}

impl Snapshot {
    pub fn take() -> Snapshot {
        let mut entries = BTreeSet::new();
        for dir in watched() {
            walk(&dir, 0, &mut entries);
        }
        Snapshot { entries }
    }

    /// Removes what is new since `self` was taken in the [`FIXED`] paths, and the fixed paths'
    /// new parents when that leaves them empty. Never what existed before; never a socket
    /// something still listens on, never through a mount point. What could not be removed.
    pub fn remove_new(&self) -> Vec<String> {
        let now = Snapshot::take();
        let mut new: Vec<&PathBuf> = now.entries.difference(&self.entries).collect();
        // Deepest first: a new directory is emptied before it is removed.
        new.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
        let listening = listening_sockets();
        let mounts = mount_points();
        let mut errors = Vec::new();
        for p in new {
            let fixed = FIXED.iter().any(|f| p.starts_with(f));
            let parent_of_fixed = FIXED
                .iter()
                .any(|f| Path::new(f).starts_with(p) && Path::new(f) != p.as_path());
            if !fixed && !parent_of_fixed {
                continue;
            }
            if listening.contains(p) {
                errors.push(format!(
                    "{} is in use (a process listens on it)",
                    p.display()
                ));
                continue;
            }
            if mounts.iter().any(|m| m.starts_with(p)) {
                errors.push(format!("{} holds a mount point", p.display()));
                continue;
            }
            let Ok(meta) = std::fs::symlink_metadata(p) else {
                continue;
            };
            let result = if !meta.is_dir() {
                std::fs::remove_file(p)
            } else if fixed {
                // All of a new directory is new, also what lies deeper than a snapshot looks.
                std::fs::remove_dir_all(p)
            } else {
                std::fs::remove_dir(p)
            };
            match result {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => errors.push(format!("remove {}: {e}", p.display())),
            }
        }
        errors
    }

    /// The entries on the machine now that `self` did not have.
    pub fn differences(&self) -> Vec<String> {
        // Only what is new: the kubelet and containerd tidy what earlier runs (or others) left
        // in their fixed directories, such as dangling log links, which is no fault of this run.
        Snapshot::take()
            .entries
            .difference(&self.entries)
            .map(|p| format!("left on the machine: {}", p.display()))
            .collect()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

fn walk(path: &Path, depth: usize, entries: &mut BTreeSet<PathBuf>) {
    if entries.len() >= MAX_ENTRIES {
        return;
    }
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    entries.insert(path.to_path_buf());
    if !meta.is_dir() || depth >= DEPTH {
        return;
    }
    let Ok(dir) = std::fs::read_dir(path) else {
        return;
    };
    for e in dir.flatten() {
        walk(&e.path(), depth + 1, entries);
    }
}

/// Paths of the unix sockets listening in the calling thread's network namespace.
fn listening_sockets() -> BTreeSet<PathBuf> {
    let text = std::fs::read_to_string("/proc/thread-self/net/unix").unwrap_or_default();
    text.lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(7))
        .filter(|p| p.starts_with('/'))
        .map(PathBuf::from)
        .collect()
}

fn mount_points() -> Vec<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    info.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(|p| PathBuf::from(p.replace("\\040", " ")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_paths_are_watched() {
        let watched = watched();
        for f in FIXED {
            assert!(
                watched.iter().any(|w| Path::new(f).starts_with(w)),
                "{f} is not under a watched directory"
            );
        }
    }
}
