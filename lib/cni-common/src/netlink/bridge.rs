//! `ip link add type bridge`, `bridge link` and `bridge vlan`: bridges, their ports' flags and
//! the ports' VLANs.

use std::collections::BTreeMap;

use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::link::{
    AfSpecBridge, BridgeVlanInfo, BridgeVlanInfoFlags, InfoBridge, InfoBridgePort, InfoData,
    InfoKind, InfoPortData, InfoPortKind, LinkAttribute, LinkExtentMask, LinkInfo, LinkMessage,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use super::link::{link_message, link_message_named};
use super::{BridgePortSettings, Link, Netlink};
use crate::error::{Context, Error, Result};

/// `bridge link set dev <port> hairpin on|off isolated on|off`; None leaves a flag alone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BridgePort {
    pub hairpin: Option<bool>,
    pub isolated: Option<bool>,
}

/// One line of `bridge vlan show dev <port>`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct PortVlan {
    pub vid: u16,
    /// Untagged frames arriving on the port join this VLAN.
    pub pvid: bool,
    /// Frames of this VLAN leave the port without a tag.
    pub untagged: bool,
}

/// As `bridge vlan show` prints it: `10 PVID Egress Untagged`.
impl std::fmt::Display for PortVlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.vid)?;
        if self.pvid {
            write!(f, " PVID")?;
        }
        if self.untagged {
            write!(f, " Egress Untagged")?;
        }
        Ok(())
    }
}

impl PortVlan {
    /// An access VLAN: PVID and untagged.
    pub fn access(vid: u16) -> PortVlan {
        PortVlan {
            vid,
            pvid: true,
            untagged: true,
        }
    }

    /// A trunk VLAN: tagged, not the PVID.
    pub fn tagged(vid: u16) -> PortVlan {
        PortVlan {
            vid,
            pvid: false,
            untagged: false,
        }
    }

    fn flags(&self) -> BridgeVlanInfoFlags {
        let mut flags = BridgeVlanInfoFlags::empty();
        flags.set(BridgeVlanInfoFlags::Pvid, self.pvid);
        flags.set(BridgeVlanInfoFlags::Untagged, self.untagged);
        flags
    }
}

/// The IFLA_BRIDGE_VLAN_INFO entries for `vlans`: runs of consecutive VIDs with the same flags
/// become one RANGE_BEGIN/RANGE_END pair, so a trunk of 4094 VLANs is a small message.
fn vlan_infos(vlans: &[PortVlan]) -> Vec<AfSpecBridge> {
    let mut sorted = vlans.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut infos = Vec::new();
    let mut i = 0;
    while let Some(first) = sorted.get(i) {
        let mut last = *first;
        // A PVID cannot be part of a range.
        if !first.pvid {
            while let Some(next) = sorted.get(i + 1) {
                if next.vid == last.vid + 1 && next.flags() == first.flags() {
                    last = *next;
                    i += 1;
                } else {
                    break;
                }
            }
        }
        if last.vid == first.vid {
            infos.push(AfSpecBridge::VlanInfo(BridgeVlanInfo {
                flags: first.flags(),
                vid: first.vid,
            }));
        } else {
            infos.push(AfSpecBridge::VlanInfo(BridgeVlanInfo {
                flags: first.flags() | BridgeVlanInfoFlags::RangeBegin,
                vid: first.vid,
            }));
            infos.push(AfSpecBridge::VlanInfo(BridgeVlanInfo {
                flags: first.flags() | BridgeVlanInfoFlags::RangeEnd,
                vid: last.vid,
            }));
        }
        i += 1;
    }
    infos
}

fn vids_text(vlans: &[PortVlan]) -> String {
    let vids: Vec<String> = vlans.iter().map(|v| v.vid.to_string()).collect();
    vids.join(",")
}

/// An AF_BRIDGE message about port `index` carrying VLAN entries.
fn port_vlan_message(index: u32, vlans: &[PortVlan]) -> LinkMessage {
    let mut msg = link_message(index);
    msg.header.interface_family = AddressFamily::Bridge;
    msg.attributes
        .push(LinkAttribute::AfSpecBridge(vlan_infos(vlans)));
    msg
}

impl Netlink {
    /// `ip link add <name> [mtu M] type bridge [vlan_filtering 1]`. False when a link of that
    /// name already existed: two ADDs may race to create the bridge, and both must go on.
    pub fn link_add_bridge(
        &self,
        name: &str,
        mtu: Option<u32>,
        vlan_filtering: bool,
    ) -> Result<bool> {
        let mut msg = link_message_named(name);
        if let Some(mtu) = mtu {
            msg.attributes.push(LinkAttribute::Mtu(mtu));
        }
        let mut info = vec![LinkInfo::Kind(InfoKind::Bridge)];
        if vlan_filtering {
            info.push(LinkInfo::Data(InfoData::Bridge(vec![
                InfoBridge::VlanFiltering(true),
            ])));
        }
        msg.attributes.push(LinkAttribute::LinkInfo(info));
        match self.ack(RouteNetlinkMessage::NewLink(msg), NLM_F_CREATE | NLM_F_EXCL) {
            Ok(()) => Ok(true),
            Err(e) if e.errno() == libc::EEXIST => Ok(false),
            Err(e) => Err(Error::wrap(format!("ip link add {name} type bridge"), e)),
        }
    }

    /// `bridge link set dev <index> [hairpin on|off] [isolated on|off]`. The port must already
    /// be enslaved: the kernel hands these to the bridge the port belongs to.
    pub fn bridge_link_set(&self, index: u32, port: &BridgePort) -> Result<()> {
        let mut attrs = Vec::new();
        if let Some(on) = port.hairpin {
            attrs.push(InfoBridgePort::HairpinMode(on));
        }
        if let Some(on) = port.isolated {
            attrs.push(InfoBridgePort::Isolated(on));
        }
        if attrs.is_empty() {
            return Ok(());
        }
        let mut msg = link_message(index);
        msg.attributes.push(LinkAttribute::LinkInfo(vec![
            LinkInfo::PortKind(InfoPortKind::Bridge),
            LinkInfo::PortData(InfoPortData::BridgePort(attrs)),
        ]));
        self.ack(RouteNetlinkMessage::NewLink(msg), 0)
            .with_context(|| format!("bridge link set dev {index} {port:?}"))
    }

    /// `bridge link set dev <index> [priority P] [cost C] [hairpin on|off]`: a port's STP
    /// settings. The port must already be enslaved.
    pub fn bridge_link_set_stp(&self, index: u32, settings: &BridgePortSettings) -> Result<()> {
        let attrs = settings.attributes();
        if attrs.is_empty() {
            return Ok(());
        }
        let mut msg = link_message(index);
        msg.attributes.push(LinkAttribute::LinkInfo(vec![
            LinkInfo::PortKind(InfoPortKind::Bridge),
            LinkInfo::PortData(InfoPortData::BridgePort(attrs)),
        ]));
        self.ack(RouteNetlinkMessage::NewLink(msg), 0)
            .with_context(|| format!("bridge link set dev {index} {settings:?}"))
    }

    /// `bridge vlan add dev <index> vid <vid> [pvid] [untagged] master`, every VLAN in one
    /// request.
    pub fn bridge_vlan_add(&self, index: u32, vlans: &[PortVlan]) -> Result<()> {
        if vlans.is_empty() {
            return Ok(());
        }
        let msg = port_vlan_message(index, vlans);
        self.ack(RouteNetlinkMessage::SetLink(msg), 0)
            .with_context(|| format!("bridge vlan add dev {index} vid {}", vids_text(vlans)))
    }

    /// `bridge vlan del dev <index> vid <vid> master`, every VLAN in one request.
    pub fn bridge_vlan_del(&self, index: u32, vlans: &[PortVlan]) -> Result<()> {
        if vlans.is_empty() {
            return Ok(());
        }
        let msg = port_vlan_message(index, vlans);
        self.ack(RouteNetlinkMessage::DelLink(msg), 0)
            .with_context(|| format!("bridge vlan del dev {index} vid {}", vids_text(vlans)))
    }

    /// `bridge vlan show dev <index>`. The kernel only reports port VLANs in a dump of every
    /// bridge port, so this is for CHECK and tests, not for the ADD path.
    pub fn bridge_vlan_show(&self, index: u32) -> Result<Vec<PortVlan>> {
        Ok(self
            .bridge_vlan_show_all()
            .with_context(|| format!("bridge vlan show dev {index}"))?
            .remove(&index)
            .unwrap_or_default())
    }

    /// `bridge vlan show`: every bridge port's VLANs (sorted) by the port's index, in one dump.
    pub fn bridge_vlan_show_all(&self) -> Result<BTreeMap<u32, Vec<PortVlan>>> {
        let mut req = LinkMessage::default();
        req.header.interface_family = AddressFamily::Bridge;
        req.attributes
            .push(LinkAttribute::ExtMask(vec![LinkExtentMask::Brvlan]));
        let replies = self
            .dump(RouteNetlinkMessage::GetLink(req))
            .context("bridge vlan show")?;
        let mut ports = BTreeMap::new();
        for reply in replies {
            let RouteNetlinkMessage::NewLink(msg) = reply else {
                continue;
            };
            let vlans: &mut Vec<PortVlan> = ports.entry(msg.header.index).or_default();
            for attr in msg.attributes {
                let LinkAttribute::AfSpecBridge(spec) = attr else {
                    continue;
                };
                let mut range_start = None;
                for entry in spec {
                    let AfSpecBridge::VlanInfo(info) = entry else {
                        continue;
                    };
                    let one = |vid| PortVlan {
                        vid,
                        pvid: info.flags.contains(BridgeVlanInfoFlags::Pvid),
                        untagged: info.flags.contains(BridgeVlanInfoFlags::Untagged),
                    };
                    if info.flags.contains(BridgeVlanInfoFlags::RangeBegin) {
                        range_start = Some(info.vid);
                    } else if info.flags.contains(BridgeVlanInfoFlags::RangeEnd) {
                        let start = range_start.take().unwrap_or(info.vid);
                        vlans.extend((start..=info.vid).map(one));
                    } else {
                        vlans.push(one(info.vid));
                    }
                }
            }
            vlans.sort_unstable();
        }
        Ok(ports)
    }

    /// `ip link show master <index>`: the bridge's ports, filtered by the kernel.
    pub fn link_list_ports(&self, master: u32) -> Result<Vec<Link>> {
        let mut req = LinkMessage::default();
        req.attributes.push(LinkAttribute::Controller(master));
        let replies = self
            .dump(RouteNetlinkMessage::GetLink(req))
            .with_context(|| format!("ip link show master {master}"))?;
        Ok(replies
            .into_iter()
            .filter_map(|m| match m {
                RouteNetlinkMessage::NewLink(link) => Some(Link::from_message(link)),
                _ => None,
            })
            // Kernels before 4.20 ignore the filter.
            .filter(|l| l.master == Some(master))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(flags: BridgeVlanInfoFlags, vid: u16) -> AfSpecBridge {
        AfSpecBridge::VlanInfo(BridgeVlanInfo { flags, vid })
    }

    #[test]
    fn consecutive_tagged_vlans_become_one_range() {
        let vlans: Vec<PortVlan> = [10, 11, 12, 20].into_iter().map(PortVlan::tagged).collect();
        let none = BridgeVlanInfoFlags::empty();
        assert_eq!(
            vlan_infos(&vlans),
            vec![
                info(BridgeVlanInfoFlags::RangeBegin, 10),
                info(BridgeVlanInfoFlags::RangeEnd, 12),
                info(none, 20),
            ]
        );
    }

    #[test]
    fn the_pvid_stays_out_of_ranges() {
        let vlans = [
            PortVlan::access(5),
            PortVlan::tagged(6),
            PortVlan::tagged(7),
        ];
        let access = BridgeVlanInfoFlags::Pvid | BridgeVlanInfoFlags::Untagged;
        assert_eq!(
            vlan_infos(&vlans),
            vec![
                info(access, 5),
                info(BridgeVlanInfoFlags::RangeBegin, 6),
                info(BridgeVlanInfoFlags::RangeEnd, 7),
            ]
        );
    }
}
