//! isGateway / isDefaultGateway: the bridge (or its `<bridge>.<vlan>` interface) holds the
//! subnet's gateway address and the node forwards for the containers.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use cni_common::netlink::{Link, Netlink};
use cni_common::result::{CniResult, Route};
use cni_common::sysctl::{sysctl_read, sysctl_write};
use cni_common::{Error, Result};
use ipnetwork::IpNetwork;

/// The first host of the address's subnet: the reference's default gateway (calcGatewayIP).
pub fn first_host(addr: &IpNetwork) -> IpAddr {
    match addr {
        IpNetwork::V4(n) => IpAddr::V4(Ipv4Addr::from(u32::from(n.network()).wrapping_add(1))),
        IpNetwork::V6(n) => IpAddr::V6(Ipv6Addr::from(u128::from(n.network()).wrapping_add(1))),
    }
}

/// Gives every address without a gateway the first host of its subnet, adds a default route
/// per family when `default_route` and IPAM gave none, and returns the gateway addresses the
/// bridge must hold (gateway IP with the subnet's prefix), without duplicates.
pub fn assign_gateways(result: &mut CniResult, default_route: bool) -> Vec<IpNetwork> {
    let mut gateways: Vec<IpNetwork> = Vec::new();
    let mut defaults = Vec::new();
    for ip in &mut result.ips {
        let gw = *ip.gateway.get_or_insert_with(|| first_host(&ip.address));
        if let Ok(net) = IpNetwork::new(gw, ip.address.prefix()) {
            if !gateways.contains(&net) {
                gateways.push(net);
            }
        }
        if default_route {
            defaults.push(gw);
        }
    }
    for gw in defaults {
        let dst = match gw {
            IpAddr::V4(_) => IpNetwork::V4(ipnetwork::Ipv4Network::from(Ipv4Addr::UNSPECIFIED)),
            IpAddr::V6(_) => IpNetwork::V6(ipnetwork::Ipv6Network::from(Ipv6Addr::UNSPECIFIED)),
        };
        let dst = IpNetwork::new(dst.ip(), 0).unwrap_or(dst);
        let has_default = result
            .routes
            .iter()
            .any(|r| r.dst.prefix() == 0 && r.dst.is_ipv4() == dst.is_ipv4());
        if !has_default {
            result.routes.push(Route {
                dst,
                gw: Some(gw),
                ..Route::plain()
            });
        }
    }
    gateways
}

/// `ip addr add <gateway> dev <link>` unless it is there (ensureAddr). Another IPv4 address, or
/// an IPv6 one in an overlapping subnet, is an error unless `force`, which deletes it. The link's
/// MAC is then set to itself: a bridge with an explicit MAC stops taking its lowest port's
/// address, which would change as ports come and go.
pub fn ensure_addr(nl: &Netlink, link: &Link, gateway: IpNetwork, force: bool) -> Result<()> {
    for have in nl.addr_list(link.index)? {
        if have == gateway {
            return Ok(());
        }
        if have.is_ipv4() != gateway.is_ipv4() {
            continue;
        }
        let overlaps = have.contains(gateway.ip()) || gateway.contains(have.ip());
        if gateway.is_ipv4() || overlaps {
            if !force {
                return Err(Error::system(format!(
                    "{} already has address {have}, not the gateway {gateway} (set forceAddress to replace it)",
                    link.name
                )));
            }
            nl.addr_del(link.index, have)?;
        }
    }
    match nl.addr_add(link.index, gateway) {
        // Another ADD put it there meanwhile.
        Err(e) if e.errno() == libc::EEXIST => {}
        other => other?,
    }
    if let Some(mac) = link.mac.filter(|m| !m.is_zero()) {
        nl.link_set_address(link.index, &mac)?;
    }
    Ok(())
}

/// `sysctl net.ipv4.ip_forward=1` / `net.ipv6.conf.all.forwarding=1` for the gateways'
/// families, written only when not already on.
pub fn enable_ip_forward(gateways: &[IpNetwork]) -> Result<()> {
    let mut keys = Vec::new();
    if gateways.iter().any(IpNetwork::is_ipv4) {
        keys.push("net/ipv4/ip_forward");
    }
    if gateways.iter().any(IpNetwork::is_ipv6) {
        keys.push("net/ipv6/conf/all/forwarding");
    }
    for key in keys {
        if sysctl_read(key)?.trim() != "1" {
            sysctl_write(key, "1")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cni_common::result::IpConfig;

    fn ip(address: &str, gateway: Option<&str>) -> IpConfig {
        IpConfig {
            address: address.parse().expect("address"),
            gateway: gateway.map(|g| g.parse().expect("gateway")),
            interface: Some(2),
        }
    }

    #[test]
    fn the_gateway_defaults_to_the_first_host_of_the_subnet() {
        assert_eq!(
            first_host(&"10.1.2.77/16".parse().expect("net")).to_string(),
            "10.1.0.1"
        );
        assert_eq!(
            first_host(&"fd00:1::9/64".parse().expect("net")).to_string(),
            "fd00:1::1"
        );
    }

    #[test]
    fn gateways_are_filled_in_once_per_subnet_with_default_routes() {
        let mut result = CniResult {
            ips: vec![
                ip("10.1.0.5/24", None),
                ip("10.1.0.6/24", None),
                ip("fd00::5/64", Some("fd00::fe")),
            ],
            ..CniResult::default()
        };
        let gws = assign_gateways(&mut result, true);
        let gws: Vec<String> = gws.iter().map(ToString::to_string).collect();
        assert_eq!(gws, vec!["10.1.0.1/24", "fd00::fe/64"]);
        assert_eq!(
            result.ips[1].gateway.map(|g| g.to_string()).as_deref(),
            Some("10.1.0.1")
        );
        let routes: Vec<String> = result
            .routes
            .iter()
            .map(|r| format!("{} via {:?}", r.dst, r.gw))
            .collect();
        assert_eq!(
            routes,
            vec!["0.0.0.0/0 via Some(10.1.0.1)", "::/0 via Some(fd00::fe)"]
        );
    }

    #[test]
    fn an_ipam_default_route_is_kept() {
        let mut result = CniResult {
            ips: vec![ip("10.1.0.5/24", None)],
            routes: vec![Route {
                dst: "0.0.0.0/0".parse().expect("dst"),
                gw: Some("10.1.0.254".parse().expect("gw")),
                ..Route::plain()
            }],
            ..CniResult::default()
        };
        assign_gateways(&mut result, true);
        assert_eq!(result.routes.len(), 1);
    }
}
