//! `ip -d link show`: a link with its kind's settings (bridge, bridge port, bond, VLAN) and
//! whether its peer lives in another namespace. For whoever reads a whole node's state (the
//! node agent's network state), not for the ADD path.

use netlink_packet_route::link::{
    BridgeStpState, InfoBond, InfoBridge, InfoBridgePort, InfoData, InfoKind, InfoPortData,
    InfoVlan, LinkAttribute, LinkInfo, LinkMessage,
};
use netlink_packet_route::RouteNetlinkMessage;
use serde::{Deserialize, Serialize};
use std::fmt;

use super::{Link, Netlink};
use crate::error::{Context, Error, Result};

/// A bridge's own settings, in the kernel's units: times in hundredths of a second (clock_t).
/// None leaves a setting alone when setting, and is never None when read back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BridgeSettings {
    /// STP on (kernel STP) or off.
    pub stp: Option<bool>,
    pub forward_delay: Option<u32>,
    pub hello_time: Option<u32>,
    pub max_age: Option<u32>,
    pub priority: Option<u16>,
    pub ageing_time: Option<u32>,
    pub multicast_snooping: Option<bool>,
    pub vlan_filtering: Option<bool>,
}

impl BridgeSettings {
    fn attributes(&self) -> Vec<InfoBridge> {
        let mut attrs = Vec::new();
        if let Some(on) = self.stp {
            attrs.push(InfoBridge::StpState(if on {
                BridgeStpState::KernelStp
            } else {
                BridgeStpState::Disabled
            }));
        }
        let times = [
            (self.forward_delay, InfoBridge::ForwardDelay as fn(u32) -> _),
            (self.hello_time, InfoBridge::HelloTime),
            (self.max_age, InfoBridge::MaxAge),
            (self.ageing_time, InfoBridge::AgeingTime),
        ];
        attrs.extend(times.into_iter().filter_map(|(v, f)| v.map(f)));
        attrs.extend(self.priority.map(InfoBridge::Priority));
        attrs.extend(self.multicast_snooping.map(InfoBridge::MulticastSnooping));
        attrs.extend(self.vlan_filtering.map(InfoBridge::VlanFiltering));
        attrs
    }

    fn read(attrs: &[InfoBridge]) -> BridgeSettings {
        let mut s = BridgeSettings::default();
        for attr in attrs {
            match attr {
                InfoBridge::StpState(state) => s.stp = Some(*state != BridgeStpState::Disabled),
                InfoBridge::ForwardDelay(v) => s.forward_delay = Some(*v),
                InfoBridge::HelloTime(v) => s.hello_time = Some(*v),
                InfoBridge::MaxAge(v) => s.max_age = Some(*v),
                InfoBridge::AgeingTime(v) => s.ageing_time = Some(*v),
                InfoBridge::Priority(v) => s.priority = Some(*v),
                InfoBridge::MulticastSnooping(v) => s.multicast_snooping = Some(*v),
                InfoBridge::VlanFiltering(v) => s.vlan_filtering = Some(*v),
                _ => {}
            }
        }
        s
    }
}

/// The set fields as `name value`, comma-separated: how a settings change reads in a log or
/// an error.
fn write_fields(f: &mut fmt::Formatter<'_>, fields: &[(&str, Option<String>)]) -> fmt::Result {
    let set: Vec<String> = fields
        .iter()
        .filter_map(|(name, value)| value.as_ref().map(|v| format!("{name} {v}")))
        .collect();
    f.write_str(&set.join(", "))
}

fn text<T: ToString>(v: Option<T>) -> Option<String> {
    v.map(|v| v.to_string())
}

/// Times in hundredths of a second, as the kernel has them.
impl fmt::Display for BridgeSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_fields(
            f,
            &[
                ("stp", text(self.stp)),
                ("forward_delay", text(self.forward_delay)),
                ("hello_time", text(self.hello_time)),
                ("max_age", text(self.max_age)),
                ("priority", text(self.priority)),
                ("ageing_time", text(self.ageing_time)),
                ("multicast_snooping", text(self.multicast_snooping)),
                ("vlan_filtering", text(self.vlan_filtering)),
            ],
        )
    }
}

/// A bridge port's STP settings: `bridge link set dev <port> priority P cost C hairpin on|off`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BridgePortSettings {
    pub priority: Option<u16>,
    pub cost: Option<u32>,
    pub hairpin: Option<bool>,
}

impl fmt::Display for BridgePortSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_fields(
            f,
            &[
                ("priority", text(self.priority)),
                ("cost", text(self.cost)),
                ("hairpin", text(self.hairpin)),
            ],
        )
    }
}

impl BridgePortSettings {
    pub(super) fn attributes(&self) -> Vec<InfoBridgePort> {
        let mut attrs = Vec::new();
        attrs.extend(self.priority.map(InfoBridgePort::Priority));
        attrs.extend(self.cost.map(InfoBridgePort::Cost));
        attrs.extend(self.hairpin.map(InfoBridgePort::HairpinMode));
        attrs
    }

    fn read(attrs: &[InfoBridgePort]) -> BridgePortSettings {
        let mut s = BridgePortSettings::default();
        for attr in attrs {
            match attr {
                InfoBridgePort::Priority(v) => s.priority = Some(*v),
                InfoBridgePort::Cost(v) => s.cost = Some(*v),
                InfoBridgePort::HairpinMode(v) => s.hairpin = Some(*v),
                _ => {}
            }
        }
        s
    }
}

/// A bond's mode and link monitoring: `ip link add/set <name> type bond mode M miimon N ...`.
/// The mode is the kernel's number (0 balance-rr ... 6 balance-alb); times in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BondSettings {
    pub mode: Option<u8>,
    pub miimon: Option<u32>,
    pub updelay: Option<u32>,
    pub downdelay: Option<u32>,
    pub min_links: Option<u32>,
}

impl fmt::Display for BondSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_fields(
            f,
            &[
                ("mode", text(self.mode)),
                ("miimon", text(self.miimon)),
                ("updelay", text(self.updelay)),
                ("downdelay", text(self.downdelay)),
                ("min_links", text(self.min_links)),
            ],
        )
    }
}

impl BondSettings {
    pub(super) fn attributes(&self) -> Vec<InfoBond> {
        let mut attrs = Vec::new();
        attrs.extend(self.mode.map(|m| InfoBond::Mode(m.into())));
        attrs.extend(self.miimon.map(InfoBond::MiiMon));
        attrs.extend(self.updelay.map(InfoBond::UpDelay));
        attrs.extend(self.downdelay.map(InfoBond::DownDelay));
        attrs.extend(self.min_links.map(InfoBond::MinLinks));
        attrs
    }

    fn read(attrs: &[InfoBond]) -> BondSettings {
        let mut s = BondSettings::default();
        for attr in attrs {
            match attr {
                InfoBond::Mode(m) => s.mode = Some(u8::from(*m)),
                InfoBond::MiiMon(v) => s.miimon = Some(*v),
                InfoBond::UpDelay(v) => s.updelay = Some(*v),
                InfoBond::DownDelay(v) => s.downdelay = Some(*v),
                InfoBond::MinLinks(v) => s.min_links = Some(*v),
                _ => {}
            }
        }
        s
    }
}

/// One link as `ip -d link show` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkDetails {
    pub link: Link,
    /// IFLA_LINK_NETNSID: the peer (veth) or parent lives in another namespace.
    pub peer_netnsid: Option<i32>,
    pub bridge: Option<BridgeSettings>,
    /// Set when the link is a bridge port.
    pub bridge_port: Option<BridgePortSettings>,
    pub bond: Option<BondSettings>,
    /// A VLAN link's ID; its base is `link.link`.
    pub vlan_id: Option<u16>,
}

impl LinkDetails {
    fn from_message(msg: LinkMessage) -> LinkDetails {
        let mut details = LinkDetails {
            link: Link::from_message(msg.clone()),
            peer_netnsid: None,
            bridge: None,
            bridge_port: None,
            bond: None,
            vlan_id: None,
        };
        for attr in msg.attributes {
            match attr {
                LinkAttribute::LinkNetNsId(id) => details.peer_netnsid = Some(id),
                LinkAttribute::LinkInfo(infos) => {
                    for info in infos {
                        match info {
                            LinkInfo::Data(InfoData::Bridge(a)) => {
                                details.bridge = Some(BridgeSettings::read(&a))
                            }
                            LinkInfo::Data(InfoData::Bond(a)) => {
                                details.bond = Some(BondSettings::read(&a))
                            }
                            LinkInfo::Data(InfoData::Vlan(a)) => {
                                details.vlan_id = a.iter().find_map(|v| match v {
                                    InfoVlan::Id(id) => Some(*id),
                                    _ => None,
                                })
                            }
                            LinkInfo::PortData(InfoPortData::BridgePort(a)) => {
                                details.bridge_port = Some(BridgePortSettings::read(&a))
                            }
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        details
    }
}

impl Netlink {
    /// `ip -d link show`: every link of the namespace with its kind's settings.
    pub fn link_list_details(&self) -> Result<Vec<LinkDetails>> {
        let replies = self
            .dump(RouteNetlinkMessage::GetLink(LinkMessage::default()))
            .context("ip -d link show")?;
        Ok(replies
            .into_iter()
            .filter_map(|m| match m {
                RouteNetlinkMessage::NewLink(link) => Some(LinkDetails::from_message(link)),
                _ => None,
            })
            .collect())
    }

    /// `ip link set <index> type bridge [stp_state S] [forward_delay F] ...`: only the settings
    /// that are Some.
    pub fn bridge_set(&self, index: u32, settings: &BridgeSettings) -> Result<()> {
        let attrs = settings.attributes();
        if attrs.is_empty() {
            return Ok(());
        }
        self.set_kind_data(index, "bridge", InfoData::Bridge(attrs))
            .with_context(|| format!("ip link set {index} type bridge {settings}"))
    }

    /// `ip link add <name> type bond [mode M] [miimon N] ...`.
    pub fn link_add_bond(&self, name: &str, settings: &BondSettings) -> Result<Link> {
        let mut info = vec![LinkInfo::Kind(InfoKind::Bond)];
        let attrs = settings.attributes();
        if !attrs.is_empty() {
            info.push(LinkInfo::Data(InfoData::Bond(attrs)));
        }
        self.link_add(name, None, info)
    }

    /// `ip link set <index> type bond [mode M] [miimon N] ...`: only the settings that are Some.
    pub fn bond_set(&self, index: u32, settings: &BondSettings) -> Result<()> {
        let attrs = settings.attributes();
        if attrs.is_empty() {
            return Ok(());
        }
        self.set_kind_data(index, "bond", InfoData::Bond(attrs))
            .with_context(|| format!("ip link set {index} type bond {settings}"))
    }

    /// An RTM_NEWLINK on an existing link carrying its kind and kind data: how `ip link set
    /// type <kind> ...` changes kind settings.
    fn set_kind_data(&self, index: u32, kind: &str, data: InfoData) -> Result<()> {
        let mut msg = super::link::link_message(index);
        msg.attributes.push(LinkAttribute::LinkInfo(vec![
            LinkInfo::Kind(kind.into()),
            LinkInfo::Data(data),
        ]));
        self.ack(RouteNetlinkMessage::NewLink(msg), 0)
            .map_err(Error::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bridge_settings_read_back_what_they_set() {
        let settings = BridgeSettings {
            stp: Some(true),
            forward_delay: Some(1500),
            hello_time: Some(200),
            max_age: Some(2000),
            priority: Some(4096),
            ageing_time: Some(30000),
            multicast_snooping: Some(false),
            vlan_filtering: Some(true),
        };
        assert_eq!(BridgeSettings::read(&settings.attributes()), settings);
    }

    #[test]
    fn unset_bridge_settings_send_nothing() {
        assert!(BridgeSettings::default().attributes().is_empty());
    }

    #[test]
    fn a_settings_change_reads_as_its_set_fields_only() {
        let change = BridgeSettings {
            stp: Some(false),
            ageing_time: Some(30000),
            ..BridgeSettings::default()
        };
        assert_eq!(change.to_string(), "stp false, ageing_time 30000");
    }

    #[test]
    fn bond_settings_read_back_what_they_set() {
        let settings = BondSettings {
            mode: Some(1),
            miimon: Some(100),
            updelay: Some(200),
            downdelay: Some(300),
            min_links: Some(1),
        };
        assert_eq!(BondSettings::read(&settings.attributes()), settings);
    }

    #[test]
    fn port_settings_read_back_what_they_set() {
        let settings = BridgePortSettings {
            priority: Some(32),
            cost: Some(100),
            hairpin: Some(false),
        };
        assert_eq!(BridgePortSettings::read(&settings.attributes()), settings);
    }
}
