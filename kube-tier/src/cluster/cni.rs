//! The node's pod network: our plugins installed and a conflist for containerd.

use std::path::Path;

use anyhow::{Context, Result};

use super::Cluster;
use crate::daemon::run;
use crate::node::POD_BRIDGE;

/// The node's primary network's conflist, in the node's view.
pub const POD_CONFLIST: &str = "/etc/cni/net.d/10-kube-tier.conflist";

impl Cluster {
    /// Node `node`'s primary pod network, as a node image would provision it: a conflist of our
    /// `bridge` and `tuning` with Debian's `host-local` (and `loopback`), every state at its
    /// default place, and the plugins themselves put in place by our installer (what the
    /// linux-bridge DaemonSet's init container runs). The DaemonSet finds them recorded as its
    /// own and takes them over.
    pub(super) fn provision_cni(&self, node: usize, repo: &Path) -> Result<()> {
        let n = &self.nodes[node];
        run(n
            .command(repo.join("target/node-agent/node-agent"))
            .args(["install", "--from"])
            .arg(repo.join("target/cni-bin"))
            .args(["--to", "/opt/cni/bin", "--plugins", "bridge,tuning"]))?;
        // containerd brings every sandbox's loopback up through the `loopback` plugin.
        let bin = n.host_path("/opt/cni/bin");
        for plugin in ["host-local", "loopback"] {
            std::fs::copy(Path::new("/usr/lib/cni").join(plugin), bin.join(plugin))
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
                        "ranges": [[{"subnet": n.pod_subnet(), "gateway": n.pod_gateway()}]],
                    }
                },
                {
                    "type": "tuning",
                    "sysctl": {"net.ipv4.conf.IFNAME.accept_redirects": "0"},
                }
            ]
        });
        std::fs::write(
            n.host_path(POD_CONFLIST),
            serde_json::to_vec_pretty(&conflist)?,
        )?;
        Ok(())
    }
}
