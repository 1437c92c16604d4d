//! The desired state as this crate understands it: the interfaces with the sections it
//! supports, and the routes. Values are as nmstate gives them (seconds, names); the plan turns
//! them into what the kernel takes.

use std::net::IpAddr;

use cni_common::mac::MacAddr;
use ipnetwork::IpNetwork;

/// A desired state, parsed and checked for fields we do not support (nothing touched yet).
#[derive(Debug, Clone, PartialEq)]
pub struct DesiredState {
    pub(crate) interfaces: Vec<Iface>,
    pub(crate) routes: Vec<RouteWant>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IfaceType {
    Ethernet,
    Veth,
    LinuxBridge,
    Vlan,
    Bond,
    Dummy,
    /// Whatever the existing link is.
    Unknown,
}

impl IfaceType {
    pub(crate) fn nmstate_name(self) -> &'static str {
        match self {
            IfaceType::Ethernet => "ethernet",
            IfaceType::Veth => "veth",
            IfaceType::LinuxBridge => "linux-bridge",
            IfaceType::Vlan => "vlan",
            IfaceType::Bond => "bond",
            IfaceType::Dummy => "dummy",
            IfaceType::Unknown => "unknown",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IfaceState {
    Up,
    Down,
    Absent,
}

/// One entry of `interfaces`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Iface {
    pub name: String,
    pub kind: IfaceType,
    pub state: IfaceState,
    pub description: Option<String>,
    pub mtu: Option<u32>,
    pub mac: Option<MacAddr>,
    pub ipv4: Option<IpConf>,
    pub ipv6: Option<IpConf>,
    pub bridge: Option<BridgeConf>,
    pub vlan: Option<(String, u16)>,
    pub bond: Option<BondConf>,
    pub veth_peer: Option<String>,
}

/// `ipv4` / `ipv6`: `enabled` and a static `address` list.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct IpConf {
    pub enabled: Option<bool>,
    pub addresses: Option<Vec<IpNetwork>>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct BridgeConf {
    pub stp: Option<bool>,
    /// Seconds, as nmstate gives them.
    pub forward_delay: Option<u32>,
    pub hello_time: Option<u32>,
    pub max_age: Option<u32>,
    pub priority: Option<u16>,
    pub ageing_time: Option<u32>,
    pub multicast_snooping: Option<bool>,
    /// The exact set of ports, when given.
    pub ports: Option<Vec<BridgePortConf>>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct BridgePortConf {
    pub name: String,
    pub stp_priority: Option<u16>,
    pub stp_path_cost: Option<u32>,
    pub stp_hairpin_mode: Option<bool>,
    pub vlan: Option<PortVlanConf>,
}

/// A port's `vlan`: the VLANs it carries, as the bridge's VLAN table will hold them.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct PortVlanConf {
    pub trunk: bool,
    pub tag: Option<u16>,
    pub enable_native: bool,
    pub trunk_tags: Vec<(u16, u16)>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct BondConf {
    pub mode: Option<u8>,
    pub miimon: Option<u32>,
    pub updelay: Option<u32>,
    pub downdelay: Option<u32>,
    pub min_links: Option<u32>,
    pub ports: Option<Vec<String>>,
}

/// One entry of `routes.config`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RouteWant {
    pub destination: Option<IpNetwork>,
    pub next_hop_address: Option<IpAddr>,
    pub next_hop_interface: Option<String>,
    pub metric: Option<u32>,
    pub table: Option<u32>,
    pub absent: bool,
}

impl DesiredState {
    /// Names of the interfaces it names (for logs and for the NNS filter): the interfaces, their
    /// ports and VLAN bases, and the routes' next-hop interfaces; sorted, once each.
    pub fn interface_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for iface in &self.interfaces {
            names.push(iface.name.clone());
            names.extend(iface.port_names());
            names.extend(iface.vlan.as_ref().map(|(base, _)| base.clone()));
            names.extend(iface.veth_peer.clone());
        }
        names.extend(
            self.routes
                .iter()
                .filter_map(|r| r.next_hop_interface.clone()),
        );
        names.sort_unstable();
        names.dedup();
        names
    }
}

impl Iface {
    /// The exact port set, when the bridge or bond gives one.
    pub(crate) fn port_names(&self) -> Vec<String> {
        self.ports().unwrap_or_default()
    }

    pub(crate) fn ports(&self) -> Option<Vec<String>> {
        if let Some(ports) = self.bridge.as_ref().and_then(|b| b.ports.as_ref()) {
            return Some(ports.iter().map(|p| p.name.clone()).collect());
        }
        self.bond.as_ref().and_then(|b| b.ports.clone())
    }
}

/// nmstate's bond modes, names and numbers.
pub(super) fn bond_mode(s: &str) -> Option<u8> {
    Some(match s {
        "balance-rr" | "0" => 0,
        "active-backup" | "1" => 1,
        "balance-xor" | "2" => 2,
        "broadcast" | "3" => 3,
        "802.3ad" | "lacp" | "4" => 4,
        "balance-tlb" | "5" => 5,
        "balance-alb" | "6" => 6,
        _ => return None,
    })
}

pub(crate) fn bond_mode_name(mode: u8) -> &'static str {
    match mode {
        0 => "balance-rr",
        1 => "active-backup",
        2 => "balance-xor",
        3 => "broadcast",
        4 => "802.3ad",
        5 => "balance-tlb",
        6 => "balance-alb",
        _ => "unknown",
    }
}
