//! Who a port belongs to. Every port this plugin creates carries, in the Port's `external_ids`,
//! exactly what ovs-cni writes on its own ports (`owner`, `contNetns`, `contIface`,
//! `contPodUid`), so that ovs-cni's DEL and its cleanup of dead ports take it as one of theirs,
//! plus the attachment and the network, so that this plugin's DEL and GC find it in OVSDB
//! without any file. Its host-side veth has a name derived from the attachment alone, so DEL
//! finds that without OVSDB.

use std::collections::BTreeMap;

use cni_common::naming::host_veth_name;
use cni_common::skel::Request;

/// `external_ids:owner` of the ports of both plugins: ovs-cni's DEL and its cleanup refuse to
/// touch a port with any other owner.
pub const OWNER: &str = "ovs-cni.network.kubevirt.io";

/// ovs-cni's keys: the container's network namespace path (CNI_NETNS), the interface in it
/// (CNI_IFNAME) and the pod's UID (CNI_ARGS K8S_POD_UID, empty when not given), which ovs-cni's
/// DEL looks the port up by.
pub const KEY_OWNER: &str = "owner";
pub const KEY_NETNS: &str = "contNetns";
pub const KEY_IFACE: &str = "contIface";
pub const KEY_POD_UID: &str = "contPodUid";

/// This plugin's keys, which ovs-cni never writes: the network's name (for GC) and
/// `<containerID>/<ifname>` (for DEL, CHECK and GC). A port with `cni-attachment` was made by
/// this plugin; one without, by ovs-cni.
pub const KEY_NETWORK: &str = "cni-network";
pub const KEY_ATTACHMENT: &str = "cni-attachment";

/// The owner earlier versions of this plugin wrote. Their ports carry `cni-network` and
/// `cni-attachment` too, which is what DEL and GC look for, so they are still found.
pub const LEGACY_OWNER: &str = "ovs-cni-rs";

/// One container interface: CNI's (container ID, ifname) pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// `<containerID>/<ifname>`; container IDs cannot contain '/', so this is unambiguous.
    pub id: String,
    /// The host end of the veth, also the OVS Port and Interface name.
    pub host_veth: String,
}

impl Attachment {
    pub fn new(container_id: &str, ifname: &str) -> Attachment {
        Attachment {
            id: attachment_id(container_id, ifname),
            host_veth: host_veth_name(container_id, ifname),
        }
    }

    pub fn of<C>(req: &Request<C>) -> Attachment {
        Attachment::new(&req.cmd.container_id, &req.cmd.ifname)
    }

    /// The Port's `external_ids` for this attachment of `req`'s network.
    pub fn external_ids<C>(&self, req: &Request<C>) -> BTreeMap<String, String> {
        let pod_uid = req.cmd.args.pod_uid().unwrap_or_default();
        [
            (KEY_OWNER, OWNER),
            (KEY_NETNS, req.cmd.netns.as_str()),
            (KEY_IFACE, req.cmd.ifname.as_str()),
            // Always present, empty without K8S_POD_UID, as ovs-cni writes it.
            (KEY_POD_UID, pod_uid),
            (KEY_NETWORK, req.conf.name.as_str()),
            (KEY_ATTACHMENT, self.id.as_str()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }
}

pub fn attachment_id(container_id: &str, ifname: &str) -> String {
    format!("{container_id}/{ifname}")
}
