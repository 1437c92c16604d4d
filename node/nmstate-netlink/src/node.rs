//! The node as the kernel has it: every link with what this crate can change on it, and the
//! routes. Read in one go, before planning, after applying (to verify) and for the report.

use std::collections::BTreeMap;
use std::net::IpAddr;

use cni_common::mac::MacAddr;
use cni_common::netlink::{
    BondSettings, BridgePortSettings, BridgeSettings, LinkDetails, Netlink, PortVlan, RouteInfo,
    RT_TABLE_LOCAL,
};
use ipnetwork::IpNetwork;
use serde::{Deserialize, Serialize};

use crate::error::{Context, READING};
use crate::Error;

/// RTPROT_KERNEL: routes the kernel derives from addresses; they come and go with them.
pub(crate) const PROTO_KERNEL: u8 = 2;

/// What kind of link, as far as this crate cares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Kind {
    /// A kind-less link with a MAC: a NIC.
    Ethernet,
    Veth,
    Bridge,
    Bond,
    Vlan,
    Dummy,
    Loopback,
    Other(String),
}

impl Kind {
    fn of(details: &LinkDetails) -> Kind {
        match details.link.kind.as_deref() {
            Some("veth") => Kind::Veth,
            Some("bridge") => Kind::Bridge,
            Some("bond") => Kind::Bond,
            Some("vlan") => Kind::Vlan,
            Some("dummy") => Kind::Dummy,
            Some(other) => Kind::Other(other.to_string()),
            None if details.link.name == "lo" => Kind::Loopback,
            None => Kind::Ethernet,
        }
    }

    /// The kernel's name for it (`ip link add type <kind>`).
    pub(crate) fn kernel_name(&self) -> &str {
        match self {
            Kind::Ethernet => "ethernet",
            Kind::Veth => "veth",
            Kind::Bridge => "bridge",
            Kind::Bond => "bond",
            Kind::Vlan => "vlan",
            Kind::Dummy => "dummy",
            Kind::Loopback => "loopback",
            Kind::Other(k) => k,
        }
    }
}

/// One link as it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LinkState {
    pub index: u32,
    pub name: String,
    pub kind: Kind,
    pub mtu: u32,
    pub mac: Option<MacAddr>,
    /// IFLA_IFALIAS, None when empty.
    pub alias: Option<String>,
    pub up: bool,
    pub master: Option<String>,
    /// The veth peer's name when it is in this namespace.
    pub veth_peer: Option<String>,
    /// The peer (veth) or parent is in another namespace: a pod's veth.
    pub foreign_peer: bool,
    /// A VLAN link's base and ID.
    pub vlan: Option<(String, u16)>,
    pub addresses: Vec<IpNetwork>,
    pub bridge: Option<BridgeSettings>,
    pub port: Option<BridgePortSettings>,
    /// A bridge port's VLANs (kept by the kernel even while its bridge does not filter).
    pub port_vlans: Option<Vec<PortVlan>>,
    pub bond: Option<BondSettings>,
}

#[cfg(test)]
impl RouteState {
    /// A static route in the main table to `dst` through `oif`: for tests.
    pub(crate) fn for_test(dst: &str, oif: &str) -> RouteState {
        RouteState {
            dst: dst.parse().expect("network"),
            gw: None,
            oif: Some(oif.to_string()),
            table: cni_common::netlink::RT_TABLE_MAIN,
            metric: None,
            protocol: 3,
            scope: 253,
        }
    }
}

#[cfg(test)]
impl LinkState {
    /// A link that is up, MTU 1500, nothing else set: for tests to adjust.
    pub(crate) fn for_test(name: &str, kind: Kind) -> LinkState {
        LinkState {
            index: 0,
            name: name.to_string(),
            kind,
            mtu: 1500,
            mac: None,
            alias: None,
            up: true,
            master: None,
            veth_peer: None,
            foreign_peer: false,
            vlan: None,
            addresses: Vec::new(),
            bridge: None,
            port: None,
            port_vlans: None,
            bond: None,
        }
    }
}

/// One route as it is, its link by name (indexes change when a link is re-created).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RouteState {
    pub dst: IpNetwork,
    pub gw: Option<IpAddr>,
    pub oif: Option<String>,
    pub table: u32,
    pub metric: Option<u32>,
    pub protocol: u8,
    pub scope: u8,
}

/// The node: links by name, routes (the local table left out).
#[derive(Debug, Clone, Default)]
pub(crate) struct NodeState {
    pub links: BTreeMap<String, LinkState>,
    pub routes: Vec<RouteState>,
}

impl NodeState {
    pub(crate) fn read(nl: &Netlink) -> Result<NodeState, Error> {
        let details = nl.link_list_details().context(READING)?;
        let names: BTreeMap<u32, String> = details
            .iter()
            .map(|d| (d.link.index, d.link.name.clone()))
            .collect();
        let bridges: Vec<u32> = details
            .iter()
            .filter(|d| d.bridge.is_some())
            .map(|d| d.link.index)
            .collect();
        // The kernel keeps a port's VLAN table whether or not its bridge filters: a rollback
        // that turns filtering off must put the table back too.
        let mut vlan_tables = nl.bridge_vlan_show_all().context(READING)?;
        // Every address in one dump, not one per link (a node may have hundreds of links).
        let mut addresses: BTreeMap<u32, Vec<IpNetwork>> = BTreeMap::new();
        for (index, addr) in nl.addr_list_all().context(READING)? {
            addresses.entry(index).or_default().push(addr);
        }
        let mut links = BTreeMap::new();
        for d in &details {
            let kind = Kind::of(d);
            let foreign_peer = d.peer_netnsid.is_some();
            let master = d.link.master.and_then(|m| names.get(&m).cloned());
            let peer = d.link.link.and_then(|l| names.get(&l).cloned());
            let port_vlans = match d.link.master {
                Some(m) if bridges.contains(&m) => {
                    Some(vlan_tables.remove(&d.link.index).unwrap_or_default())
                }
                _ => None,
            };
            let state = LinkState {
                index: d.link.index,
                name: d.link.name.clone(),
                mtu: d.link.mtu,
                mac: d.link.mac,
                alias: d.link.alias.clone().filter(|a| !a.is_empty()),
                up: d.link.up,
                master,
                veth_peer: (kind == Kind::Veth && !foreign_peer)
                    .then(|| peer.clone())
                    .flatten(),
                foreign_peer,
                vlan: match (kind == Kind::Vlan, d.vlan_id, &peer) {
                    (true, Some(id), Some(base)) if !foreign_peer => Some((base.clone(), id)),
                    _ => None,
                },
                addresses: addresses.remove(&d.link.index).unwrap_or_default(),
                bridge: d.bridge,
                port: d.bridge_port,
                port_vlans,
                bond: d.bond,
                kind,
            };
            links.insert(state.name.clone(), state);
        }
        let routes = nl
            .route_list_all()
            .context(READING)?
            .into_iter()
            .filter(|r| r.table != RT_TABLE_LOCAL)
            .map(|r: RouteInfo| {
                // A multipath route goes through several links, not its first next hop's: no
                // change of that link selects it, and it is reported without a next hop.
                let (gw, oif) = if r.multipath {
                    (None, None)
                } else {
                    (r.gw, r.oif)
                };
                RouteState {
                    dst: r.dst,
                    gw,
                    oif: oif.and_then(|i| names.get(&i).cloned()),
                    table: r.table,
                    metric: r.metric,
                    protocol: r.protocol,
                    scope: r.scope,
                }
            })
            .collect();
        Ok(NodeState { links, routes })
    }

    /// Links that are pods' ends: veths whose peer is in another namespace.
    pub(crate) fn is_pod_link(&self, name: &str) -> bool {
        self.links
            .get(name)
            .is_some_and(|l| l.kind == Kind::Veth && l.foreign_peer)
    }

    /// The links enslaved to `master`.
    pub(crate) fn ports_of(&self, master: &str) -> Vec<String> {
        self.links
            .values()
            .filter(|l| l.master.as_deref() == Some(master))
            .map(|l| l.name.clone())
            .collect()
    }
}
