//! isGateway / isDefaultGateway: the bridge (or its `<bridge>.<vlan>` interface) holds the
//! subnet's gateway address and the node forwards for the containers.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use cni_common::naming::AttachmentKey;
use cni_common::netlink::{Link, Netlink, Veth};
use cni_common::result::{CniResult, Route};
use cni_common::sysctl::{sysctl_read, sysctl_write};
use cni_common::{Error, Result, Rollback};
use ipnetwork::IpNetwork;

use crate::config::Settings;
use crate::vlan::set_access_port_vlan;

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

/// `<bridge>.<vid>`: with an access VLAN the gateway address cannot be on the bridge (its own
/// port is not in the VLAN), so it goes on a veth whose peer is an access port of the VLAN.
///
/// It is shared by every pod of the VLAN, so one found is made whole rather than trusted: a kill
/// or a failure half-way may have left its port outside the VLAN, or down. One this ADD creates is
/// registered in `rollback`; `own_port` is the ADD's own bridge port.
pub fn ensure_vlan_interface<'a>(
    nl: &'a Netlink,
    bridge: &Link,
    vid: u16,
    s: &Settings,
    own_port: u32,
    rollback: &mut Rollback<'a>,
) -> Result<Link> {
    let name = vlan_interface_name(&bridge.name, vid)?;
    if let Some(link) = adopt_vlan_interface(nl, &name, bridge, vid, s)? {
        return Ok(link);
    }
    let port_name = AttachmentKey::new(&bridge.name, "gateway", &name).host_veth_name();
    // The port joins the bridge down, so that it forwards nothing before it is in the VLAN.
    let created = nl.link_add_veth_show(&Veth {
        name: &port_name,
        peer_name: &name,
        mtu: s.mtu,
        master: Some(bridge.index),
        up: false,
        ..Veth::default()
    });
    let port = match created {
        Ok(port) => port,
        // Another ADD made it meanwhile: it is that ADD's to undo.
        Err(e) => return adopt_vlan_interface(nl, &name, bridge, vid, s)?.ok_or(e),
    };
    let (port_index, bridge_index) = (port.index, bridge.index);
    rollback.push(format!("the gateway interface {name}"), move || {
        remove_vlan_interface_unless_shared(nl, port_index, bridge_index, vid, own_port)
    });
    let link = nl
        .link_show(&name)?
        .ok_or_else(|| Error::system(format!("{name} vanished right after it was created")))?;
    complete_vlan_interface(nl, link, &port, bridge, vid, s)
}

/// `<bridge>.<vid>`, refused when it does not fit in an interface name.
fn vlan_interface_name(bridge: &str, vid: u16) -> Result<String> {
    let name = format!("{bridge}.{vid}");
    if name.len() > cni_common::env::MAX_IFNAME_LEN {
        return Err(Error::invalid_config(format!(
            "isGateway with vlan {vid}: the gateway interface name {name} is longer than 15 characters; use a shorter bridge name"
        )));
    }
    Ok(name)
}

/// The VLAN's gateway interface as found, completed. None when there is none, or when it was
/// beyond completing (its peer is off the bridge) and is deleted, for the caller to create anew.
fn adopt_vlan_interface(
    nl: &Netlink,
    name: &str,
    bridge: &Link,
    vid: u16,
    s: &Settings,
) -> Result<Option<Link>> {
    let Some(link) = nl.link_show(name)? else {
        return Ok(None);
    };
    // Not a veth: the node's own interface for the VLAN (an 802.1Q one on the bridge, say),
    // used as it is.
    if link.kind.as_deref() != Some("veth") {
        return Ok(Some(link));
    }
    match bridge_side_peer(nl, &link, bridge)? {
        Some(port) => complete_vlan_interface(nl, link, &port, bridge, vid, s).map(Some),
        None => {
            tracing::info!(
                "{name}: its peer is not a port of {}; replacing it",
                bridge.name
            );
            nl.link_del(link.index)?;
            Ok(None)
        }
    }
}

/// The other end of the veth `link`, if it is a port of `bridge`.
fn bridge_side_peer(nl: &Netlink, link: &Link, bridge: &Link) -> Result<Option<Link>> {
    let Some(peer) = link.link else {
        return Ok(None);
    };
    // The index may be one of another namespace, where the peer went: check it points back.
    Ok(nl
        .link_show_index(peer)?
        .filter(|p| p.link == Some(link.index) && p.master == Some(bridge.index)))
}

/// The port into the VLAN, then both ends up, so the port never forwards outside the VLAN.
/// Every step leaves a complete interface as it is, so concurrent ADDs may all run them.
fn complete_vlan_interface(
    nl: &Netlink,
    link: Link,
    port: &Link,
    bridge: &Link,
    vid: u16,
    s: &Settings,
) -> Result<Link> {
    set_access_port_vlan(nl, port.index, bridge, vid, s.preserve_default_vlan)?;
    if !port.up {
        nl.link_set_up(port.index)?;
    }
    if !link.up {
        nl.link_set_up(link.index)?;
    }
    Ok(Link { up: true, ..link })
}

/// Undoes the creation of the VLAN's gateway interface (deleting its port deletes both ends),
/// unless another pod of the VLAN is on the bridge by now: a concurrent ADD of that pod may have
/// found the interface and given it the pod's gateway.
fn remove_vlan_interface_unless_shared(
    nl: &Netlink,
    port: u32,
    bridge: u32,
    vid: u16,
    own_port: u32,
) -> Result<()> {
    if vlan_has_other_ports(nl, bridge, vid, &[port, own_port])? {
        tracing::info!(
            "the gateway interface of VLAN {vid} is kept: other pods of it are attached"
        );
        return Ok(());
    }
    nl.link_del(port)
}

/// Whether a port of `bridge` other than `except` has `vid` as its PVID. A VLAN dump per port:
/// for the failure path only.
fn vlan_has_other_ports(nl: &Netlink, bridge: u32, vid: u16, except: &[u32]) -> Result<bool> {
    for port in nl.link_list_ports(bridge)? {
        if except.contains(&port.index) {
            continue;
        }
        if nl
            .bridge_vlan_show(port.index)?
            .iter()
            .any(|v| v.vid == vid && v.pvid)
        {
            return Ok(true);
        }
    }
    Ok(false)
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
