//! Teardown: the workloads, the daemons, the shims, the mounts under the base directory, the
//! node, and what the daemons created at their fixed paths, checked against the record of the
//! start.

use std::path::Path;
use std::time::Duration;

use super::{Cluster, NODE_NAME};

impl Cluster {
    /// Stops everything; returns what could not be cleaned up. Runs once: later calls (and the
    /// drop after an explicit call) do nothing.
    pub fn teardown(&mut self) -> Vec<String> {
        if std::mem::replace(&mut self.torn_down, true) {
            return Vec::new();
        }
        let mut errors = Vec::new();
        // Workloads first, so the kubelet runs every CNI DEL while the plugins are still there.
        let _ = self.kubectl(&[
            "delete",
            "networkaddonsconfigs",
            "--all",
            "--wait=false",
            "--timeout=20s",
        ]);
        let _ = self.kubectl(&[
            "delete",
            "daemonsets,deployments",
            "--all",
            "--all-namespaces",
            "--timeout=30s",
        ]);
        let _ = self.kubectl(&[
            "delete",
            "pods",
            "--all",
            "--all-namespaces",
            "--grace-period=1",
            "--timeout=60s",
        ]);
        for name in ["kubelet", "kube-scheduler", "kube-controller-manager"] {
            self.stop_daemon(name);
        }
        // What the kubelet did not stop: the sandboxes (and their CNI DEL) through containerd.
        self.stop_sandboxes(&mut errors);
        let _ = self.kubectl(&["delete", "node", NODE_NAME, "--timeout=20s"]);
        for name in ["containerd", "kube-apiserver", "etcd", "registry"] {
            self.stop_daemon(name);
        }
        self.daemons.clear();
        if let Some(mut ovs) = self.ovs.take() {
            ovs.stop();
        }
        self.kill_shims(&mut errors);
        errors.extend(unmount_under(&self.base));
        errors.extend(self.node.teardown());
        // What the daemons created at their fixed paths, recorded against the start.
        errors.extend(self.host_before.remove_new());
        if errors.is_empty() {
            if let Err(e) = std::fs::remove_dir_all(&self.base) {
                errors.push(format!("remove {}: {e}", self.base.display()));
            }
        }
        errors.extend(self.host_before.differences());
        errors
    }

    fn stop_daemon(&mut self, name: &str) {
        if let Some(d) = self.daemons.iter_mut().find(|d| d.name() == name) {
            d.stop(Duration::from_secs(15));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let errors = self.teardown();
        for e in &errors {
            eprintln!("kube-tier: teardown: {e}");
        }
    }
}

/// Unmounts (lazily) everything mounted under `dir`, deepest first.
fn unmount_under(dir: &Path) -> Vec<String> {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return vec!["read /proc/self/mountinfo".to_string()];
    };
    let prefix = dir.to_string_lossy().into_owned();
    let mut points: Vec<String> = info
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(|p| p.replace("\\040", " "))
        .filter(|p| p.starts_with(&prefix))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.len()));
    points.dedup();
    let mut errors = Vec::new();
    for p in points {
        if let Err(e) = nix::mount::umount2(p.as_str(), nix::mount::MntFlags::MNT_DETACH) {
            if e != nix::errno::Errno::EINVAL && e != nix::errno::Errno::ENOENT {
                errors.push(format!("umount {p}: {e}"));
            }
        }
    }
    errors
}
