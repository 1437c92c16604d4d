//! What the tier may touch on the machine outside its base directory, and what it must put back.
//!
//! The daemons' fixed paths (the kubelet 1.20's device-plugin socket under `/var/lib/kubelet`
//! whatever `--root-dir` says, the pods' logs under `/var/log/pods`, containerd's shim sockets
//! under `/run/containerd/s`, libcni's cache under `/var/lib/cni/results`, the plugins' lock
//! `/run/cni/gc.lock`) are each node's own, bound over in its mount namespace
//! ([`crate::node::NODE_DIRS`]). The tier records, before it starts, what the directories where
//! such files would land hold ([`Snapshot::take`]) and teardown compares them with the record
//! ([`Snapshot::differences`]). The kubelet also rewrites three global sysctls on every start
//! ([`Sysctls`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::Result;

/// Sysctls the kubelet rewrites on start (they are not per namespace).
const KUBELET_SYSCTLS: &[&str] = &[
    "vm/overcommit_memory",
    "kernel/panic",
    "kernel/panic_on_oops",
];

/// The kubelet's global sysctls as they were before the tier started.
pub struct Sysctls {
    saved: Vec<(PathBuf, String)>,
}

impl Sysctls {
    pub fn save() -> Result<Sysctls> {
        let mut saved = Vec::new();
        for s in KUBELET_SYSCTLS {
            let path = Path::new("/proc/sys").join(s);
            let value = std::fs::read_to_string(&path)?;
            saved.push((path, value));
        }
        Ok(Sysctls { saved })
    }

    /// Writes the saved values back; what could not be.
    pub fn restore(&self) -> Vec<String> {
        self.saved
            .iter()
            .filter_map(|(path, value)| {
                std::fs::write(path, value)
                    .err()
                    .map(|e| format!("restore {}: {e}", path.display()))
            })
            .collect()
    }
}

/// Directories compared before and after a run: every place a kubelet, containerd, the CNI
/// plugins or kubectl use by default.
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
        "/run/multus",
        "/run/k8s.cni.cncf.io",
        "/etc/kubernetes",
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

    /// The entries on the machine now that `self` did not have.
    pub fn differences(&self) -> Vec<String> {
        // Only what is new: what disappeared was removed by someone else, no fault of this run.
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
