//! Who a port belongs to. Every port this plugin creates carries its attachment in the Port's
//! `external_ids`, so DEL and GC find it in OVSDB without a cache file, and its host-side veth
//! has a name derived from the attachment alone, so DEL finds that without OVSDB.

use std::collections::BTreeMap;

use cni_common::naming::host_veth_name;
use cni_common::skel::Request;

/// `external_ids:owner` of our ports. ovs-cni uses the same key with its own value, so neither
/// plugin's cleanup touches the other's ports.
pub const OWNER: &str = "ovs-cni-rs";

/// The `external_ids` keys on a Port.
pub const KEY_OWNER: &str = "owner";
pub const KEY_NETWORK: &str = "cni-network";
pub const KEY_ATTACHMENT: &str = "cni-attachment";
pub const KEY_NETNS: &str = "cni-netns";
pub const KEY_IFNAME: &str = "cni-ifname";
pub const KEY_POD_UID: &str = "cni-pod-uid";

/// How ovs-cni tags its ports: DEL also removes a port that ovs-cni made for the attachment,
/// so a node can switch plugins while pods keep running.
pub const OVS_CNI_OWNER: &str = "ovs-cni.network.kubevirt.io";
pub const OVS_CNI_KEY_NETNS: &str = "contNetns";
pub const OVS_CNI_KEY_IFACE: &str = "contIface";

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
        let mut ids = BTreeMap::new();
        let mut put = |k: &str, v: &str| {
            if !v.is_empty() {
                ids.insert(k.to_string(), v.to_string());
            }
        };
        put(KEY_OWNER, OWNER);
        put(KEY_NETWORK, &req.conf.name);
        put(KEY_ATTACHMENT, &self.id);
        put(KEY_NETNS, &req.cmd.netns);
        put(KEY_IFNAME, &req.cmd.ifname);
        put(KEY_POD_UID, req.cmd.args.pod_uid().unwrap_or_default());
        ids
    }
}

pub fn attachment_id(container_id: &str, ifname: &str) -> String {
    format!("{container_id}/{ifname}")
}
