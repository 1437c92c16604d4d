//! The policy's `desiredState`, read strictly: what nmstate fields mean here, and refusals for
//! the ones we cannot honour.

use std::net::IpAddr;

use cni_common::mac::MacAddr;
use cni_common::netlink::{MTU_RANGE, RT_TABLE_DEFAULT, RT_TABLE_LOCAL, RT_TABLE_UNSPEC};
use ipnetwork::IpNetwork;
use serde_json::Value;

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

/// Longest interface name (IFNAMSIZ - 1).
const MAX_NAME: usize = 15;

/// Longest link alias, in bytes (IFALIASZ - 1).
const MAX_DESCRIPTION: usize = 255;

/// IPv6's minimum MTU: the kernel takes IPv6 off a link whose MTU is below it.
const IPV6_MIN_MTU: u32 = 1280;

/// The kernel keeps bond timers and counts in ints and refuses larger values.
const KERNEL_INT_MAX: u64 = i32::MAX as u64;

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
        let mut names: Vec<&str> = interfaces.iter().map(|i| i.name.as_str()).collect();
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(Error::Refused(format!(
                "interface {} is listed twice",
                w[0]
            )));
        }
        Ok(DesiredState { interfaces, routes })
    }

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

pub(crate) fn check_name(owner: &str, name: &str) -> Result<(), Error> {
    let bad = name.is_empty()
        || name.len() > MAX_NAME
        || name == "."
        || name == ".."
        || name
            .chars()
            .any(|c| c == '/' || c == ':' || c.is_whitespace() || c.is_control());
    if bad {
        return Err(Error::Refused(format!(
            "{owner}: {name:?} is not a valid interface name (1 to {MAX_NAME} characters, no '/', ':' or spaces)"
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
    let kind = match obj.string(&["type"])?.as_deref() {
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
    };
    let state = match obj.string(&["state"])?.as_deref() {
        None | Some("up") => IfaceState::Up,
        Some("down") => IfaceState::Down,
        Some("absent") => IfaceState::Absent,
        Some(other) => {
            return Err(refused(
                &owner,
                "state",
                &format!("must be up, down or absent, not {other:?}"),
            ))
        }
    };
    let description = obj.string(&["description"])?;
    if let Some(d) = &description {
        check_description(&owner, d)?;
    }
    let mtu = range(&mut obj, "mtu", *MTU_RANGE.start(), *MTU_RANGE.end())?;
    let mac = match obj.string(&["mac-address"])? {
        Some(s) => {
            Some(MacAddr::parse(&s).map_err(|e| refused(&owner, "mac-address", &e.to_string()))?)
        }
        None => None,
    };
    // What a current state carries and an apply ignores, as nmstate does.
    obj.ignore(&[
        "min-mtu",
        "max-mtu",
        "accept-all-mac-addresses",
        "wait-ip",
        "lldp",
        "ethtool",
    ]);
    let ipv4 = parse_ip(&mut obj, "ipv4", false)?;
    let ipv6 = parse_ip(&mut obj, "ipv6", true)?;
    let ipv6_addresses = ipv6.as_ref().and_then(|c| c.addresses.as_ref());
    if let (Some(m), Some(addrs)) = (mtu, ipv6_addresses) {
        if m < IPV6_MIN_MTU && !addrs.is_empty() {
            return Err(Error::Refused(format!(
                "{owner}: mtu {m} is below {IPV6_MIN_MTU}, IPv6's minimum: the kernel removes \
                 IPv6 from such a link, so its ipv6 addresses could not be set"
            )));
        }
    }
    let bridge = match obj.object(&["bridge"])? {
        Some(b) => Some(parse_bridge(b)?),
        None => None,
    };
    let vlan = match obj.object(&["vlan"])? {
        Some(mut v) => {
            let base = v
                .string(&["base-iface"])?
                .ok_or_else(|| refused(&owner, "vlan.base-iface", "is required"))?;
            check_name(&owner, &base)?;
            let id = v
                .number(&["id"], 4094)?
                .ok_or_else(|| refused(&owner, "vlan.id", "is required"))?
                as u16;
            if let Some(p) = v.string(&["protocol"])? {
                if p != "802.1q" {
                    return Err(refused(&owner, "vlan.protocol", "only 802.1q is supported"));
                }
            }
            v.finish()?;
            Some((base, id))
        }
        None => None,
    };
    let bond = match obj.object(&["link-aggregation", "bond"])? {
        Some(b) => Some(parse_bond(b)?),
        None => None,
    };
    let veth_peer = match obj.object(&["veth"])? {
        Some(mut v) => {
            let peer = v.string(&["peer"])?;
            if let Some(p) = &peer {
                check_name(&owner, p)?;
            }
            v.finish()?;
            peer
        }
        None => None,
    };
    obj.finish()?;
    let section_fits = match kind {
        IfaceType::LinuxBridge => vlan.is_none() && bond.is_none() && veth_peer.is_none(),
        IfaceType::Vlan => bridge.is_none() && bond.is_none() && veth_peer.is_none(),
        IfaceType::Bond => bridge.is_none() && vlan.is_none() && veth_peer.is_none(),
        IfaceType::Veth => bridge.is_none() && vlan.is_none() && bond.is_none(),
        _ => bridge.is_none() && vlan.is_none() && bond.is_none() && veth_peer.is_none(),
    };
    if !section_fits {
        return Err(Error::Refused(format!(
            "{owner}: a {} interface cannot have a bridge, vlan, link-aggregation or veth section of another type",
            kind.nmstate_name()
        )));
    }
    Ok(Iface {
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
    })
}

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
            let here = format!("{path}[{i}]");
            let mut a = Obj::new(&owner, &here, item)?;
            let text = a
                .string(&["ip"])?
                .ok_or_else(|| refused(&owner, &format!("{here}.ip"), "is required"))?;
            let addr: IpAddr = text.parse().map_err(|_| {
                refused(
                    &owner,
                    &format!("{here}.ip"),
                    &format!("{text:?} is not an IP address"),
                )
            })?;
            if addr.is_ipv6() != v6 {
                return Err(refused(
                    &owner,
                    &format!("{here}.ip"),
                    &format!("{addr} is not an {key} address"),
                ));
            }
            let max = if v6 { 128 } else { 32 };
            let prefix = a
                .number(&["prefix-length"], max)?
                .ok_or_else(|| refused(&owner, &format!("{here}.prefix-length"), "is required"))?;
            // Lifetimes are what a current state of a DHCP address shows; static ones have none.
            a.ignore(&["valid-life-time", "preferred-life-time"]);
            a.finish()?;
            let net = IpNetwork::new(addr, prefix as u8)
                .map_err(|e| refused(&owner, &here, &e.to_string()))?;
            addrs.push(net);
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

fn parse_bridge(mut b: Obj) -> Result<BridgeConf, Error> {
    let owner = b.owner().to_string();
    let mut conf = BridgeConf::default();
    if let Some(mut o) = b.object(&["options"])? {
        // Timers count down on their own: a report carries them, an apply ignores them.
        o.ignore(&["gc-timer", "hello-timer"]);
        if let Some(mut stp) = o.object(&["stp"])? {
            conf.stp = stp.bool(&["enabled"])?;
            conf.forward_delay = range(&mut stp, "forward-delay", 2, 30)?;
            conf.hello_time = range(&mut stp, "hello-time", 1, 10)?;
            conf.max_age = range(&mut stp, "max-age", 6, 40)?;
            conf.priority = stp
                .number(&["priority"], u16::MAX.into())?
                .map(|n| n as u16);
            stp.finish()?;
        }
        // Seconds; the kernel counts hundredths, in 32 bits.
        conf.ageing_time = o
            .number(&["mac-ageing-time"], u64::from(u32::MAX / 100))?
            .map(|n| n as u32);
        conf.multicast_snooping = o.bool(&["multicast-snooping"])?;
        o.finish()?;
    }
    if let Some((path, items)) = b.array(&["port", "ports"])? {
        let mut ports = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let here = format!("{path}[{i}]");
            let mut p = Obj::new(&owner, &here, item)?;
            let name = p
                .string(&["name"])?
                .ok_or_else(|| refused(&owner, &format!("{here}.name"), "is required"))?;
            check_name(&owner, &name)?;
            let mut port = BridgePortConf {
                name,
                stp_priority: p.number(&["stp-priority"], 63)?.map(|n| n as u16),
                stp_path_cost: p.number(&["stp-path-cost"], 65535)?.map(|n| n as u32),
                stp_hairpin_mode: p.bool(&["stp-hairpin-mode"])?,
                vlan: None,
            };
            if let Some(v) = p.object(&["vlan"])? {
                port.vlan = Some(parse_port_vlan(&owner, v)?);
            }
            p.finish()?;
            ports.push(port);
        }
        conf.ports = Some(ports);
    }
    b.finish()?;
    Ok(conf)
}

/// A number from `min` to `max`, refused with both bounds named.
fn range(o: &mut Obj, key: &str, min: u32, max: u32) -> Result<Option<u32>, Error> {
    Ok(o.number_in(&[key], min.into(), max.into())?
        .map(|n| n as u32))
}

/// A link's alias: what the kernel stores (IFLA_IFALIAS) and `ip link` prints on a line.
fn check_description(owner: &str, d: &str) -> Result<(), Error> {
    if d.len() > MAX_DESCRIPTION {
        return Err(refused(
            owner,
            "description",
            &format!(
                "is {} bytes long: the kernel keeps at most {MAX_DESCRIPTION}",
                d.len()
            ),
        ));
    }
    if d.chars().any(char::is_control) {
        return Err(refused(
            owner,
            "description",
            "must not hold control characters",
        ));
    }
    Ok(())
}

fn parse_port_vlan(owner: &str, mut v: Obj) -> Result<PortVlanConf, Error> {
    let mut conf = PortVlanConf::default();
    let here = v.path_of("mode");
    conf.trunk = match v.string(&["mode"])?.as_deref() {
        None | Some("access") => false,
        Some("trunk") => true,
        Some(other) => {
            return Err(refused(
                owner,
                &here,
                &format!("must be access or trunk, not {other:?}"),
            ))
        }
    };
    conf.tag = vlan_id(&mut v, "tag")?;
    conf.enable_native = v.bool(&["enable-native"])?.unwrap_or(false);
    if let Some((path, items)) = v.array(&["trunk-tags"])? {
        for (i, item) in items.iter().enumerate() {
            let mut t = Obj::new(owner, &format!("{path}[{i}]"), item)?;
            if let Some(id) = vlan_id(&mut t, "id")? {
                conf.trunk_tags.push((id, id));
            } else if let Some(mut r) = t.object(&["id-range"])? {
                let min = vlan_id(&mut r, "min")?;
                let max = vlan_id(&mut r, "max")?;
                let (Some(min), Some(max)) = (min, max) else {
                    return Err(refused(owner, &r.path_of("min"), "and max are required"));
                };
                if min > max {
                    return Err(refused(owner, &r.path_of("min"), "is larger than max"));
                }
                r.finish()?;
                conf.trunk_tags.push((min, max));
            } else {
                return Err(refused(
                    owner,
                    &format!("{path}[{i}]"),
                    "needs id or id-range",
                ));
            }
            t.finish()?;
        }
    }
    v.finish()?;
    match (conf.trunk, conf.tag, conf.trunk_tags.is_empty()) {
        (false, _, false) => Err(Error::Refused(format!(
            "{owner}: an access port cannot have trunk-tags"
        ))),
        (false, None, _) if conf.enable_native => Err(Error::Refused(format!(
            "{owner}: enable-native is for trunk ports"
        ))),
        (true, _, true) => Err(Error::Refused(format!(
            "{owner}: a trunk port needs trunk-tags"
        ))),
        (true, None, _) if conf.enable_native => Err(Error::Refused(format!(
            "{owner}: enable-native needs a tag"
        ))),
        _ => Ok(conf),
    }
}

fn vlan_id(o: &mut Obj, key: &str) -> Result<Option<u16>, Error> {
    Ok(o.number_in(&[key], 1, 4094)?.map(|n| n as u16))
}

/// nmstate's bond modes, names and numbers.
fn bond_mode(s: &str) -> Option<u8> {
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

fn parse_bond(mut b: Obj) -> Result<BondConf, Error> {
    let owner = b.owner().to_string();
    let mut conf = BondConf::default();
    let here = b.path_of("mode");
    if let Some((_, v)) = b.value(&["mode"]) {
        let text = match &v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            other => other.to_string(),
        };
        conf.mode = Some(
            bond_mode(&text)
                .ok_or_else(|| refused(&owner, &here, &format!("{text:?} is not a bond mode")))?,
        );
    }
    if let Some(mut o) = b.object(&["options"])? {
        let max = KERNEL_INT_MAX;
        conf.miimon = o.number(&["miimon"], max)?.map(|n| n as u32);
        conf.updelay = o.number(&["updelay"], max)?.map(|n| n as u32);
        conf.downdelay = o.number(&["downdelay"], max)?.map(|n| n as u32);
        conf.min_links = o.number(&["min_links"], max)?.map(|n| n as u32);
        o.finish()?;
    }
    if let Some((path, items)) = b.array(&["port", "ports"])? {
        let mut ports = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let name = item.as_str().ok_or_else(|| {
                refused(&owner, &format!("{path}[{i}]"), "must be an interface name")
            })?;
            check_name(&owner, name)?;
            ports.push(name.to_string());
        }
        conf.ports = Some(ports);
    }
    b.finish()?;
    Ok(conf)
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
    // The kernel's own tables: local holds the node's local addresses, default is looked up
    // after main; unspec is no table. A policy's routes go to main or to tables of their own.
    if let Some(t @ (RT_TABLE_UNSPEC | RT_TABLE_DEFAULT | RT_TABLE_LOCAL)) = table {
        return Err(refused(
            &owner,
            "table-id",
            &format!("{t} is a table of the kernel's own, not for a policy's routes"),
        ));
    }
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
    if !absent {
        let Some(dst) = destination else {
            return Err(refused(&owner, "destination", "is required"));
        };
        if next_hop_interface.is_none() {
            return Err(refused(&owner, "next-hop-interface", "is required"));
        }
        if next_hop_address.is_some_and(|gw| gw.is_ipv6() != dst.is_ipv6()) {
            return Err(Error::Refused(format!(
                "{owner}: next-hop-address and destination are of different families"
            )));
        }
    }
    Ok(RouteWant {
        destination,
        next_hop_address,
        next_hop_interface,
        metric,
        table,
        absent,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use cni_common::netlink::RT_TABLE_MAIN;
    use serde_json::json;

    fn refusal(v: Value) -> String {
        match DesiredState::parse(&v) {
            Err(Error::Refused(msg)) => msg,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

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
    fn an_unknown_bridge_option_is_refused_by_its_path() {
        let msg = refusal(
            json!({"interfaces": [{"name": "br0", "type": "linux-bridge",
            "bridge": {"options": {"vlan-protocol": "802.1ad"}}}]}),
        );
        assert_eq!(
            msg,
            r#"interface br0: field "bridge.options.vlan-protocol" is not supported"#
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

    fn iface(fields: Value) -> Value {
        let mut iface = json!({"name": "eth1", "type": "ethernet"});
        for (key, value) in fields.as_object().expect("fields").clone() {
            iface[key] = value;
        }
        json!({ "interfaces": [iface] })
    }

    fn route_in(table: u32) -> Value {
        json!({"routes": {"config": [{"destination": "10.0.0.0/8",
            "next-hop-interface": "eth1", "table-id": table}]}})
    }

    #[test]
    fn an_mtu_below_ipv4s_minimum_or_above_65535_is_refused_naming_both_bounds() {
        for mtu in [0, 67, 65536] {
            let msg = refusal(iface(json!({ "mtu": mtu })));
            assert_eq!(
                msg,
                format!(
                    r#"interface eth1: field "mtu" must be a number from 68 to 65535, not {mtu}"#
                )
            );
        }
    }

    #[test]
    fn an_mtu_of_68_or_65535_is_accepted() {
        for mtu in [68, 65535] {
            let state = DesiredState::parse(&iface(json!({ "mtu": mtu }))).expect("parses");
            assert_eq!(state.interfaces[0].mtu, Some(mtu));
        }
    }

    #[test]
    fn an_mtu_below_1280_with_ipv6_addresses_is_refused() {
        let msg = refusal(iface(json!({"mtu": 1279,
            "ipv6": {"address": [{"ip": "2001:db8::1", "prefix-length": 64}]}})));
        assert!(
            msg.starts_with(
                "interface eth1: mtu 1279 is below 1280, IPv6's minimum: the kernel removes IPv6"
            ),
            "{msg}"
        );
    }

    #[test]
    fn an_mtu_below_1280_without_ipv6_addresses_is_accepted() {
        let state = DesiredState::parse(&iface(json!({"mtu": 1279,
            "ipv4": {"address": [{"ip": "192.0.2.1", "prefix-length": 24}]},
            "ipv6": {"enabled": false}})))
        .expect("parses");
        assert_eq!(state.interfaces[0].mtu, Some(1279));
    }

    #[test]
    fn an_mtu_of_1280_takes_ipv6_addresses() {
        let state = DesiredState::parse(&iface(json!({"mtu": 1280,
            "ipv6": {"address": [{"ip": "2001:db8::1", "prefix-length": 64}]}})))
        .expect("parses");
        assert_eq!(state.interfaces[0].mtu, Some(1280));
    }

    #[test]
    fn a_description_longer_than_255_bytes_is_refused() {
        // 128 characters, 256 bytes: the kernel counts bytes.
        let msg = refusal(iface(json!({"description": "é".repeat(128)})));
        assert_eq!(
            msg,
            r#"interface eth1: field "description" is 256 bytes long: the kernel keeps at most 255"#
        );
    }

    #[test]
    fn a_description_of_255_bytes_is_accepted() {
        let long = "a".repeat(255);
        let state = DesiredState::parse(&iface(json!({ "description": long }))).expect("parses");
        assert_eq!(state.interfaces[0].description, Some(long));
    }

    #[test]
    fn a_description_with_control_characters_is_refused() {
        for description in ["two\nlines", "a\tb", "bell\u{7}"] {
            let msg = refusal(iface(json!({ "description": description })));
            assert_eq!(
                msg, r#"interface eth1: field "description" must not hold control characters"#,
                "{description:?}"
            );
        }
    }

    fn bond_option(key: &str, value: u64) -> Value {
        json!({"interfaces": [{"name": "bond0", "type": "bond",
            "link-aggregation": {"mode": "active-backup", "options": { key: value }}}]})
    }

    #[test]
    fn bond_timers_and_min_links_above_the_kernels_int_are_refused() {
        for key in ["miimon", "updelay", "downdelay", "min_links"] {
            let msg = refusal(bond_option(key, 2_147_483_648));
            assert_eq!(
                msg,
                format!(
                    r#"interface bond0: field "link-aggregation.options.{key}" must be a number from 0 to 2147483647, not 2147483648"#
                )
            );
        }
    }

    #[test]
    fn bond_timers_and_min_links_up_to_the_kernels_int_are_accepted() {
        for key in ["miimon", "updelay", "downdelay", "min_links"] {
            let state = DesiredState::parse(&bond_option(key, 2_147_483_647)).expect("parses");
            let bond = state.interfaces[0].bond.clone().expect("bond");
            let value = match key {
                "miimon" => bond.miimon,
                "updelay" => bond.updelay,
                "downdelay" => bond.downdelay,
                _ => bond.min_links,
            };
            assert_eq!(value, Some(2_147_483_647), "{key}");
        }
    }

    #[test]
    fn routes_into_the_kernels_own_tables_are_refused() {
        for table in [RT_TABLE_UNSPEC, RT_TABLE_DEFAULT, RT_TABLE_LOCAL] {
            let msg = refusal(route_in(table));
            assert_eq!(
                msg,
                format!(
                    r#"route 0: field "table-id" {table} is a table of the kernel's own, not for a policy's routes"#
                )
            );
        }
    }

    #[test]
    fn routes_into_main_and_tables_of_their_own_are_accepted() {
        for table in [RT_TABLE_MAIN, 1, 256] {
            let state = DesiredState::parse(&route_in(table)).expect("parses");
            assert_eq!(state.routes[0].table, Some(table));
        }
    }

    #[test]
    fn a_vlan_id_of_0_or_above_4094_is_refused_naming_both_bounds() {
        for id in [0, 4095] {
            let msg = refusal(
                json!({"interfaces": [{"name": "br0", "type": "linux-bridge",
                "bridge": {"port": [{"name": "eth1", "vlan": {"mode": "access", "tag": id}}]}}]}),
            );
            assert!(
                msg.ends_with(&format!("must be a number from 1 to 4094, not {id}")),
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
    fn ports_is_an_alias_of_port() {
        let state = DesiredState::parse(&json!({"interfaces": [
            {"name": "bond0", "type": "bond", "link-aggregation": {"mode": "active-backup", "ports": ["eth1", "eth2"]}},
            {"name": "br0", "type": "linux-bridge", "bridge": {"ports": [{"name": "bond0"}]}}
        ]}))
        .expect("parses");
        assert_eq!(
            state.interfaces[0].ports(),
            Some(vec!["eth1".to_string(), "eth2".to_string()])
        );
        assert_eq!(
            state.interfaces[0].bond.as_ref().and_then(|b| b.mode),
            Some(1)
        );
        assert_eq!(state.interfaces[1].ports(), Some(vec!["bond0".to_string()]));
    }

    #[test]
    fn a_trunk_port_reads_ids_and_ranges() {
        let state = DesiredState::parse(&json!({"interfaces": [{"name": "br0", "type": "linux-bridge",
            "bridge": {"port": [{"name": "eth1", "vlan": {"mode": "trunk", "enable-native": true, "tag": 100,
                "trunk-tags": [{"id": 101}, {"id-range": {"min": 200, "max": 299}}]}}]}}]}))
        .expect("parses");
        let vlan = state.interfaces[0]
            .bridge
            .as_ref()
            .and_then(|b| b.ports.as_ref())
            .and_then(|p| p[0].vlan.clone());
        assert_eq!(
            vlan,
            Some(PortVlanConf {
                trunk: true,
                tag: Some(100),
                enable_native: true,
                trunk_tags: vec![(101, 101), (200, 299)]
            })
        );
    }

    #[test]
    fn an_access_port_with_trunk_tags_is_refused() {
        let msg = refusal(
            json!({"interfaces": [{"name": "br0", "type": "linux-bridge",
            "bridge": {"port": [{"name": "eth1", "vlan": {"mode": "access", "tag": 5, "trunk-tags": [{"id": 6}]}}]}}]}),
        );
        assert!(msg.contains("access port cannot have trunk-tags"), "{msg}");
    }

    #[test]
    fn an_invalid_name_is_refused() {
        let msg = refusal(json!({"interfaces": [{"name": "a-name-far-too-long"}]}));
        assert!(msg.contains("is not a valid interface name"), "{msg}");
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
