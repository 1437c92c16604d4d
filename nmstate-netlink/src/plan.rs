//! From a desired state and the node as it is: the targets to walk to, checked against the node
//! before anything is touched, and the snapshot of everything they may change.

use std::collections::{BTreeMap, BTreeSet};

use cni_common::netlink::{
    BondSettings, BridgePortSettings, BridgeSettings, PortVlan, RT_TABLE_MAIN,
};

use crate::desired::{BridgeConf, DesiredState, Iface, IfaceState, IfaceType, PortVlanConf};
use crate::node::{Kind, NodeState, RouteState};
use crate::target::{LinkTarget, RouteGoal, RouteMatch};
use crate::Error;

/// RTPROT_STATIC, the protocol a configured route reports.
const PROTO_STATIC: u8 = 4;
/// RT_SCOPE_UNIVERSE and RT_SCOPE_LINK.
const SCOPE_UNIVERSE: u8 = 0;
const SCOPE_LINK: u8 = 253;

/// What an apply does, and what its rollback returns to.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub targets: Vec<LinkTarget>,
    pub routes: RouteGoal,
    pub snapshot: Snapshot,
}

/// Everything the plan may change, as it was: the journal's content.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Snapshot {
    /// What the rollback walks to: the links as they were.
    pub links: Vec<LinkTarget>,
    /// What a rollback verifies: the same links cut down to what the apply changes, IPv6
    /// link-local addresses aside (the kernel makes them). What the apply did not change may
    /// have been changed meanwhile by the kernel or another daemon, and that does not make a
    /// rollback fail.
    pub check: Vec<LinkTarget>,
    pub routes: RouteGoal,
}

fn refuse(msg: String) -> Error {
    Error::Refused(msg)
}

fn kind_of(t: IfaceType) -> Option<Kind> {
    match t {
        IfaceType::Ethernet => Some(Kind::Ethernet),
        IfaceType::Veth => Some(Kind::Veth),
        IfaceType::LinuxBridge => Some(Kind::Bridge),
        IfaceType::Vlan => Some(Kind::Vlan),
        IfaceType::Bond => Some(Kind::Bond),
        IfaceType::Dummy => Some(Kind::Dummy),
        IfaceType::Unknown => None,
    }
}

pub(crate) fn plan(desired: &DesiredState, node: &NodeState) -> Result<Plan, Error> {
    let mut targets: BTreeMap<String, LinkTarget> = BTreeMap::new();
    let listed: BTreeMap<&str, &Iface> = desired
        .interfaces
        .iter()
        .map(|i| (i.name.as_str(), i))
        .collect();
    // Links that will exist after the apply: what is there and not deleted, and what is created.
    let will_exist = |name: &str| match listed.get(name) {
        Some(i) => i.state != IfaceState::Absent,
        None => node.links.contains_key(name),
    };
    let listed_name = |name: &str| listed.contains_key(name);
    let mut port_of: BTreeMap<String, String> = BTreeMap::new();

    for iface in &desired.interfaces {
        let t = iface_target(iface, node, &will_exist, &listed_name)?;
        targets.insert(iface.name.clone(), t);
    }
    // Ports: the exact set, each enslaved, up and without addresses of its own.
    for iface in desired
        .interfaces
        .iter()
        .filter(|i| i.state != IfaceState::Absent)
    {
        let Some(ports) = iface.ports() else { continue };
        for port in &ports {
            if port == &iface.name {
                return Err(refuse(format!(
                    "interface {}: cannot be its own port",
                    iface.name
                )));
            }
            if let Some(other) = port_of.insert(port.clone(), iface.name.clone()) {
                return Err(refuse(format!(
                    "interface {port} is listed as a port of both {other} and {}",
                    iface.name
                )));
            }
            if !will_exist(port) {
                return Err(refuse(format!(
                    "interface {}: port {port} does not exist",
                    iface.name
                )));
            }
            guard(node, port, &listed_name)?;
            let kind = node
                .links
                .get(port)
                .map(|l| l.kind.clone())
                .or_else(|| listed.get(port.as_str()).and_then(|i| kind_of(i.kind)));
            let t = targets
                .entry(port.clone())
                .or_insert_with(|| LinkTarget::new(port, kind.unwrap_or(Kind::Ethernet)));
            if t.ipv4.as_ref().is_some_and(|a| !a.is_empty())
                || t.ipv6.as_ref().is_some_and(|a| !a.is_empty())
            {
                return Err(refuse(format!(
                    "interface {port}: a port of {} cannot have IP addresses",
                    iface.name
                )));
            }
            t.master = Some(iface.name.clone());
            if t.up.is_none() {
                t.up = Some(true);
            }
            t.ipv4 = Some(Vec::new());
            t.ipv6 = Some(Vec::new());
            t.keep_link_local = false;
            if let Some(conf) = iface
                .bridge
                .as_ref()
                .and_then(|b| b.ports.as_ref())
                .and_then(|p| p.iter().find(|p| &p.name == port))
            {
                let settings = BridgePortSettings {
                    priority: conf.stp_priority,
                    cost: conf.stp_path_cost,
                    hairpin: conf.stp_hairpin_mode,
                };
                if settings != BridgePortSettings::default() {
                    t.port = Some(settings);
                }
                t.port_vlans = conf.vlan.as_ref().map(port_vlans);
            }
        }
        // Ports it has now and is not given any more are released.
        for current in node.ports_of(&iface.name) {
            if !ports.contains(&current) && !node.is_pod_link(&current) {
                let kind = node
                    .links
                    .get(&current)
                    .map(|l| l.kind.clone())
                    .unwrap_or(Kind::Ethernet);
                let t = targets
                    .entry(current.clone())
                    .or_insert_with(|| LinkTarget::new(&current, kind));
                if t.master.is_none() {
                    t.master = Some(String::new());
                }
            }
        }
    }
    // A bond whose mode changes must lose its ports for the change (the kernel refuses it
    // otherwise): the ports it keeps are named, so that they join it again.
    let remoded: Vec<String> = targets
        .values()
        .filter(|t| t.exists && t.changes_bond_mode(node))
        .map(|t| t.name.clone())
        .collect();
    for bond in remoded {
        for port in node.ports_of(&bond) {
            let kind = node
                .links
                .get(&port)
                .map_or(Kind::Ethernet, |l| l.kind.clone());
            let t = targets
                .entry(port.clone())
                .or_insert_with(|| LinkTarget::new(&port, kind));
            if t.master.is_none() {
                t.master = Some(bond.clone());
            }
        }
    }
    // A port listed on its own with a master of nothing but named by a bridge: already handled.
    let targets: Vec<LinkTarget> = targets.into_values().collect();

    // Routes.
    let mut add = Vec::new();
    let mut remove = Vec::new();
    for (i, r) in desired.routes.iter().enumerate() {
        if r.absent && r.destination.is_none() && r.next_hop_interface.is_none() {
            return Err(refuse(format!(
                "route {i}: an absent route needs a destination or a next-hop-interface (without either it selects routes anywhere on the node)"
            )));
        }
        if let Some(dev) = &r.next_hop_interface {
            if !r.absent && !will_exist(dev) {
                return Err(refuse(format!(
                    "route to {}: interface {dev} does not exist",
                    r.destination.map(|d| d.to_string()).unwrap_or_default()
                )));
            }
            guard(node, dev, &listed_name)?;
        }
        let key = RouteMatch {
            dst: r.destination.map(network),
            gw: r.next_hop_address,
            oif: r.next_hop_interface.clone(),
            metric: r.metric,
            table: r
                .table
                .or(if r.absent { None } else { Some(RT_TABLE_MAIN) }),
        };
        if r.absent {
            remove.push(key);
        } else if let (Some(dst), Some(dev)) = (r.destination, &r.next_hop_interface) {
            let route = RouteState {
                dst: network(dst),
                gw: r.next_hop_address,
                oif: Some(dev.clone()),
                table: r.table.unwrap_or(RT_TABLE_MAIN),
                metric: r.metric,
                protocol: PROTO_STATIC,
                scope: if r.next_hop_address.is_some() {
                    SCOPE_UNIVERSE
                } else {
                    SCOPE_LINK
                },
            };
            add.push((key, route));
        }
    }
    let keys: Vec<RouteMatch> = add
        .iter()
        .map(|(k, _)| k.clone())
        .chain(remove.iter().cloned())
        .collect();
    // The adds that select no route now: what the apply adds, and a rollback removes.
    let added: Vec<RouteMatch> = add
        .iter()
        .filter(|(k, _)| !node.routes.iter().any(|r| k.matches(r)))
        .map(|(k, _)| k.clone())
        .collect();
    let routes = RouteGoal::Change { add, remove };

    let snapshot = snapshot(&targets, node, &keys, added);
    Ok(Plan {
        targets,
        routes,
        snapshot,
    })
}

/// The network of a destination (the kernel refuses host bits in a route).
fn network(dst: ipnetwork::IpNetwork) -> ipnetwork::IpNetwork {
    ipnetwork::IpNetwork::new(dst.network(), dst.prefix()).unwrap_or(dst)
}

/// Links this crate never touches: the loopback, and pods' veths: a veth whose peer is in
/// another namespace and that a bridge the state does not name holds (a CNI plugged it). Such
/// a veth with no controller, or in a bridge of this state, is a node's link like any other
/// (a test node's or a VM's NIC can be a veth).
fn guard(node: &NodeState, name: &str, listed: &dyn Fn(&str) -> bool) -> Result<(), Error> {
    let plugged_elsewhere = node
        .links
        .get(name)
        .and_then(|l| l.master.as_deref())
        .is_some_and(|m| !listed(m));
    if node.is_pod_link(name) && plugged_elsewhere {
        return Err(refuse(format!("interface {name} is a pod's veth (its peer is in another namespace, and a bridge this state does not name holds it) and is not touched")));
    }
    if node
        .links
        .get(name)
        .is_some_and(|l| l.kind == Kind::Loopback)
    {
        return Err(refuse(format!(
            "interface {name} is the loopback and is not touched"
        )));
    }
    Ok(())
}

/// Deleting this could not be undone: a veth whose peer is in another namespace (the peer goes
/// with it and a rollback cannot re-create it there). A bridge that holds pods' veths may go,
/// as with NetworkManager: its pods are unplugged (a veth of a test node's or VM's NIC cannot
/// be told from a pod's by the kernel alone).
fn refuse_unrestorable_delete(cur: &crate::node::LinkState) -> Result<(), Error> {
    let name = &cur.name;
    if cur.kind == Kind::Veth && cur.foreign_peer {
        return Err(refuse(format!(
            "interface {name}: a veth whose peer is in another namespace cannot be made absent (its peer would be deleted with it, and a rollback could not re-create it there)"
        )));
    }
    Ok(())
}

fn iface_target(
    iface: &Iface,
    node: &NodeState,
    will_exist: &dyn Fn(&str) -> bool,
    listed: &dyn Fn(&str) -> bool,
) -> Result<LinkTarget, Error> {
    let name = &iface.name;
    guard(node, name, listed)?;
    let cur = node.links.get(name);
    let wanted_kind = kind_of(iface.kind);
    if let (Some(cur), Some(want)) = (cur, &wanted_kind) {
        // nmstate has long reported veths as ethernet: accept that spelling.
        let same = cur.kind == *want || (cur.kind == Kind::Veth && *want == Kind::Ethernet);
        if !same {
            return Err(refuse(format!(
                "interface {name} is a {} link, not {}",
                cur.kind.kernel_name(),
                iface.kind.nmstate_name()
            )));
        }
    }
    if iface.state == IfaceState::Absent {
        if let Some(cur) = cur {
            refuse_unrestorable_delete(cur)?;
        }
        return Ok(match cur {
            None => LinkTarget::gone(name, wanted_kind.unwrap_or(Kind::Ethernet)),
            Some(cur) => match cur.kind {
                Kind::Bridge | Kind::Bond | Kind::Vlan | Kind::Dummy | Kind::Veth => {
                    LinkTarget::gone(name, cur.kind.clone())
                }
                // A NIC cannot be deleted: absent takes it down without addresses.
                Kind::Ethernet => LinkTarget {
                    up: Some(false),
                    ipv4: Some(Vec::new()),
                    ipv6: Some(Vec::new()),
                    ..LinkTarget::new(name, Kind::Ethernet)
                },
                _ => {
                    return Err(refuse(format!(
                        "interface {name}: a {} link cannot be made absent",
                        cur.kind.kernel_name()
                    )))
                }
            },
        });
    }
    let kind = match (cur, wanted_kind) {
        (Some(cur), _) => cur.kind.clone(),
        (None, None) => {
            return Err(refuse(format!(
            "interface {name} does not exist (type unknown is only accepted for existing links)"
        )))
        }
        (None, Some(Kind::Ethernet)) => {
            return Err(refuse(format!(
                "interface {name} does not exist (an ethernet interface cannot be created)"
            )))
        }
        (None, Some(k)) => k,
    };
    let mut t = LinkTarget::new(name, kind.clone());
    match (&kind, cur) {
        (Kind::Vlan, Some(cur)) if iface.vlan.is_some() && iface.vlan != cur.vlan => {
            return Err(refuse(format!(
                "interface {name}: the vlan base-iface and id of an existing vlan cannot change"
            )));
        }
        (Kind::Vlan, None) => {
            let Some((base, _)) = &iface.vlan else {
                return Err(refuse(format!(
                    "interface {name}: a new vlan needs vlan.base-iface and vlan.id"
                )));
            };
            if !will_exist(base) {
                return Err(refuse(format!(
                    "interface {name}: base interface {base} does not exist"
                )));
            }
            guard(node, base, listed)?;
            t.vlan = iface.vlan.clone();
        }
        (Kind::Veth, Some(cur))
            if iface.veth_peer.is_some() && iface.veth_peer != cur.veth_peer =>
        {
            return Err(refuse(format!(
                "interface {name}: the peer of an existing veth cannot change"
            )));
        }
        (Kind::Veth, None) => {
            let Some(peer) = &iface.veth_peer else {
                return Err(refuse(format!(
                    "interface {name}: a new veth needs veth.peer"
                )));
            };
            if node.links.contains_key(peer) {
                return Err(refuse(format!(
                    "interface {name}: its peer {peer} already exists"
                )));
            }
            t.veth_peer = Some(peer.clone());
        }
        (Kind::Bond, None) if iface.bond.as_ref().and_then(|b| b.mode).is_none() => {
            return Err(refuse(format!(
                "interface {name}: a new bond needs link-aggregation.mode"
            )));
        }
        _ => {}
    }
    t.mtu = iface.mtu;
    t.mac = iface.mac;
    t.alias = iface.description.clone();
    t.up = Some(iface.state == IfaceState::Up);
    for (v6, conf) in [(false, &iface.ipv4), (true, &iface.ipv6)] {
        let Some(conf) = conf else { continue };
        let addrs = match (conf.enabled, &conf.addresses) {
            (Some(false), _) => Some(Vec::new()),
            (_, Some(list)) => Some(list.clone()),
            _ => None,
        };
        if v6 {
            // A list keeps the kernel's link-local addresses, as nmstate does; disabling drops them.
            t.keep_link_local = conf.enabled != Some(false);
            t.ipv6 = addrs;
        } else {
            t.ipv4 = addrs;
        }
    }
    if let Some(b) = &iface.bridge {
        t.bridge = Some(bridge_settings(b));
    }
    if let Some(b) = &iface.bond {
        t.bond = Some(BondSettings {
            mode: b.mode,
            miimon: b.miimon,
            updelay: b.updelay,
            downdelay: b.downdelay,
            min_links: b.min_links,
        });
    }
    Ok(t)
}

fn bridge_settings(b: &BridgeConf) -> BridgeSettings {
    // nmstate counts seconds; the kernel hundredths.
    let centi = |s: Option<u32>| s.map(|s| s * 100);
    let filtering = b
        .ports
        .as_ref()
        .is_some_and(|ports| ports.iter().any(|p| p.vlan.is_some()));
    BridgeSettings {
        stp: b.stp,
        forward_delay: centi(b.forward_delay),
        hello_time: centi(b.hello_time),
        max_age: centi(b.max_age),
        priority: b.priority,
        ageing_time: centi(b.ageing_time),
        multicast_snooping: b.multicast_snooping,
        vlan_filtering: filtering.then_some(true),
    }
}

/// A port's VLAN config as the bridge's VLAN table holds it.
pub(crate) fn port_vlans(conf: &PortVlanConf) -> Vec<PortVlan> {
    let mut vlans: Vec<PortVlan> = Vec::new();
    if !conf.trunk {
        // Access: one VLAN, PVID and untagged (the bridge's default VLAN 1 without a tag).
        vlans.push(PortVlan::access(conf.tag.unwrap_or(1)));
        return vlans;
    }
    let native = conf.tag.filter(|_| conf.enable_native);
    for (min, max) in &conf.trunk_tags {
        vlans.extend(
            (*min..=*max)
                .filter(|v| Some(*v) != native)
                .map(PortVlan::tagged),
        );
    }
    vlans.extend(native.map(PortVlan::access));
    vlans.sort_unstable();
    vlans.dedup();
    vlans
}

/// Everything the targets may change, as it is now: the targets' links, the ports and VLANs a
/// deleted link takes with it, the old masters of moved ports, and the routes through them or
/// selected by the state's routes (`keys`); `added` selects the routes the apply adds.
fn snapshot(
    targets: &[LinkTarget],
    node: &NodeState,
    keys: &[RouteMatch],
    added: Vec<RouteMatch>,
) -> Snapshot {
    let mut names: BTreeSet<String> = targets.iter().map(|t| t.name.clone()).collect();
    // Links deleted with a deleted link (a rollback re-creates them), and its ports (a rollback
    // enslaves them again).
    let mut recreated: BTreeSet<String> = BTreeSet::new();
    let mut released: BTreeSet<String> = BTreeSet::new();
    for t in targets {
        let Some(cur) = node.links.get(&t.name) else {
            continue;
        };
        if !t.exists {
            recreated.insert(t.name.clone());
            recreated.extend(cur.veth_peer.clone());
            recreated.extend(
                node.links
                    .values()
                    .filter(|l| l.vlan.as_ref().is_some_and(|(base, _)| base == &t.name))
                    .map(|l| l.name.clone()),
            );
            released.extend(node.ports_of(&t.name));
        }
        names.extend(cur.master.clone());
    }
    names.extend(recreated.iter().cloned());
    names.extend(released.iter().cloned());
    // Pods' veths only where the state names them itself (a pod's may be gone by the time of a
    // rollback; a named one is the node's).
    let named: BTreeSet<&str> = targets.iter().map(|t| t.name.as_str()).collect();
    let links: Vec<LinkTarget> = names
        .iter()
        .filter(|n| !node.is_pod_link(n) || named.contains(n.as_str()))
        .map(|n| match node.links.get(n) {
            Some(cur) => LinkTarget::as_it_is(cur),
            None => LinkTarget::gone(
                n,
                targets
                    .iter()
                    .find(|t| &t.name == n)
                    .map(|t| t.kind.clone())
                    .unwrap_or(Kind::Ethernet),
            ),
        })
        .collect();
    let check = links
        .iter()
        .map(|was| {
            checked(
                was,
                targets.iter().find(|t| t.name == was.name),
                recreated.contains(&was.name),
                released.contains(&was.name),
            )
        })
        .collect();
    let link_names: Vec<String> = names.into_iter().collect();
    let removed = node
        .routes
        .iter()
        .filter(|r| RouteGoal::in_scope(&link_names, keys, r))
        .cloned()
        .collect();
    Snapshot {
        links,
        check,
        routes: RouteGoal::Undo { added, removed },
    }
}

/// What a rollback verifies of a link that `was` so: all of it when the apply deletes it (it is
/// re-created), otherwise what the target `t` changes (and what enslaving changes: state, MTU,
/// MAC), a released port's controller and port settings, and for any other link that it still
/// exists. IPv6 link-local addresses are never compared: the kernel makes them.
fn checked(
    was: &LinkTarget,
    t: Option<&LinkTarget>,
    recreated: bool,
    released: bool,
) -> LinkTarget {
    if !was.exists {
        return was.clone();
    }
    if recreated {
        return LinkTarget {
            keep_link_local: true,
            ..was.clone()
        };
    }
    let sets = |f: fn(&LinkTarget) -> bool| t.is_some_and(f);
    let enslaved = sets(|t| t.master.is_some());
    let mut c = LinkTarget::new(&was.name, was.kind.clone());
    c.keep_link_local = true;
    if sets(|t| t.mtu.is_some()) || enslaved {
        c.mtu = was.mtu;
    }
    if sets(|t| t.mac.is_some()) || enslaved {
        c.mac = was.mac;
    }
    if sets(|t| t.alias.is_some()) {
        c.alias.clone_from(&was.alias);
    }
    if sets(|t| t.up.is_some()) || enslaved {
        c.up = was.up;
    }
    if enslaved || released || sets(|t| t.port.is_some() || t.port_vlans.is_some()) {
        c.master.clone_from(&was.master);
        c.port = was.port;
        c.port_vlans.clone_from(&was.port_vlans);
    }
    if sets(|t| t.ipv4.is_some()) {
        c.ipv4.clone_from(&was.ipv4);
    }
    if sets(|t| t.ipv6.is_some()) {
        c.ipv6.clone_from(&was.ipv6);
    }
    if sets(|t| t.bridge.is_some()) {
        c.bridge = was.bridge;
    }
    if sets(|t| t.bond.is_some()) {
        c.bond = was.bond;
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::LinkState;
    use crate::verify::mismatches;
    use serde_json::json;

    fn refusal(state: serde_json::Value, node: &NodeState) -> String {
        let desired = DesiredState::parse(&state).expect("parses");
        match plan(&desired, node) {
            Err(Error::Refused(msg)) => msg,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    /// A veth whose peer is in another namespace.
    fn foreign_veth(name: &str) -> LinkState {
        LinkState {
            foreign_peer: true,
            ..LinkState::for_test(name, Kind::Veth)
        }
    }

    fn node_of(links: Vec<LinkState>) -> NodeState {
        NodeState {
            links: links.into_iter().map(|l| (l.name.clone(), l)).collect(),
            routes: Vec::new(),
        }
    }

    #[test]
    fn an_absent_route_without_destination_or_interface_is_refused() {
        let msg = refusal(
            json!({"routes": {"config": [{"metric": 100, "state": "absent"}]}}),
            &NodeState::default(),
        );
        assert!(
            msg.starts_with("route 0: an absent route needs a destination or a next-hop-interface"),
            "{msg}"
        );
    }

    #[test]
    fn absent_on_a_veth_whose_peer_is_in_another_namespace_is_refused() {
        let node = node_of(vec![foreign_veth("eth1")]);
        let msg = refusal(
            json!({"interfaces": [{"name": "eth1", "type": "veth", "state": "absent"}]}),
            &node,
        );
        assert!(
            msg.starts_with("interface eth1: a veth whose peer is in another namespace"),
            "{msg}"
        );
    }

    #[test]
    fn a_rollback_check_ignores_link_local_addresses_and_what_the_apply_left_alone() {
        let mut eth1 = LinkState::for_test("eth1", Kind::Ethernet);
        eth1.addresses = vec![
            "192.0.2.10/24".parse().expect("v4"),
            "fe80::1/64".parse().expect("v6"),
        ];
        let node = node_of(vec![eth1.clone()]);
        let desired = DesiredState::parse(&json!({"interfaces": [{"name": "eth1",
            "ipv4": {"enabled": true, "address": [{"ip": "192.0.2.20", "prefix-length": 24}]},
            "ipv6": {"enabled": false}}]}))
        .expect("parses");
        let snapshot = plan(&desired, &node).expect("plan").snapshot;
        // After the rollback: the kernel made another link-local address, and someone set a
        // description and an MTU the apply never touched.
        eth1.addresses[1] = "fe80::2/64".parse().expect("v6");
        eth1.alias = Some("set meanwhile".to_string());
        eth1.mtu = 1400;
        let after = node_of(vec![eth1]);
        assert_eq!(
            mismatches(&after, &snapshot.check, &snapshot.routes),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_rollback_check_compares_what_the_apply_changed() {
        let eth1 = LinkState::for_test("eth1", Kind::Ethernet);
        let node = node_of(vec![eth1.clone()]);
        let desired = DesiredState::parse(&json!({"interfaces": [{"name": "eth1", "mtu": 9000}]}))
            .expect("parses");
        let snapshot = plan(&desired, &node).expect("plan").snapshot;
        let after = node_of(vec![LinkState { mtu: 9000, ..eth1 }]);
        assert_eq!(
            mismatches(&after, &snapshot.check, &snapshot.routes),
            vec!["interface eth1: mtu is not 1500".to_string()]
        );
    }

    #[test]
    fn an_access_port_has_one_untagged_pvid() {
        let conf = PortVlanConf {
            trunk: false,
            tag: Some(100),
            enable_native: false,
            trunk_tags: vec![],
        };
        assert_eq!(port_vlans(&conf), vec![PortVlan::access(100)]);
    }

    #[test]
    fn a_trunk_with_a_native_vlan_tags_the_rest() {
        let conf = PortVlanConf {
            trunk: true,
            tag: Some(11),
            enable_native: true,
            trunk_tags: vec![(10, 12), (20, 20)],
        };
        assert_eq!(
            port_vlans(&conf),
            vec![
                PortVlan::tagged(10),
                PortVlan::access(11),
                PortVlan::tagged(12),
                PortVlan::tagged(20)
            ]
        );
    }

    #[test]
    fn a_trunk_without_native_carries_only_tagged_vlans() {
        let conf = PortVlanConf {
            trunk: true,
            tag: Some(5),
            enable_native: false,
            trunk_tags: vec![(5, 6)],
        };
        assert_eq!(
            port_vlans(&conf),
            vec![PortVlan::tagged(5), PortVlan::tagged(6)]
        );
    }
}
