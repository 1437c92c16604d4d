//! The node's pod network: our plugins installed and a conflist for containerd.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result};

use super::Cluster;
use crate::daemon::run;
use crate::node::{NODE_IP, POD_BRIDGE, POD_SUBNET};

impl Cluster {
    /// The node's primary pod network, as a node image would provision it: a conflist of our
    /// `bridge` and `tuning` with Debian's `host-local` (and `loopback`), and the plugins themselves put in place
    /// by our installer (what the linux-bridge DaemonSet's init container runs). The DaemonSet
    /// finds them recorded as its own and takes them over.
    pub(super) fn provision_cni(&self, repo: &Path) -> Result<()> {
        std::fs::create_dir_all(&self.cni_bin)?;
        std::fs::create_dir_all(&self.cni_conf)?;
        run(Command::new(repo.join("target/installer/cni-installer"))
            .args(["install", "--from"])
            .arg(repo.join("target/cni-bin"))
            .arg("--to")
            .arg(&self.cni_bin)
            .args(["--plugins", "bridge,tuning"])
            // tuning keeps its state in the tier's own directory, which the node allows.
            .arg("--allow-state-dir")
            .arg(self.base.join("cni/state")))?;
        // containerd brings every sandbox's loopback up through the `loopback` plugin.
        for plugin in ["host-local", "loopback"] {
            std::fs::copy(
                Path::new("/usr/lib/cni").join(plugin),
                self.cni_bin.join(plugin),
            )
            .with_context(|| format!("copy Debian's {plugin} (containernetworking-plugins)"))?;
        }
        let conflist = serde_json::json!({
            "cniVersion": "1.0.0",
            "name": "kube-tier",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": POD_BRIDGE,
                    "isGateway": true,
                    "isDefaultGateway": true,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": POD_SUBNET, "gateway": NODE_IP}]],
                        "dataDir": self.base.join("cni/ipam"),
                    }
                },
                {
                    "type": "tuning",
                    "sysctl": {"net.ipv4.conf.IFNAME.accept_redirects": "0"},
                    "dataDir": self.base.join("cni/state/tuning"),
                }
            ]
        });
        std::fs::write(
            self.cni_conf.join("10-kube-tier.conflist"),
            serde_json::to_vec_pretty(&conflist)?,
        )?;
        Ok(())
    }
}
