//! The veth pair: the container end created directly in the container's namespace, the host
//! end named after the attachment and enslaved to the bridge as it is created.

use cni_common::mac::MacAddr;
use cni_common::naming::AttachmentKey;
use cni_common::netlink::{Link, Netlink, Veth};
use cni_common::netns::NetNs;
use cni_common::sysctl::sysctl_write_if_present;
use cni_common::Result;

use crate::config::Settings;

/// The host veth's alias marks it as ours and names its attachment, for DEL and GC.
const ALIAS_PREFIX: &str = "cni-bridge ";

pub fn port_alias(key: &AttachmentKey) -> String {
    format!("{ALIAS_PREFIX}{key}")
}

/// The attachment a host veth belongs to, if its alias says it is one of ours.
pub fn alias_key(link: &Link) -> Option<AttachmentKey> {
    link.alias
        .as_deref()?
        .strip_prefix(ALIAS_PREFIX)
        .and_then(AttachmentKey::parse)
}

/// `ip link add <host veth> mtu M master <bridge> type veth peer name <ifname> address <mac>
/// mtu M netns <container>`, then the host end's alias. Both ends stay down: the caller brings
/// the container end up (with its addresses) and then the host end. Returns the host end.
pub fn add_port_veth(
    nl: &Netlink,
    ns: &NetNs,
    ifname: &str,
    key: &AttachmentKey,
    bridge: u32,
    s: &Settings,
    mac: MacAddr,
) -> Result<Link> {
    let name = key.host_veth_name();
    let alias = port_alias(key);
    let veth = Veth {
        name: &name,
        peer_name: ifname,
        peer_netns: Some(ns),
        mtu: s.mtu,
        mac: None,
        peer_mac: Some(mac),
        master: Some(bridge),
        // Enslaved down and brought up once the container end is up: the bridge then enables
        // the port once, instead of enable, disable (no carrier yet), enable.
        up: false,
    };
    let host = match nl.link_add_veth_show(&veth) {
        Ok(host) => host,
        Err(e) => {
            // A host end left by an earlier ADD of this very attachment (a runtime that retried
            // after a timeout): replace it. Anything else is somebody else's and stays.
            match nl.link_show(&name)? {
                Some(old) if alias_key(&old) == Some(*key) => {
                    nl.link_del(old.index)?;
                    nl.link_add_veth_show(&veth)?
                }
                _ => return Err(e),
            }
        }
    };
    nl.link_set_alias(host.index, &alias)?;
    // A bridge port is no router's client; without IPv6 the key does not exist.
    sysctl_write_if_present(&format!("net/ipv6/conf/{name}/accept_ra"), "0")?;
    Ok(Link {
        alias: Some(alias),
        ..host
    })
}
