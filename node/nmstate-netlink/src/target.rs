//! What a link or the routes should become: the plan's goals and the journal's snapshot alike,
//! so that applying and rolling back are the same walk towards a target.

use std::net::IpAddr;

use cni_common::mac::MacAddr;
use cni_common::netlink::{BondSettings, BridgePortSettings, BridgeSettings, PortVlan};
use ipnetwork::IpNetwork;
use serde::{Deserialize, Serialize};

use crate::node::{Kind, LinkState, NodeState, RouteState, PROTO_KERNEL};

/// One link's goal. None leaves a property as it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LinkTarget {
    pub name: String,
    /// What to create when the link is missing.
    pub kind: Kind,
    /// False: delete the link if it is there.
    pub exists: bool,
    pub vlan: Option<(String, u16)>,
    pub veth_peer: Option<String>,
    pub mtu: Option<u32>,
    pub mac: Option<MacAddr>,
    /// Some("") clears the alias.
    pub alias: Option<String>,
    pub up: Option<bool>,
    /// Some("") releases the link from any master.
    pub master: Option<String>,
    /// The exact IPv4 addresses.
    pub ipv4: Option<Vec<IpNetwork>>,
    /// The exact IPv6 addresses (link-local ones aside when `keep_link_local`).
    pub ipv6: Option<Vec<IpNetwork>>,
    pub keep_link_local: bool,
    pub bridge: Option<BridgeSettings>,
    pub port: Option<BridgePortSettings>,
    /// The exact VLANs of a bridge port.
    pub port_vlans: Option<Vec<PortVlan>>,
    pub bond: Option<BondSettings>,
}

impl LinkTarget {
    /// Whether this is an existing bond whose mode it changes (which the kernel allows only
    /// to a bond that is down and has no ports).
    pub(crate) fn changes_bond_mode(&self, node: &NodeState) -> bool {
        let want = self.bond.and_then(|b| b.mode);
        let have = node
            .links
            .get(&self.name)
            .and_then(|l| l.bond)
            .and_then(|b| b.mode);
        want.is_some() && have.is_some() && want != have
    }

    /// A goal that changes nothing yet.
    pub(crate) fn new(name: &str, kind: Kind) -> LinkTarget {
        LinkTarget {
            name: name.to_string(),
            kind,
            exists: true,
            vlan: None,
            veth_peer: None,
            mtu: None,
            mac: None,
            alias: None,
            up: None,
            master: None,
            ipv4: None,
            ipv6: None,
            keep_link_local: false,
            bridge: None,
            port: None,
            port_vlans: None,
            bond: None,
        }
    }

    /// The link exactly as it is now: what a rollback puts back.
    pub(crate) fn as_it_is(link: &LinkState) -> LinkTarget {
        let (v6, v4): (Vec<IpNetwork>, Vec<IpNetwork>) =
            link.addresses.iter().partition(|a| a.is_ipv6());
        LinkTarget {
            name: link.name.clone(),
            kind: link.kind.clone(),
            exists: true,
            vlan: link.vlan.clone(),
            veth_peer: link.veth_peer.clone(),
            mtu: Some(link.mtu),
            mac: link.mac,
            alias: Some(link.alias.clone().unwrap_or_default()),
            up: Some(link.up),
            master: Some(link.master.clone().unwrap_or_default()),
            ipv4: Some(v4),
            ipv6: Some(v6),
            keep_link_local: false,
            bridge: link.bridge,
            port: link.port,
            port_vlans: link.port_vlans.clone(),
            bond: link.bond,
        }
    }

    /// A link that must not be there (it did not exist before).
    pub(crate) fn gone(name: &str, kind: Kind) -> LinkTarget {
        LinkTarget {
            exists: false,
            ..LinkTarget::new(name, kind)
        }
    }
}

/// Selects routes: every field that is set must match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RouteMatch {
    pub dst: Option<IpNetwork>,
    pub gw: Option<IpAddr>,
    pub oif: Option<String>,
    pub metric: Option<u32>,
    pub table: Option<u32>,
}

#[cfg(test)]
impl RouteMatch {
    /// Every route through `oif`: for tests.
    pub(crate) fn on(oif: &str) -> RouteMatch {
        RouteMatch {
            dst: None,
            gw: None,
            oif: Some(oif.to_string()),
            metric: None,
            table: None,
        }
    }
}

impl RouteMatch {
    pub(crate) fn matches(&self, r: &RouteState) -> bool {
        self.dst.is_none_or(|d| d == r.dst)
            && self.gw.is_none_or(|g| Some(g) == r.gw)
            && self.oif.as_ref().is_none_or(|o| Some(o) == r.oif.as_ref())
            && self.metric.is_none_or(|m| Some(m) == r.metric)
            && self.table.is_none_or(|t| t == r.table)
    }
}

/// What the routes should become.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum RouteGoal {
    /// An apply: add these (each one matched by its key), remove what those select (but what
    /// an add selects).
    Change {
        add: Vec<(RouteMatch, RouteState)>,
        remove: Vec<RouteMatch>,
    },
    /// A rollback: remove the routes the apply added (what these keys select, none of which
    /// was there before), put back the routes the apply (or the kernel, with a link or an
    /// address) removed. Other routes are left alone: the kernel or another daemon may have
    /// changed them meanwhile.
    Undo {
        added: Vec<RouteMatch>,
        removed: Vec<RouteState>,
    },
}

impl RouteGoal {
    /// Whether an apply through `links` or with these route keys may remove `r`. Routes the
    /// kernel derives from addresses follow the addresses and are never touched directly.
    pub(crate) fn in_scope(links: &[String], keys: &[RouteMatch], r: &RouteState) -> bool {
        r.protocol != PROTO_KERNEL
            && (r.oif.as_ref().is_some_and(|o| links.contains(o))
                || keys.iter().any(|k| k.matches(r)))
    }
}

/// Two routes are the same route when these agree (protocol and scope are how it was made).
pub(crate) fn same_route(a: &RouteState, b: &RouteState) -> bool {
    a.dst == b.dst && a.gw == b.gw && a.oif == b.oif && a.table == b.table && a.metric == b.metric
}

/// IPv6 link-local (fe80::/10).
pub(crate) fn is_link_local(a: &IpNetwork) -> bool {
    match a {
        IpNetwork::V6(n) => n.ip().segments()[0] & 0xffc0 == 0xfe80,
        IpNetwork::V4(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(dst: &str, oif: &str, protocol: u8) -> RouteState {
        RouteState {
            dst: dst.parse().expect("network"),
            gw: None,
            oif: Some(oif.to_string()),
            table: cni_common::netlink::RT_TABLE_MAIN,
            metric: None,
            protocol,
            scope: 253,
        }
    }

    #[test]
    fn a_match_with_only_a_destination_selects_that_destination_anywhere() {
        let m = RouteMatch {
            dst: Some("10.0.0.0/8".parse().expect("network")),
            gw: None,
            oif: None,
            metric: None,
            table: None,
        };
        assert!(m.matches(&route("10.0.0.0/8", "eth1", 4)));
        assert!(!m.matches(&route("10.1.0.0/16", "eth1", 4)));
    }

    #[test]
    fn kernel_routes_are_never_in_an_applys_scope() {
        let links = vec!["eth1".to_string()];
        assert!(RouteGoal::in_scope(
            &links,
            &[],
            &route("10.0.0.0/8", "eth1", 4)
        ));
        assert!(!RouteGoal::in_scope(
            &links,
            &[],
            &route("10.0.0.0/8", "eth1", PROTO_KERNEL)
        ));
        assert!(!RouteGoal::in_scope(
            &links,
            &[],
            &route("10.0.0.0/8", "eth2", 4)
        ));
    }

    #[test]
    fn link_local_is_fe80_slash_10() {
        assert!(is_link_local(&"fe80::1/64".parse().expect("v6")));
        assert!(is_link_local(&"febf::1/64".parse().expect("v6")));
        assert!(!is_link_local(&"fec0::1/64".parse().expect("v6")));
        assert!(!is_link_local(&"2001:db8::1/64".parse().expect("v6")));
    }
}
