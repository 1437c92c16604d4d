//! `ip route`: the routes an IPAM result asks for, added and checked on one link.

use std::net::IpAddr;

use ipnetwork::IpNetwork;
use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteHeader, RouteMessage, RouteMetric, RouteProtocol,
    RouteScope, RouteType,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use super::Netlink;
use crate::error::{Context, Result};

/// One route of `ip route show dev <index>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteEntry {
    pub dst: IpNetwork,
    pub gw: Option<IpAddr>,
    pub table: u32,
}

/// RT_TABLE_UNSPEC: no table (a request that selects every table).
pub const RT_TABLE_UNSPEC: u32 = RouteHeader::RT_TABLE_UNSPEC as u32;
/// RT_TABLE_DEFAULT: the kernel's fallback table, looked up after main.
pub const RT_TABLE_DEFAULT: u32 = libc::RT_TABLE_DEFAULT as u32;
/// RT_TABLE_MAIN: where `ip route add` puts a route without a table.
pub const RT_TABLE_MAIN: u32 = RouteHeader::RT_TABLE_MAIN as u32;
/// RT_TABLE_LOCAL: the kernel's own routes to the node's addresses and broadcasts.
pub const RT_TABLE_LOCAL: u32 = libc::RT_TABLE_LOCAL as u32;

/// One unicast route of `ip route show table all`, with what tells routes apart (table, metric)
/// and who made it (protocol: 2 kernel, 3 boot, 4 static, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteInfo {
    pub dst: IpNetwork,
    /// The gateway; a multipath route's first next hop's, as `/proc/net/route` shows it.
    pub gw: Option<IpAddr>,
    /// The output link; a multipath route's first next hop's.
    pub oif: Option<u32>,
    /// Whether the route has several next hops (RTA_MULTIPATH), of which `gw` and `oif` show
    /// only the first.
    pub multipath: bool,
    pub table: u32,
    /// RTA_PRIORITY; None when the kernel gave none (IPv4 metric 0).
    pub metric: Option<u32>,
    pub protocol: u8,
    pub scope: u8,
}

/// What `ip route add` takes, as a CNI result's route carries it.
#[derive(Debug, Clone, Copy)]
pub struct NewRoute {
    pub dst: IpNetwork,
    pub gw: Option<IpAddr>,
    pub mtu: Option<u32>,
    pub advmss: Option<u32>,
    pub priority: Option<u32>,
    pub table: Option<u32>,
    pub scope: Option<u8>,
}

fn family(ip: &IpAddr) -> AddressFamily {
    match ip {
        IpAddr::V4(_) => AddressFamily::Inet,
        IpAddr::V6(_) => AddressFamily::Inet6,
    }
}

impl Netlink {
    /// `ip route add <dst> [via <gw>] dev <index> [mtu M] [advmss A] [metric P] [table T]
    /// [scope S]`. A route without a gateway is on-link (scope link), as `ip` makes it.
    pub fn route_add(&self, index: u32, route: &NewRoute) -> Result<()> {
        let dst = route.dst;
        let mut msg = RouteMessage::default();
        msg.header.address_family = family(&dst.ip());
        msg.header.destination_prefix_length = dst.prefix();
        msg.header.protocol = RouteProtocol::Boot;
        msg.header.kind = RouteType::Unicast;
        msg.header.scope = match (route.scope, route.gw) {
            (Some(scope), _) => RouteScope::from(scope),
            (None, Some(_)) => RouteScope::Universe,
            (None, None) => RouteScope::Link,
        };
        let table = route.table.unwrap_or(RT_TABLE_MAIN);
        // Tables above 255 only fit the attribute.
        msg.header.table = u8::try_from(table).unwrap_or(RouteHeader::RT_TABLE_UNSPEC);
        msg.attributes.push(RouteAttribute::Table(table));
        // The network address, not a host inside it: the kernel refuses host bits.
        let network =
            IpNetwork::new(dst.network(), dst.prefix()).with_context(|| format!("route {dst}"))?;
        if network.prefix() > 0 {
            msg.attributes
                .push(RouteAttribute::Destination(RouteAddress::from(
                    network.ip(),
                )));
        }
        if let Some(gw) = route.gw {
            msg.attributes
                .push(RouteAttribute::Gateway(RouteAddress::from(gw)));
        }
        msg.attributes.push(RouteAttribute::Oif(index));
        if let Some(priority) = route.priority {
            msg.attributes.push(RouteAttribute::Priority(priority));
        }
        let mut metrics = Vec::new();
        if let Some(mtu) = route.mtu {
            metrics.push(RouteMetric::Mtu(mtu));
        }
        if let Some(advmss) = route.advmss {
            metrics.push(RouteMetric::Advmss(advmss));
        }
        if !metrics.is_empty() {
            msg.attributes.push(RouteAttribute::Metrics(metrics));
        }
        self.ack(
            RouteNetlinkMessage::NewRoute(msg),
            NLM_F_CREATE | NLM_F_EXCL,
        )
        .with_context(|| {
            let via = route.gw.map(|g| format!(" via {g}")).unwrap_or_default();
            format!("ip route add {network}{via} dev {index}")
        })
    }

    /// `ip route show table all dev <index>` for one family: unicast routes only.
    pub fn route_list(&self, index: u32, ipv6: bool) -> Result<Vec<RouteEntry>> {
        let mut req = RouteMessage::default();
        req.header.address_family = if ipv6 {
            AddressFamily::Inet6
        } else {
            AddressFamily::Inet
        };
        // With strict checking the kernel filters by output interface itself.
        req.attributes.push(RouteAttribute::Oif(index));
        let replies = self
            .dump(RouteNetlinkMessage::GetRoute(req))
            .with_context(|| format!("ip route show dev {index}"))?;
        let mut routes = Vec::new();
        for reply in replies {
            let RouteNetlinkMessage::NewRoute(msg) = reply else {
                continue;
            };
            if msg.header.kind != RouteType::Unicast {
                continue;
            }
            let route = route_info(&msg)?;
            // Older kernels ignore the filter; a multipath route, which the filter lets through
            // for any of its links, is no one link's.
            if route.multipath || route.oif != Some(index) {
                continue;
            }
            routes.push(RouteEntry {
                dst: route.dst,
                gw: route.gw,
                table: route.table,
            });
        }
        Ok(routes)
    }
}

impl Netlink {
    /// `ip route show table all` (IPv4 and IPv6): every unicast route of the namespace, in
    /// every table.
    pub fn route_list_all(&self) -> Result<Vec<RouteInfo>> {
        let mut routes = self.route_list_family(false)?;
        routes.extend(self.route_list_family(true)?);
        Ok(routes)
    }

    /// `ip -4 route show table all`, or `ip -6` with `ipv6`: every unicast route of one family,
    /// in every table. The kernel filters by the request's family.
    pub fn route_list_family(&self, ipv6: bool) -> Result<Vec<RouteInfo>> {
        let mut req = RouteMessage::default();
        req.header.address_family = if ipv6 {
            AddressFamily::Inet6
        } else {
            AddressFamily::Inet
        };
        let replies = self
            .dump(RouteNetlinkMessage::GetRoute(req))
            .context("ip route show table all")?;
        let mut routes = Vec::new();
        for reply in replies {
            let RouteNetlinkMessage::NewRoute(msg) = reply else {
                continue;
            };
            if msg.header.kind != RouteType::Unicast {
                continue;
            }
            routes.push(route_info(&msg)?);
        }
        Ok(routes)
    }

    /// `ip route del <dst> [via <gw>] [dev <oif>] [metric M] table T`: the fields that are set
    /// select the route, as iproute2 sends them (any scope, any protocol).
    pub fn route_del(&self, route: &RouteInfo) -> Result<()> {
        let dst = route.dst;
        let mut msg = RouteMessage::default();
        msg.header.address_family = family(&dst.ip());
        msg.header.destination_prefix_length = dst.prefix();
        msg.header.scope = RouteScope::NoWhere;
        msg.header.table = u8::try_from(route.table).unwrap_or(RouteHeader::RT_TABLE_UNSPEC);
        msg.attributes.push(RouteAttribute::Table(route.table));
        if dst.prefix() > 0 {
            msg.attributes
                .push(RouteAttribute::Destination(RouteAddress::from(dst.ip())));
        }
        if let Some(gw) = route.gw {
            msg.attributes
                .push(RouteAttribute::Gateway(RouteAddress::from(gw)));
        }
        if let Some(oif) = route.oif {
            msg.attributes.push(RouteAttribute::Oif(oif));
        }
        if let Some(metric) = route.metric {
            msg.attributes.push(RouteAttribute::Priority(metric));
        }
        self.ack(RouteNetlinkMessage::DelRoute(msg), 0)
            .with_context(|| format!("ip route del {dst} table {}", route.table))
    }
}

/// A kernel route message as [`RouteInfo`].
fn route_info(msg: &RouteMessage) -> Result<RouteInfo> {
    let mut info = RouteInfo {
        dst: IpNetwork::new(unspecified(msg.header.address_family), 0)
            .context("route from the kernel")?,
        gw: None,
        oif: None,
        multipath: false,
        table: u32::from(msg.header.table),
        metric: None,
        protocol: u8::from(msg.header.protocol),
        scope: u8::from(msg.header.scope),
    };
    let mut dst = None;
    let mut first_hop = None;
    for attr in &msg.attributes {
        match attr {
            RouteAttribute::Oif(i) => info.oif = Some(*i),
            RouteAttribute::Destination(a) => dst = route_ip(a),
            RouteAttribute::Gateway(a) => info.gw = route_ip(a),
            RouteAttribute::Table(t) => info.table = *t,
            RouteAttribute::Priority(p) => info.metric = Some(*p),
            RouteAttribute::MultiPath(hops) => first_hop = hops.first(),
            _ => {}
        }
    }
    // A multipath route carries its gateways and links in its next hops only.
    if let (Some(hop), None, None) = (first_hop, info.gw, info.oif) {
        info.multipath = true;
        info.oif = Some(hop.interface_index);
        info.gw = hop.attributes.iter().find_map(|a| match a {
            RouteAttribute::Gateway(a) => route_ip(a),
            _ => None,
        });
    }
    let ip = dst.unwrap_or(info.dst.ip());
    info.dst = IpNetwork::new(ip, msg.header.destination_prefix_length)
        .with_context(|| format!("route {ip} from the kernel"))?;
    Ok(info)
}

fn unspecified(family: AddressFamily) -> IpAddr {
    match family {
        AddressFamily::Inet6 => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
        _ => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
    }
}

fn route_ip(addr: &RouteAddress) -> Option<IpAddr> {
    match addr {
        RouteAddress::Inet(ip) => Some(IpAddr::V4(*ip)),
        RouteAddress::Inet6(ip) => Some(IpAddr::V6(*ip)),
        _ => None,
    }
}
