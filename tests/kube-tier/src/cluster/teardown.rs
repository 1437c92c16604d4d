//! Teardown: the workloads, the daemons, each node's processes, cgroups and namespaces, the
//! networks, the sysctls, checked against the record of the start.

use std::time::Duration;

use super::Cluster;

impl Cluster {
    /// Stops everything; returns what could not be cleaned up. Runs once: later calls (and the
    /// drop after an explicit call) do nothing.
    pub fn teardown(&mut self) -> Vec<String> {
        if std::mem::replace(&mut self.torn_down, true) {
            return Vec::new();
        }
        let mut errors = Vec::new();
        // Workloads first, so the kubelets run every CNI DEL while the plugins are still there.
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
        let names: Vec<String> = self.nodes.iter().map(|n| n.name().to_string()).collect();
        for name in &names {
            self.stop_daemon(&format!("{name}-kubelet"));
        }
        for name in ["kube-scheduler", "kube-controller-manager"] {
            self.stop_daemon(name);
        }
        for (i, name) in names.iter().enumerate() {
            // What the kubelet did not stop: the sandboxes (and their CNI DEL) through containerd.
            self.stop_sandboxes(i, &mut errors);
            let _ = self.kubectl(&["delete", "node", name, "--timeout=20s"]);
            self.stop_daemon(&format!("{name}-containerd"));
        }
        for name in ["kube-apiserver", "etcd", "registry"] {
            self.stop_daemon(name);
        }
        self.daemons.clear();
        for ovs in &mut self.ovs {
            ovs.stop();
        }
        self.ovs.clear();
        for node in &mut self.nodes {
            errors.extend(node.teardown());
        }
        self.nodes.clear();
        errors.extend(self.network.teardown());
        errors.extend(self.sysctls.restore());
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
