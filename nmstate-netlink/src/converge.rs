//! Walks the node towards a set of targets, one netlink request per change, recording each
//! change as a line. The same walk applies a plan and rolls it back (towards the snapshot).
//!
//! Order: links are created first (a kind this kernel lacks fails before anything that existed
//! is changed), then deleted, released from old masters, changed, enslaved, set up, given their
//! addresses; routes come last because they need the links and addresses.

use std::collections::BTreeSet;

use cni_common::netlink::{BondSettings, Netlink, NewRoute, PortVlan, RouteInfo, Veth};
use ipnetwork::IpNetwork;

use crate::node::{Kind, NodeState};
use crate::target::{is_link_local, same_route, LinkTarget, RouteGoal};

/// The changes made so far, one line each.
pub(crate) struct Converge<'a> {
    nl: &'a Netlink,
    pub steps: Vec<String>,
}

impl<'a> Converge<'a> {
    pub(crate) fn new(nl: &'a Netlink) -> Converge<'a> {
        Converge {
            nl,
            steps: Vec::new(),
        }
    }

    fn done(&mut self, line: String) {
        tracing::info!(step = %line, "changed");
        self.steps.push(line);
    }

    fn read(&self) -> Result<NodeState, String> {
        NodeState::read(self.nl).map_err(|e| e.to_string())
    }

    /// Makes the node match `targets` and `routes`; the first failure ends the walk.
    pub(crate) fn run(&mut self, targets: &[LinkTarget], routes: &RouteGoal) -> Result<(), String> {
        self.create(targets)?;
        self.delete(targets)?;
        let node = self.read()?;
        let downed = self.release_and_settle(targets, &node)?;
        let node = self.read()?;
        self.enslave(targets, &node)?;
        self.raise(targets, &downed)?;
        let node = self.read()?;
        self.addresses(targets, &node)?;
        let node = self.read()?;
        self.routes(routes, &node)
    }

    fn create(&mut self, targets: &[LinkTarget]) -> Result<(), String> {
        // VLANs after everything else: their base may be created here too.
        let ordered = targets
            .iter()
            .filter(|t| t.kind != Kind::Vlan)
            .chain(targets.iter().filter(|t| t.kind == Kind::Vlan));
        for t in ordered.filter(|t| t.exists) {
            let nl = self.nl;
            if link(nl, &t.name)?.is_some() {
                continue;
            }
            let kind = t.kind.kernel_name().to_string();
            let result = match &t.kind {
                Kind::Bridge => nl.link_add_bridge(&t.name, None, false).map(drop),
                Kind::Dummy => nl.link_add_dummy(&t.name).map(drop),
                Kind::Bond => nl
                    .link_add_bond(&t.name, &t.bond.unwrap_or_default())
                    .map(drop),
                Kind::Vlan => {
                    let Some((base, id)) = &t.vlan else {
                        return Err(format!(
                            "interface {}: a vlan needs a base and an ID",
                            t.name
                        ));
                    };
                    let Some(base_link) = link(nl, base)? else {
                        return Err(format!(
                            "interface {}: base interface {base} does not exist",
                            t.name
                        ));
                    };
                    nl.link_add_vlan(&t.name, base_link.index, *id).map(drop)
                }
                Kind::Veth => {
                    let Some(peer) = &t.veth_peer else {
                        return Err(format!(
                            "interface {}: a veth needs its peer's name",
                            t.name
                        ));
                    };
                    nl.link_add_veth(&Veth {
                        name: &t.name,
                        peer_name: peer,
                        ..Veth::default()
                    })
                    .map(drop)
                }
                other => {
                    return Err(format!(
                        "interface {}: a {} link cannot be created",
                        t.name,
                        other.kernel_name()
                    ))
                }
            };
            match result {
                Ok(()) => self.done(format!("{}: created ({kind})", t.name)),
                Err(e) if e.errno() == libc_eopnotsupp() => {
                    return Err(format!(
                        "interface {}: this kernel cannot create {kind} links (Operation not supported)",
                        t.name
                    ))
                }
                Err(e) => return Err(format!("interface {}: {e}", t.name)),
            }
        }
        Ok(())
    }

    fn delete(&mut self, targets: &[LinkTarget]) -> Result<(), String> {
        for t in targets.iter().filter(|t| !t.exists) {
            if let Some(l) = link(self.nl, &t.name)? {
                self.nl
                    .link_del(l.index)
                    .map_err(|e| format!("interface {}: {e}", t.name))?;
                self.done(format!("{}: deleted", t.name));
            }
        }
        Ok(())
    }

    /// Releases links from masters they must leave, takes down what must be down (and bond
    /// ports about to be enslaved, which the kernel wants down), and sets each link's own
    /// properties. Returns the links taken down only for enslaving.
    fn release_and_settle(
        &mut self,
        targets: &[LinkTarget],
        node: &NodeState,
    ) -> Result<Vec<String>, String> {
        let mut downed = Vec::new();
        for t in targets.iter().filter(|t| t.exists) {
            let Some(cur) = node.links.get(&t.name) else {
                return Err(format!(
                    "interface {}: missing after it was created",
                    t.name
                ));
            };
            let fail = |e: cni_common::Error| format!("interface {}: {e}", t.name);
            let want_master = t.master.as_deref().map(|m| (!m.is_empty()).then_some(m));
            if let Some(want) = want_master {
                if cur.master.is_some() && cur.master.as_deref() != want {
                    self.nl.link_set_nomaster(cur.index).map_err(fail)?;
                    self.done(format!(
                        "{}: released from {}",
                        t.name,
                        cur.master.as_deref().unwrap_or("")
                    ));
                }
                let to_bond = want.is_some_and(|m| {
                    targets.iter().any(|o| o.name == m && o.kind == Kind::Bond)
                        || node.links.get(m).is_some_and(|l| l.kind == Kind::Bond)
                });
                if to_bond && cur.master.as_deref() != want && cur.up {
                    self.nl.link_set_down(cur.index).map_err(fail)?;
                    downed.push(t.name.clone());
                    self.done(format!("{}: down to join {}", t.name, want.unwrap_or("")));
                }
            }
            if t.up == Some(false) && cur.up {
                self.nl.link_set_down(cur.index).map_err(fail)?;
                self.done(format!("{}: down", t.name));
            }
            if let Some(mtu) = t.mtu.filter(|m| *m != cur.mtu) {
                self.nl.link_set_mtu(cur.index, mtu).map_err(fail)?;
                self.done(format!("{}: mtu {} -> {mtu}", t.name, cur.mtu));
            }
            if let Some(mac) = t.mac.filter(|m| Some(*m) != cur.mac) {
                self.nl.link_set_address(cur.index, &mac).map_err(fail)?;
                self.done(format!("{}: mac-address {mac}", t.name));
            }
            if let Some(alias) = t
                .alias
                .as_ref()
                .filter(|a| **a != cur.alias.clone().unwrap_or_default())
            {
                self.nl.link_set_alias(cur.index, alias).map_err(fail)?;
                self.done(format!("{}: description {alias:?}", t.name));
            }
            if let (Some(want), Some(have)) = (t.bridge, cur.bridge) {
                let change = cni_common::netlink::BridgeSettings {
                    stp: differs(want.stp, have.stp),
                    forward_delay: differs(want.forward_delay, have.forward_delay),
                    hello_time: differs(want.hello_time, have.hello_time),
                    max_age: differs(want.max_age, have.max_age),
                    priority: differs(want.priority, have.priority),
                    ageing_time: differs(want.ageing_time, have.ageing_time),
                    multicast_snooping: differs(want.multicast_snooping, have.multicast_snooping),
                    vlan_filtering: differs(want.vlan_filtering, have.vlan_filtering),
                };
                if change != Default::default() {
                    self.nl.bridge_set(cur.index, &change).map_err(fail)?;
                    self.done(format!("{}: bridge options {}", t.name, describe(&change)));
                }
            }
            if let (Some(want), Some(have)) = (t.bond, cur.bond) {
                let change = BondSettings {
                    mode: differs(want.mode, have.mode),
                    miimon: differs(want.miimon, have.miimon),
                    updelay: differs(want.updelay, have.updelay),
                    downdelay: differs(want.downdelay, have.downdelay),
                    min_links: differs(want.min_links, have.min_links),
                };
                if change != BondSettings::default() {
                    self.nl.bond_set(cur.index, &change).map_err(fail)?;
                    self.done(format!("{}: bond options {}", t.name, describe(&change)));
                }
            }
        }
        Ok(downed)
    }

    /// Enslaves links to their masters, then sets their port settings and VLANs.
    fn enslave(&mut self, targets: &[LinkTarget], node: &NodeState) -> Result<(), String> {
        for t in targets.iter().filter(|t| t.exists) {
            let Some(cur) = node.links.get(&t.name) else {
                continue;
            };
            let fail = |e: cni_common::Error| format!("interface {}: {e}", t.name);
            if let Some(master) = t.master.as_deref().filter(|m| !m.is_empty()) {
                if cur.master.as_deref() != Some(master) {
                    let Some(m) = node.links.get(master) else {
                        return Err(format!(
                            "interface {}: controller {master} does not exist",
                            t.name
                        ));
                    };
                    self.nl.link_set_master(cur.index, m.index).map_err(fail)?;
                    self.done(format!("{}: port of {master}", t.name));
                }
            }
            if let Some(want) = t.port {
                let have = cur
                    .port
                    .filter(|_| cur.master == t.master)
                    .unwrap_or_default();
                let change = cni_common::netlink::BridgePortSettings {
                    priority: differs(want.priority, have.priority),
                    cost: differs(want.cost, have.cost),
                    hairpin: differs(want.hairpin, have.hairpin),
                };
                if change != Default::default() {
                    self.nl
                        .bridge_link_set_stp(cur.index, &change)
                        .map_err(fail)?;
                    self.done(format!("{}: port options {}", t.name, describe(&change)));
                }
            }
            if let Some(want) = &t.port_vlans {
                let have = self.nl.bridge_vlan_show(cur.index).map_err(fail)?;
                let extra: Vec<PortVlan> =
                    have.iter().filter(|v| !want.contains(v)).copied().collect();
                let missing: Vec<PortVlan> =
                    want.iter().filter(|v| !have.contains(v)).copied().collect();
                if !extra.is_empty() {
                    self.nl.bridge_vlan_del(cur.index, &extra).map_err(fail)?;
                }
                if !missing.is_empty() {
                    self.nl.bridge_vlan_add(cur.index, &missing).map_err(fail)?;
                }
                if !extra.is_empty() || !missing.is_empty() {
                    self.done(format!("{}: port VLANs {}", t.name, vlans_text(want)));
                }
            }
        }
        Ok(())
    }

    fn raise(&mut self, targets: &[LinkTarget], downed: &[String]) -> Result<(), String> {
        // Masters before their ports, so that a port comes up into a working bridge or bond.
        let masters: BTreeSet<&str> = targets.iter().filter_map(|t| t.master.as_deref()).collect();
        let ordered = targets
            .iter()
            .filter(|t| masters.contains(t.name.as_str()))
            .chain(
                targets
                    .iter()
                    .filter(|t| !masters.contains(t.name.as_str())),
            );
        for t in ordered.filter(|t| t.exists) {
            let was_downed = downed.contains(&t.name);
            if t.up == Some(true) || (was_downed && t.up.is_none()) {
                let Some(cur) = link(self.nl, &t.name)? else {
                    continue;
                };
                if !cur.up {
                    self.nl
                        .link_set_up(cur.index)
                        .map_err(|e| format!("interface {}: {e}", t.name))?;
                    self.done(format!("{}: up", t.name));
                }
            }
        }
        Ok(())
    }

    fn addresses(&mut self, targets: &[LinkTarget], node: &NodeState) -> Result<(), String> {
        for t in targets.iter().filter(|t| t.exists) {
            let Some(cur) = node.links.get(&t.name) else {
                continue;
            };
            let mut want: Vec<IpNetwork> = Vec::new();
            let managed = |a: &IpNetwork| match a {
                IpNetwork::V4(_) => t.ipv4.is_some(),
                IpNetwork::V6(_) => t.ipv6.is_some() && !(t.keep_link_local && is_link_local(a)),
            };
            want.extend(t.ipv4.iter().flatten());
            want.extend(
                t.ipv6
                    .iter()
                    .flatten()
                    .filter(|a| !(t.keep_link_local && is_link_local(a))),
            );
            for a in cur
                .addresses
                .iter()
                .filter(|a| managed(a) && !want.contains(a))
            {
                match self.nl.addr_del(cur.index, *a) {
                    Ok(()) => self.done(format!("{}: address {a} removed", t.name)),
                    // Gone with another address (an IPv4 secondary) or with the link going down.
                    Err(e) if e.errno() == 99 => {}
                    Err(e) => return Err(format!("interface {}: {e}", t.name)),
                }
            }
            for a in want.iter().filter(|a| !cur.addresses.contains(a)) {
                match self.nl.addr_add(cur.index, *a) {
                    Ok(()) => self.done(format!("{}: address {a} added", t.name)),
                    // The kernel made it meanwhile (an IPv6 link-local address on link up).
                    Err(e) if e.errno() == 17 => {}
                    Err(e) => return Err(format!("interface {}: {e}", t.name)),
                }
            }
        }
        Ok(())
    }

    fn routes(&mut self, goal: &RouteGoal, node: &NodeState) -> Result<(), String> {
        let (add, remove): (Vec<_>, Vec<_>) = match goal {
            RouteGoal::Change { add, remove } => {
                let add = add
                    .iter()
                    .filter(|(key, _)| !node.routes.iter().any(|r| key.matches(r)))
                    .map(|(_, r)| r.clone())
                    .collect();
                let remove = node
                    .routes
                    .iter()
                    .filter(|r| {
                        r.protocol != crate::node::PROTO_KERNEL
                            && remove.iter().any(|m| m.matches(r))
                    })
                    .cloned()
                    .collect();
                (add, remove)
            }
            RouteGoal::Exact {
                links,
                keys,
                routes,
            } => {
                let now: Vec<_> = node
                    .routes
                    .iter()
                    .filter(|r| RouteGoal::in_scope(links, keys, r))
                    .collect();
                let add = routes
                    .iter()
                    .filter(|r| !now.iter().any(|n| same_route(n, r)))
                    .cloned()
                    .collect();
                let remove = now
                    .into_iter()
                    .filter(|n| !routes.iter().any(|r| same_route(n, r)))
                    .cloned()
                    .collect();
                (add, remove)
            }
        };
        for r in &remove {
            let oif = r
                .oif
                .as_ref()
                .and_then(|o| node.links.get(o))
                .map(|l| l.index);
            let info = RouteInfo {
                dst: r.dst,
                gw: r.gw,
                oif,
                table: r.table,
                metric: r.metric,
                protocol: r.protocol,
                scope: r.scope,
            };
            match self.nl.route_del(&info) {
                Ok(()) => self.done(format!("route {} removed", route_text(r))),
                Err(e) if e.errno() == 3 => {}
                Err(e) => return Err(format!("route {}: {e}", route_text(r))),
            }
        }
        for r in &add {
            let Some(oif) = r.oif.as_ref().and_then(|o| node.links.get(o)) else {
                return Err(format!(
                    "route {}: its interface does not exist",
                    route_text(r)
                ));
            };
            let new = NewRoute {
                dst: r.dst,
                gw: r.gw,
                mtu: None,
                advmss: None,
                priority: r.metric,
                table: Some(r.table),
                scope: Some(r.scope),
            };
            match self.nl.route_add(oif.index, &new) {
                Ok(()) => self.done(format!("route {} added", route_text(r))),
                Err(e) if e.errno() == 17 => {}
                Err(e) => return Err(format!("route {}: {e}", route_text(r))),
            }
        }
        Ok(())
    }
}

fn link(nl: &Netlink, name: &str) -> Result<Option<cni_common::netlink::Link>, String> {
    nl.link_show(name)
        .map_err(|e| format!("interface {name}: {e}"))
}

/// EOPNOTSUPP: the kernel lacks the link kind (its module is not there).
fn libc_eopnotsupp() -> i32 {
    95
}

/// `want` when it is set and differs from `have`.
fn differs<T: PartialEq + Copy>(want: Option<T>, have: Option<T>) -> Option<T> {
    want.filter(|w| Some(*w) != have)
}

/// `{stp: Some(false)}` as `stp false`.
fn describe<T: std::fmt::Debug>(settings: &T) -> String {
    let text = format!("{settings:?}");
    let inner = text
        .split_once('{')
        .map(|(_, rest)| rest.trim_end_matches('}'))
        .unwrap_or(&text);
    inner
        .split(',')
        .filter_map(|f| {
            let (k, v) = f.split_once(':')?;
            let v = v.trim();
            let v = v.strip_prefix("Some(")?.strip_suffix(')')?;
            Some(format!("{} {v}", k.trim()))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn vlans_text(vlans: &[PortVlan]) -> String {
    if vlans.is_empty() {
        return "none".to_string();
    }
    vlans
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn route_text(r: &crate::node::RouteState) -> String {
    let via = r.gw.map(|g| format!(" via {g}")).unwrap_or_default();
    let dev = r
        .oif
        .as_ref()
        .map(|o| format!(" dev {o}"))
        .unwrap_or_default();
    let metric = r.metric.map(|m| format!(" metric {m}")).unwrap_or_default();
    format!("{}{via}{dev}{metric} table {}", r.dst, r.table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cni_common::netlink::BridgeSettings;

    #[test]
    fn a_change_is_described_by_its_set_fields_only() {
        let change = BridgeSettings {
            stp: Some(false),
            ageing_time: Some(30000),
            ..BridgeSettings::default()
        };
        assert_eq!(describe(&change), "stp false, ageing_time 30000");
    }

    #[test]
    fn only_differing_wanted_values_are_changes() {
        assert_eq!(differs(Some(1), Some(1)), None);
        assert_eq!(differs(Some(2), Some(1)), Some(2));
        assert_eq!(differs(None::<u8>, Some(1)), None);
    }
}
