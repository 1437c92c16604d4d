//! What the command line takes when a flag is left out, and where the DaemonSet puts the
//! node's files: the operator renders DaemonSets that rely on these, so they stay as they are.

use std::time::Duration;

pub const DEFAULT_FROM: &str = "/plugins";
pub const DEFAULT_TO: &str = "/host/opt/cni/bin";
pub const DEFAULT_OVSDB: &str = "unix:/host/var/run/openvswitch/db.sock";
/// The upstream markers' update interval.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(60);
/// The node's CNI config directory, as the DaemonSet mounts it.
pub const DEFAULT_CONF_DIR: &str = "/host/etc/cni/net.d";
/// Where the DaemonSet mounts the node's `/`.
pub const DEFAULT_HOST_ROOT: &str = "/host";
/// The runtimes' CRI sockets, relative to the node's `/`: containerd's, then CRI-O's.
pub const CRI_SOCKETS: [&str; 3] = [
    "run/containerd/containerd.sock",
    "var/run/crio/crio.sock",
    "run/crio/crio.sock",
];
/// Where `run` reads the node's name from (the downward API's spec.nodeName).
pub const NODE_NAME_ENV: &str = "NODE_NAME";
