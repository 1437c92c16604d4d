//! The node's pod network: our plugins installed and its config for containerd.

use std::path::Path;

use anyhow::{Context, Result};

use super::Cluster;
use crate::daemon::run;
use crate::node::POD_BRIDGE;

/// The node's primary network's config, in the node's view: one plugin in a `.conf`. Multus
/// v4.3.0 hands a conflist primary network to DEL without its plugins' own fields (only
/// `type`, `name`, `capabilities` and the IPAM's `type` survive; upstream's fix came after
/// v4.3.0), so host-local's DEL of a conflist fails for want of its ranges; a `.conf` reaches
/// DEL whole.
pub const POD_NETWORK_CONF: &str = "/etc/cni/net.d/10-kube-tier.conf";

impl Cluster {
    /// Node `node`'s primary pod network, as a node image would provision it: our `bridge`
    /// with Debian's `host-local` (containerd brings the loopback up with Debian's `loopback`),
    /// every state at its default place, and the plugins themselves (tuning too, for the extra
    /// networks) put in place by our installer (what the linux-bridge DaemonSet's init
    /// container runs). The DaemonSet finds them recorded as its own and takes them over.
    pub(super) fn provision_cni(&self, node: usize, repo: &Path) -> Result<()> {
        let n = &self.nodes[node];
        run(n
            .command(repo.join("target/node-agent/node-agent"))
            .args(["install", "--from"])
            .arg(repo.join("target/cni-bin"))
            .args(["--to", "/opt/cni/bin", "--plugins", "bridge,tuning"]))?;
        // `static` gives an extra network the addresses a pod's annotation asks for (Multus'
        // `ips`).
        let bin = n.host_path("/opt/cni/bin");
        for plugin in ["host-local", "loopback", "static"] {
            std::fs::copy(Path::new("/usr/lib/cni").join(plugin), bin.join(plugin))
                .with_context(|| format!("copy Debian's {plugin} (containernetworking-plugins)"))?;
        }
        let conf = serde_json::json!({
            "cniVersion": "1.0.0",
            "name": "kube-tier",
            "type": "bridge",
            "bridge": POD_BRIDGE,
            "isGateway": true,
            "isDefaultGateway": true,
            "ipam": {
                "type": "host-local",
                "ranges": [[{"subnet": n.pod_subnet(), "gateway": n.pod_gateway()}]],
            }
        });
        std::fs::write(
            n.host_path(POD_NETWORK_CONF),
            serde_json::to_vec_pretty(&conf)?,
        )?;
        Ok(())
    }
}
