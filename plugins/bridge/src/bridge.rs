//! The bridge itself: created when missing (ensureBridge), checked when present.

use cni_common::netlink::{Link, Netlink};
use cni_common::sysctl::sysctl_write;
use cni_common::{Error, Result};

use crate::config::Settings;

/// `ip link add <bridge> [mtu M] type bridge [vlan_filtering 1]; ip link set <bridge> up`,
/// or the bridge that is already there. When the config asks for VLANs, a bridge that does not
/// filter by VLAN is refused: the reference plugin would attach the port and leave the VLAN
/// unenforced, and turning filtering on behind the node's back would cut the tagged traffic of
/// every port (the uplink included) that was never given its VLANs.
pub fn ensure_bridge(nl: &Netlink, s: &Settings) -> Result<Link> {
    let link = match nl.link_show(&s.bridge)? {
        Some(link) => link,
        None => {
            let created = nl.link_add_bridge(&s.bridge, s.mtu, s.wants_vlans())?;
            if created {
                // The bridge is no router's client: it must not configure itself from router
                // advertisements sent by containers. Without IPv6 the key does not exist.
                let _ = sysctl_write(&format!("net/ipv6/conf/{}/accept_ra", s.bridge), "0");
            }
            nl.link_show(&s.bridge)?.ok_or_else(|| {
                Error::system(format!(
                    "bridge {} vanished right after it was created",
                    s.bridge
                ))
            })?
        }
    };
    if link.kind.as_deref() != Some("bridge") {
        return Err(Error::system(format!(
            "{} exists and is not a bridge (it is {})",
            s.bridge,
            link.kind.as_deref().unwrap_or("a link without a kind")
        )));
    }
    if s.wants_vlans() && link.vlan_filtering != Some(true) {
        return Err(Error::system(format!(
            "bridge {name} does not filter by VLAN, so the VLANs of this network would not be \
             enforced: turn filtering on (ip link set {name} type bridge vlan_filtering 1) and give \
             its uplink the VLANs it must carry, or let the plugin create the bridge",
            name = s.bridge
        )));
    }
    if !link.up {
        nl.link_set_up(link.index)?;
    }
    if s.promisc && !link.promisc {
        nl.link_set_promisc(link.index, true)?;
    }
    Ok(link)
}
