//! The kubelet: its configuration and start.

use std::path::Path;
use std::process::Command;

use anyhow::Result;

use super::{Cluster, NODE_NAME};
use crate::node::NODE_IP;

impl Cluster {
    pub(super) fn start_kubelet(&mut self, logs: &Path) -> Result<()> {
        let dir = self.base.join("kubelet");
        std::fs::create_dir_all(&dir)?;
        let config = dir.join("config.yaml");
        std::fs::write(
            &config,
            "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n\
             cgroupDriver: cgroupfs\nfailSwapOn: false\naddress: 127.0.0.1\nreadOnlyPort: 0\n\
             healthzBindAddress: 127.0.0.1\nnodeStatusUpdateFrequency: 2s\nsyncFrequency: 10s\n\
             authentication:\n  anonymous:\n    enabled: true\n  webhook:\n    enabled: false\n\
             authorization:\n  mode: AlwaysAllow\n\
             evictionHard:\n  memory.available: 100Mi\n  nodefs.available: 1%\n  \
             imagefs.available: 1%\n  nodefs.inodesFree: 1%\n\
             imageGCHighThresholdPercent: 100\nimageGCLowThresholdPercent: 99\n",
        )?;
        let mut cmd = Command::new(self.bin.join("kubelet"));
        cmd.args(["--container-runtime", "remote"])
            .arg(format!(
                "--container-runtime-endpoint=unix://{}",
                self.containerd_socket().display()
            ))
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--config")
            .arg(&config)
            .arg("--root-dir")
            .arg(dir.join("root"))
            .arg("--cert-dir")
            .arg(dir.join("pki"))
            .args([
                "--hostname-override",
                NODE_NAME,
                "--node-ip",
                NODE_IP,
                "--v",
                "1",
            ]);
        self.spawn("kubelet", cmd, logs)
    }
}
