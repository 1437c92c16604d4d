//! The kubelet: its configuration and start.

use std::path::Path;

use anyhow::Result;

use super::{Cluster, CONTAINERD_SOCK};

impl Cluster {
    /// The kubelet of node `node`, named after it, serving on its address, its root
    /// `/var/lib/kubelet` and its cgroups under the node's cgroup root.
    pub(super) fn start_kubelet(&mut self, node: usize, logs: &Path) -> Result<()> {
        let n = &self.nodes[node];
        let dir = n.dir().join("kubelet");
        std::fs::create_dir_all(&dir)?;
        let config = dir.join("config.yaml");
        std::fs::write(
            &config,
            format!(
                "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n\
                 cgroupDriver: cgroupfs\ncgroupRoot: {cgroup_root}\nfailSwapOn: false\n\
                 address: {ip}\nreadOnlyPort: 0\n\
                 healthzBindAddress: 127.0.0.1\nnodeStatusUpdateFrequency: 2s\nsyncFrequency: 10s\n\
                 authentication:\n  anonymous:\n    enabled: true\n  webhook:\n    enabled: false\n\
                 authorization:\n  mode: AlwaysAllow\n\
                 evictionHard:\n  memory.available: 100Mi\n  nodefs.available: 1%\n  \
                 imagefs.available: 1%\n  nodefs.inodesFree: 1%\n\
                 imageGCHighThresholdPercent: 100\nimageGCLowThresholdPercent: 99\n",
                cgroup_root = n.cgroup_root(),
                ip = n.ip(),
            ),
        )?;
        let mut cmd = n.command(self.bin.join("kubelet"));
        cmd.args(["--container-runtime", "remote"])
            .arg(format!(
                "--container-runtime-endpoint=unix://{CONTAINERD_SOCK}"
            ))
            .arg("--kubeconfig")
            .arg(&self.node_kubeconfig)
            .arg("--config")
            .arg(&config)
            .arg("--hostname-override")
            .arg(n.name())
            .arg("--node-ip")
            .arg(n.ip())
            .args(["--v", "1"]);
        let name = self.daemon_name(node, "kubelet");
        self.spawn(&name, cmd, logs)
    }
}
