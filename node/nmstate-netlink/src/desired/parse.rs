//! The strict reading of a `desiredState`: the top level, each interface and each route, field
//! by field. Every field is consumed or refused by name (see `fields`).

use std::net::IpAddr;

use cni_common::mac::MacAddr;
use ipnetwork::IpNetwork;
use serde_json::Value;

use super::bounds::{self, check_description, check_ipv6_mtu, check_name, check_table};
use super::controllers::{parse_bond, parse_bridge};
use super::model::{DesiredState, Iface, IfaceState, IfaceType, IpConf, RouteWant};
use crate::fields::{refused, Obj};
use crate::Error;

/// Top-level sections refused outright, and why.
const REFUSED_SECTIONS: &[(&str, &str)] = &[
    (
        "dns-resolver",
        "it writes the node's resolver configuration, outside the network namespace",
    ),
    ("route-rules", "policy routing rules are not managed here"),
    (
        "hostname",
        "it writes the node's hostname, outside the network namespace",
    ),
    ("ovs-db", "Open vSwitch is not managed here"),
    ("ovn", "OVN bridge mappings need Open vSwitch"),
];

/// What a current state carries and an apply ignores, as nmstate does.
const REPORT_ONLY: &[&str] = &[
    "min-mtu",
    "max-mtu",
    "accept-all-mac-addresses",
    "wait-ip",
    "lldp",
    "ethtool",
];

impl DesiredState {
    /// From the policy's `desiredState` (JSON as the API gives it). Unknown or unsupported
    /// fields are an [`Error::Refused`] naming the interface and the field.
    pub fn parse(value: &Value) -> Result<DesiredState, Error> {
        let mut top = Obj::new("desired state", "", value)?;
        for (section, why) in REFUSED_SECTIONS {
            top.refuse(&[section], why)?;
        }
        let mut interfaces = Vec::new();
        if let Some((path, items)) = top.array(&["interfaces"])? {
            for (i, item) in items.iter().enumerate() {
                interfaces.push(parse_iface(&path, i, item)?);
            }
        }
        let mut routes = Vec::new();
        if let Some(mut section) = top.object(&["routes"])? {
            // The running routes are a report, not a request.
            section.ignore(&["running"]);
            if let Some((_, items)) = section.array(&["config"])? {
                for (i, item) in items.iter().enumerate() {
                    routes.push(parse_route(i, item)?);
                }
            }
            section.finish()?;
        }
        top.finish()?;
        check_listed_once(&interfaces)?;
        Ok(DesiredState { interfaces, routes })
    }
}

fn check_listed_once(interfaces: &[Iface]) -> Result<(), Error> {
    let mut names: Vec<&str> = interfaces.iter().map(|i| i.name.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(Error::Refused(format!(
            "interface {} is listed twice",
            w[0]
        )));
    }
    Ok(())
}

fn parse_iface(path: &str, i: usize, item: &Value) -> Result<Iface, Error> {
    let name = item
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::Refused(format!("{path}[{i}]: an interface needs a name")))?
        .to_string();
    let owner = format!("interface {name}");
    check_name(&owner, &name)?;
    let mut obj = Obj::new(&owner, "", item)?;
    obj.take(&["name"]);
    let kind = iface_type(&owner, obj.string(&["type"])?)?;
    let state = iface_state(&owner, obj.string(&["state"])?)?;
    let description = obj.string(&["description"])?;
    if let Some(d) = &description {
        check_description(&owner, d)?;
    }
    let mtu = bounds::mtu(&mut obj)?;
    let mac = parse_mac(&owner, obj.string(&["mac-address"])?)?;
    obj.ignore(REPORT_ONLY);
    let ipv4 = parse_ip(&mut obj, "ipv4", false)?;
    let ipv6 = parse_ip(&mut obj, "ipv6", true)?;
    check_ipv6_mtu(&owner, mtu, ipv6.as_ref())?;
    let bridge = obj.object(&["bridge"])?.map(parse_bridge).transpose()?;
    let vlan = match obj.object(&["vlan"])? {
        Some(v) => Some(parse_vlan(&owner, v)?),
        None => None,
    };
    let bond = obj
        .object(&["link-aggregation", "bond"])?
        .map(parse_bond)
        .transpose()?;
    let veth_peer = match obj.object(&["veth"])? {
        Some(v) => parse_veth_peer(&owner, v)?,
        None => None,
    };
    obj.finish()?;
    let iface = Iface {
        name,
        kind,
        state,
        description,
        mtu,
        mac,
        ipv4,
        ipv6,
        bridge,
        vlan,
        bond,
        veth_peer,
    };
    check_sections_fit(&owner, &iface)?;
    Ok(iface)
}

fn parse_mac(owner: &str, given: Option<String>) -> Result<Option<MacAddr>, Error> {
    given
        .map(|s| MacAddr::parse(&s).map_err(|e| refused(owner, "mac-address", &e.to_string())))
        .transpose()
}

fn iface_type(owner: &str, given: Option<String>) -> Result<IfaceType, Error> {
    Ok(match given.as_deref() {
        None | Some("unknown") => IfaceType::Unknown,
        Some("ethernet") => IfaceType::Ethernet,
        Some("veth") => IfaceType::Veth,
        Some("linux-bridge") => IfaceType::LinuxBridge,
        Some("vlan") => IfaceType::Vlan,
        Some("bond") => IfaceType::Bond,
        Some("dummy") => IfaceType::Dummy,
        Some(other) => {
            return Err(Error::Refused(format!(
                "{owner}: type {other:?} is not supported (ethernet, veth, linux-bridge, vlan, bond, dummy)"
            )))
        }
    })
}

fn iface_state(owner: &str, given: Option<String>) -> Result<IfaceState, Error> {
    Ok(match given.as_deref() {
        None | Some("up") => IfaceState::Up,
        Some("down") => IfaceState::Down,
        Some("absent") => IfaceState::Absent,
        Some(other) => {
            return Err(refused(
                owner,
                "state",
                &format!("must be up, down or absent, not {other:?}"),
            ))
        }
    })
}

/// `vlan`: the base and the ID, 802.1Q only.
fn parse_vlan(owner: &str, mut v: Obj) -> Result<(String, u16), Error> {
    let base = v
        .string(&["base-iface"])?
        .ok_or_else(|| refused(owner, "vlan.base-iface", "is required"))?;
    check_name(owner, &base)?;
    let id = v
        .number(&["id"], 4094)?
        .ok_or_else(|| refused(owner, "vlan.id", "is required"))? as u16;
    if let Some(p) = v.string(&["protocol"])? {
        if p != "802.1q" {
            return Err(refused(owner, "vlan.protocol", "only 802.1q is supported"));
        }
    }
    v.finish()?;
    Ok((base, id))
}

/// `veth`: the peer's name, when given.
fn parse_veth_peer(owner: &str, mut v: Obj) -> Result<Option<String>, Error> {
    let peer = v.string(&["peer"])?;
    if let Some(p) = &peer {
        check_name(owner, p)?;
    }
    v.finish()?;
    Ok(peer)
}

/// A type's own section only: a bridge has no vlan section, a vlan no bridge section, and so on.
fn check_sections_fit(owner: &str, iface: &Iface) -> Result<(), Error> {
    let (bridge, vlan, bond, veth) = (
        iface.bridge.is_none(),
        iface.vlan.is_none(),
        iface.bond.is_none(),
        iface.veth_peer.is_none(),
    );
    let section_fits = match iface.kind {
        IfaceType::LinuxBridge => vlan && bond && veth,
        IfaceType::Vlan => bridge && bond && veth,
        IfaceType::Bond => bridge && vlan && veth,
        IfaceType::Veth => bridge && vlan && bond,
        _ => bridge && vlan && bond && veth,
    };
    if !section_fits {
        return Err(Error::Refused(format!(
            "{owner}: a {} interface cannot have a bridge, vlan, link-aggregation or veth section of another type",
            iface.kind.nmstate_name()
        )));
    }
    Ok(())
}

/// `ipv4` / `ipv6` (`v6`, under `key`): static addresses only.
fn parse_ip(obj: &mut Obj, key: &str, v6: bool) -> Result<Option<IpConf>, Error> {
    let Some(mut ip) = obj.object(&[key])? else {
        return Ok(None);
    };
    let owner = ip.owner().to_string();
    let mut conf = IpConf {
        enabled: ip.bool(&["enabled"])?,
        addresses: None,
    };
    if ip.bool(&["dhcp"])? == Some(true) {
        return Err(refused(
            &owner,
            &ip.path_of("dhcp"),
            "true is not supported: addresses are static only",
        ));
    }
    if v6 && ip.bool(&["autoconf"])? == Some(true) {
        return Err(refused(
            &owner,
            &ip.path_of("autoconf"),
            "true is not supported: addresses are static only",
        ));
    }
    if let Some((path, items)) = ip.array(&["address"])? {
        let mut addrs = Vec::new();
        for (i, item) in items.iter().enumerate() {
            addrs.push(parse_address(
                &owner,
                &format!("{path}[{i}]"),
                item,
                key,
                v6,
            )?);
        }
        conf.addresses = Some(addrs);
        if conf.enabled.is_none() {
            conf.enabled = Some(true);
        }
    }
    ip.finish()?;
    if conf.enabled == Some(false) && conf.addresses.as_ref().is_some_and(|a| !a.is_empty()) {
        return Err(Error::Refused(format!(
            "{owner}: {key} is disabled but lists addresses"
        )));
    }
    Ok(Some(conf))
}

/// One entry of an `address` list, at `here`: an address of the section's family and its
/// prefix length.
fn parse_address(
    owner: &str,
    here: &str,
    item: &Value,
    key: &str,
    v6: bool,
) -> Result<IpNetwork, Error> {
    let mut a = Obj::new(owner, here, item)?;
    let text = a
        .string(&["ip"])?
        .ok_or_else(|| refused(owner, &format!("{here}.ip"), "is required"))?;
    let addr: IpAddr = text.parse().map_err(|_| {
        refused(
            owner,
            &format!("{here}.ip"),
            &format!("{text:?} is not an IP address"),
        )
    })?;
    if addr.is_ipv6() != v6 {
        return Err(refused(
            owner,
            &format!("{here}.ip"),
            &format!("{addr} is not an {key} address"),
        ));
    }
    let max = if v6 { 128 } else { 32 };
    let prefix = a
        .number(&["prefix-length"], max)?
        .ok_or_else(|| refused(owner, &format!("{here}.prefix-length"), "is required"))?;
    // Lifetimes are what a current state of a DHCP address shows; static ones have none.
    a.ignore(&["valid-life-time", "preferred-life-time"]);
    a.finish()?;
    IpNetwork::new(addr, prefix as u8).map_err(|e| refused(owner, here, &e.to_string()))
}

fn parse_route(i: usize, item: &Value) -> Result<RouteWant, Error> {
    let owner = format!("route {i}");
    let mut r = Obj::new(&owner, "", item)?;
    let destination = match r.string(&["destination"])? {
        Some(s) => Some(
            s.parse::<IpNetwork>()
                .map_err(|_| refused(&owner, "destination", &format!("{s:?} is not a network")))?,
        ),
        None => None,
    };
    let next_hop_address = match r.string(&["next-hop-address"])? {
        Some(s) if s.is_empty() => None,
        Some(s) => Some(s.parse::<IpAddr>().map_err(|_| {
            refused(
                &owner,
                "next-hop-address",
                &format!("{s:?} is not an address"),
            )
        })?),
        None => None,
    };
    let next_hop_interface = r.string(&["next-hop-interface"])?;
    if let Some(n) = &next_hop_interface {
        check_name(&owner, n)?;
    }
    let metric = r.number(&["metric"], u32::MAX.into())?.map(|n| n as u32);
    let table = r.number(&["table-id"], u32::MAX.into())?.map(|n| n as u32);
    check_table(&owner, table)?;
    let absent = match r.string(&["state"])?.as_deref() {
        None => false,
        Some("absent") => true,
        Some(other) => {
            return Err(refused(
                &owner,
                "state",
                &format!("must be absent when given, not {other:?}"),
            ))
        }
    };
    r.finish()?;
    let route = RouteWant {
        destination,
        next_hop_address,
        next_hop_interface,
        metric,
        table,
        absent,
    };
    if !absent {
        check_route_to_add(&owner, &route)?;
    }
    Ok(route)
}

/// A route to add names where it goes and through which interface, in one family.
fn check_route_to_add(owner: &str, route: &RouteWant) -> Result<(), Error> {
    let Some(dst) = route.destination else {
        return Err(refused(owner, "destination", "is required"));
    };
    if route.next_hop_interface.is_none() {
        return Err(refused(owner, "next-hop-interface", "is required"));
    }
    if route
        .next_hop_address
        .is_some_and(|gw| gw.is_ipv6() != dst.is_ipv6())
    {
        return Err(Error::Refused(format!(
            "{owner}: next-hop-address and destination are of different families"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::desired::refusal;

    #[test]
    fn the_walkthrough_policy_parses() {
        let state = DesiredState::parse(&json!({"interfaces": [{
            "name": "br0", "description": "Linux bridge with eth1 as a port",
            "type": "linux-bridge", "state": "up",
            "bridge": {"options": {"stp": {"enabled": false}}, "port": [{"name": "eth1"}]}
        }]}))
        .expect("parses");
        assert_eq!(state.interface_names(), vec!["br0", "eth1"]);
        let br = &state.interfaces[0];
        assert_eq!(br.bridge.as_ref().and_then(|b| b.stp), Some(false));
        assert_eq!(
            br.description.as_deref(),
            Some("Linux bridge with eth1 as a port")
        );
    }

    #[test]
    fn sections_outside_the_namespace_are_refused_with_the_reason() {
        let msg = refusal(json!({"dns-resolver": {"config": {}}}));
        assert!(
            msg.starts_with(r#"desired state: field "dns-resolver" is not supported (it writes"#),
            "{msg}"
        );
        for section in ["route-rules", "hostname", "ovs-db", "ovn"] {
            let msg = refusal(json!({ section: {} }));
            assert!(
                msg.contains(&format!("{section:?} is not supported")),
                "{msg}"
            );
        }
    }

    #[test]
    fn dhcp_is_refused() {
        let msg = refusal(
            json!({"interfaces": [{"name": "eth1", "ipv4": {"enabled": true, "dhcp": true}}]}),
        );
        assert!(
            msg.contains(r#"field "ipv4.dhcp" true is not supported"#),
            "{msg}"
        );
    }

    #[test]
    fn a_route_needs_a_destination_and_an_interface() {
        let msg = refusal(json!({"routes": {"config": [{"destination": "10.0.0.0/8"}]}}));
        assert_eq!(msg, r#"route 0: field "next-hop-interface" is required"#);
        let state = DesiredState::parse(&json!({"routes": {"config": [
            {"destination": "10.0.0.0/8", "next-hop-interface": "eth1", "next-hop-address": "192.0.2.1", "metric": 50, "table-id": 100},
            {"destination": "10.1.0.0/16", "state": "absent"}
        ]}}))
        .expect("parses");
        assert_eq!(state.routes.len(), 2);
        assert!(state.routes[1].absent);
    }

    #[test]
    fn an_interface_listed_twice_is_refused() {
        let msg = refusal(json!({"interfaces": [{"name": "eth1"}, {"name": "eth1"}]}));
        assert_eq!(msg, "interface eth1 is listed twice");
    }
}
