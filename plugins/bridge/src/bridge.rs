//! The bridge itself: created when missing (ensureBridge), checked when present.

use cni_common::netlink::{Link, Netlink};
use cni_common::sysctl::sysctl_write_if_present;
use cni_common::{Error, Result};

use crate::config::Settings;

/// `ip link add <bridge> [mtu M] type bridge [vlan_filtering 1]; ip link set <bridge> up`,
/// or the bridge that is already there.
///
/// With VLANs in the config, an existing bridge that does not filter by VLAN is taken as it is
/// (the reference plugin does the same): the port's VLANs are programmed anyway, the kernel keeps
/// them and enforces them once filtering is turned on, and [`Bridge::vlans_enforced`] is false so
/// that the caller warns. Turning filtering on behind the node's back would cut the tagged
/// traffic of every port that was never given its VLANs, the uplink first. With
/// `vlanFilteringRequired` such a bridge is refused instead. A kernel that cannot filter by VLAN
/// at all is refused before anything changes.
pub fn ensure_bridge(nl: &Netlink, s: &Settings) -> Result<Bridge> {
    let link = match nl.link_show(&s.bridge)? {
        Some(link) => link,
        None => {
            let created = nl.link_add_bridge(&s.bridge, s.mtu, s.wants_vlans())?;
            if created {
                // The bridge is no router's client: it must not configure itself from router
                // advertisements sent by containers. Without IPv6 the key does not exist.
                sysctl_write_if_present(&format!("net/ipv6/conf/{}/accept_ra", s.bridge), "0")?;
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
    let mut vlans_enforced = true;
    if s.wants_vlans() && link.vlan_filtering != Some(true) {
        if s.vlan_filtering_required {
            return Err(Error::system(format!(
                "bridge {name} does not filter by VLAN and the config sets \
                 vlanFilteringRequired: turn filtering on (ip link set {name} type bridge \
                 vlan_filtering 1) and give its uplink the VLANs it must carry, or let the \
                 plugin create the bridge",
                name = s.bridge
            )));
        }
        // The kernel reports the bridge's default PVID only when it was built with
        // CONFIG_BRIDGE_VLAN_FILTERING; without it no port can be given a VLAN.
        if link.vlan_default_pvid.is_none() {
            return Err(Error::system(format!(
                "this kernel cannot filter bridge traffic by VLAN (it lacks \
                 CONFIG_BRIDGE_VLAN_FILTERING), so bridge {} cannot carry the VLANs of this network",
                s.bridge
            )));
        }
        vlans_enforced = false;
    }
    if !link.up {
        nl.link_set_up(link.index)?;
    }
    if s.promisc && !link.promisc {
        nl.link_set_promisc(link.index, true)?;
    }
    Ok(Bridge {
        link,
        vlans_enforced,
    })
}

/// The bridge an ADD attaches to.
pub struct Bridge {
    pub link: Link,
    /// False when the config has VLANs and the bridge does not filter by VLAN (yet).
    pub vlans_enforced: bool,
}

/// What an ADD prints on stderr when it programs VLANs that the bridge does not enforce yet.
pub fn unenforced_vlans_warning(bridge: &str, port: &str, s: &Settings) -> String {
    let vids: Vec<String> = crate::vlan::port_vlans(s)
        .iter()
        .map(|v| v.vid.to_string())
        .collect();
    let vids = vids.join(",");
    format!(
        "bridge {bridge} does not filter by VLAN, so VLAN {vids} of port {port} is not \
         enforced until filtering is turned on: ip link set {bridge} type bridge vlan_filtering 1 \
         (and bridge vlan add dev <uplink> vid {vids} for the uplink). Set \
         \"vlanFilteringRequired\": true to refuse such attachments instead."
    )
}
