//! The veth pair between the container and the bridge: the container end is created directly in
//! the container's namespace (never appearing on the host under a name that could collide), the
//! host end under the attachment's derived name.

use cni_common::mac::MacAddr;
use cni_common::netlink::{Link, Netlink, Veth};
use cni_common::netns::NetNs;
use cni_common::Result;

/// What the pair looks like.
#[derive(Debug, Clone, Copy)]
pub struct VethSpec<'a> {
    pub host_name: &'a str,
    pub container_name: &'a str,
    pub mtu: Option<u32>,
    /// The container end's MAC; the kernel picks one when unset.
    pub container_mac: Option<MacAddr>,
}

/// `ip link add <host> mtu M up type veth peer name <ifname> netns <ns> address A mtu M`.
/// `host_nl` is a socket in the host namespace. Returns the host end as the kernel reports it.
pub fn create(host_nl: &Netlink, ns: &NetNs, spec: &VethSpec) -> Result<Link> {
    // Created up, so no further request is needed for the host end.
    host_nl.link_add_veth_show(&Veth {
        name: spec.host_name,
        peer_name: spec.container_name,
        peer_netns: Some(ns),
        mtu: spec.mtu,
        peer_mac: spec.container_mac,
        up: true,
        ..Veth::default()
    })
}
