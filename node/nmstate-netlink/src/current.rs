//! The node's state in nmstate's format, without pods' veths, the routes through them, and
//! anything that changes on an idle node (address lifetimes, bridge timers, counters), so that
//! two reads of an idle node are equal and a change of the report is a change of the node.

use cni_common::netlink::{Netlink, PortVlan};
use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use crate::desired::bond_mode_name;
use crate::error::{Context, READING};
use crate::node::{Kind, LinkState, NodeState, RouteState, PROTO_KERNEL};
use crate::Error;

/// Protocols of configured routes: boot (`ip route add`), static, and unspecified.
const CONFIG_PROTOCOLS: [u8; 3] = [0, 3, 4];

/// The current state in nmstate's format: `interfaces` and `routes: {running, config}`.
pub fn current_state() -> Result<Value, Error> {
    current_state_showing(&[])
}

/// As [`current_state`], showing the veths in `names` even when a bridge holds them and their
/// peer is in another namespace (the links the node's policies name, such as a test node's
/// veth NIC made a bridge's port).
pub fn current_state_showing(names: &[String]) -> Result<Value, Error> {
    let nl = Netlink::current().context(READING)?;
    Ok(render(&NodeState::read(&nl)?, names))
}

/// Pods' veths are hidden: a veth whose peer is in another namespace and that a bridge holds,
/// unless it is in `shown`.
pub(crate) fn render(node: &NodeState, shown: &[String]) -> Value {
    let hidden: BTreeSet<&str> = node
        .links
        .values()
        .filter(|l| node.is_pod_link(&l.name) && l.master.is_some() && !shown.contains(&l.name))
        .map(|l| l.name.as_str())
        .collect();
    let interfaces: Vec<Value> = node
        .links
        .values()
        .filter(|l| !hidden.contains(l.name.as_str()))
        .map(|l| interface(node, l, &hidden))
        .collect();
    let mut running: Vec<&RouteState> = node
        .routes
        .iter()
        .filter(|r| r.protocol != PROTO_KERNEL)
        .filter(|r| r.oif.as_ref().is_none_or(|o| !hidden.contains(o.as_str())))
        .collect();
    running.sort_by_key(|r| (r.table, r.dst, r.oif.clone(), r.metric, r.gw));
    let config: Vec<Value> = running
        .iter()
        .filter(|r| CONFIG_PROTOCOLS.contains(&r.protocol))
        .map(|r| route(r))
        .collect();
    let running: Vec<Value> = running.iter().map(|r| route(r)).collect();
    json!({
        "interfaces": interfaces,
        "routes": {"running": running, "config": config},
    })
}

fn nmstate_type(kind: &Kind) -> &str {
    match kind {
        Kind::Ethernet => "ethernet",
        Kind::Veth => "veth",
        Kind::Bridge => "linux-bridge",
        Kind::Bond => "bond",
        Kind::Vlan => "vlan",
        Kind::Dummy => "dummy",
        Kind::Loopback => "loopback",
        Kind::Other(_) => "unknown",
    }
}

fn interface(node: &NodeState, l: &LinkState, hidden: &BTreeSet<&str>) -> Value {
    let mut o = Map::new();
    o.insert("name".into(), json!(l.name));
    o.insert("type".into(), json!(nmstate_type(&l.kind)));
    o.insert("state".into(), json!(if l.up { "up" } else { "down" }));
    o.insert("mtu".into(), json!(l.mtu));
    if let Some(mac) = l.mac {
        o.insert("mac-address".into(), json!(mac.to_string().to_uppercase()));
    }
    if let Some(alias) = &l.alias {
        o.insert("description".into(), json!(alias));
    }
    if let Some(master) = &l.master {
        o.insert("controller".into(), json!(master));
    }
    for (key, v6) in [("ipv4", false), ("ipv6", true)] {
        let addrs: Vec<Value> = l
            .addresses
            .iter()
            .filter(|a| a.is_ipv6() == v6)
            .map(|a| json!({"ip": a.ip().to_string(), "prefix-length": a.prefix()}))
            .collect();
        let mut ip = json!({"enabled": !addrs.is_empty(), "dhcp": false});
        if v6 {
            ip["autoconf"] = json!(false);
        }
        if !addrs.is_empty() {
            ip["address"] = Value::Array(addrs);
        }
        o.insert(key.into(), ip);
    }
    match l.kind {
        Kind::Bridge => {
            o.insert("bridge".into(), bridge(node, l, hidden));
        }
        Kind::Bond => {
            let b = l.bond.unwrap_or_default();
            let mut options = Map::new();
            for (k, v) in [
                ("miimon", b.miimon),
                ("updelay", b.updelay),
                ("downdelay", b.downdelay),
                ("min_links", b.min_links),
            ] {
                if let Some(v) = v {
                    options.insert(k.into(), json!(v));
                }
            }
            o.insert(
                "link-aggregation".into(),
                json!({
                    "mode": bond_mode_name(b.mode.unwrap_or(0)),
                    "options": options,
                    "port": node.ports_of(&l.name),
                }),
            );
        }
        Kind::Vlan => {
            if let Some((base, id)) = &l.vlan {
                o.insert("vlan".into(), json!({"base-iface": base, "id": id}));
            }
        }
        Kind::Veth => {
            if let Some(peer) = &l.veth_peer {
                o.insert("veth".into(), json!({"peer": peer}));
            }
        }
        _ => {}
    }
    Value::Object(o)
}

fn bridge(node: &NodeState, l: &LinkState, hidden: &BTreeSet<&str>) -> Value {
    let b = l.bridge.unwrap_or_default();
    let filtering = b.vlan_filtering == Some(true);
    let secs = |v: Option<u32>| v.map(|v| v / 100);
    let ports: Vec<Value> = node
        .ports_of(&l.name)
        .iter()
        .filter(|p| !hidden.contains(p.as_str()))
        .filter_map(|p| node.links.get(p))
        .map(|p| {
            let s = p.port.unwrap_or_default();
            let mut port = json!({
                "name": p.name,
                "stp-priority": s.priority,
                "stp-path-cost": s.cost,
                "stp-hairpin-mode": s.hairpin,
            });
            // nmstate shows port VLANs only where they take effect.
            if let Some(vlans) = p.port_vlans.as_ref().filter(|_| filtering) {
                port["vlan"] = port_vlan(vlans);
            }
            port
        })
        .collect();
    json!({
        "options": {
            "stp": {
                "enabled": b.stp,
                "forward-delay": secs(b.forward_delay),
                "hello-time": secs(b.hello_time),
                "max-age": secs(b.max_age),
                "priority": b.priority,
            },
            "mac-ageing-time": secs(b.ageing_time),
            "multicast-snooping": b.multicast_snooping,
        },
        "port": ports,
    })
}

/// A port's VLAN table as nmstate describes it: one untagged PVID alone is access; tagged
/// VLANs make a trunk, whose untagged PVID is the native VLAN.
pub(crate) fn port_vlan(vlans: &[PortVlan]) -> Value {
    let native = vlans.iter().find(|v| v.pvid && v.untagged).map(|v| v.vid);
    let tagged: Vec<u16> = vlans
        .iter()
        .filter(|v| !v.untagged)
        .map(|v| v.vid)
        .collect();
    if tagged.is_empty() {
        return match native {
            Some(tag) => json!({"mode": "access", "tag": tag}),
            None => json!({}),
        };
    }
    let mut tags = Vec::new();
    let mut i = 0;
    while let Some(&first) = tagged.get(i) {
        let mut last = first;
        while tagged.get(i + 1) == Some(&(last + 1)) {
            last += 1;
            i += 1;
        }
        tags.push(if first == last {
            json!({"id": first})
        } else {
            json!({"id-range": {"min": first, "max": last}})
        });
        i += 1;
    }
    let mut v = json!({"mode": "trunk", "trunk-tags": tags, "enable-native": native.is_some()});
    if let Some(tag) = native {
        v["tag"] = json!(tag);
    }
    v
}

fn route(r: &RouteState) -> Value {
    let mut v = json!({
        "destination": r.dst.to_string(),
        "next-hop-address": r.gw.map(|g| g.to_string()).unwrap_or_default(),
        "table-id": r.table,
    });
    if let Some(oif) = &r.oif {
        v["next-hop-interface"] = json!(oif);
    }
    if let Some(metric) = r.metric {
        v["metric"] = json!(metric);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_untagged_pvid_is_an_access_port() {
        assert_eq!(
            port_vlan(&[PortVlan::access(7)]),
            json!({"mode": "access", "tag": 7})
        );
    }

    #[test]
    fn tagged_vlans_are_a_trunk_in_ranges_with_the_pvid_native() {
        let vlans = [
            PortVlan::access(1),
            PortVlan::tagged(10),
            PortVlan::tagged(11),
            PortVlan::tagged(12),
            PortVlan::tagged(20),
        ];
        assert_eq!(
            port_vlan(&vlans),
            json!({"mode": "trunk", "enable-native": true, "tag": 1,
                   "trunk-tags": [{"id-range": {"min": 10, "max": 12}}, {"id": 20}]})
        );
    }
}
