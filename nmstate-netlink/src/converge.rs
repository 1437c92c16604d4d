//! Walks the node towards a set of targets, one netlink request per change, recording each
//! change as a line. The same walk applies a plan and rolls it back (towards the snapshot).
//!
//! Order: links are created first (a kind this kernel lacks fails before anything that existed
//! is changed), then deleted, released from old masters, changed, given their MTUs, enslaved,
//! set up, given their addresses; routes come last because they need the links and addresses. Within a phase,
//! links that others sit on come in the order the kernel needs: a VLAN's base is created and
//! brought up before the VLAN, a controller is brought up before its ports, and an MTU is
//! raised on the lower links first and lowered on the upper links first.
//!
//! An apply's walk ends at the first failure (the rollback then undoes what it did). A
//! rollback's walk is best effort: a failure is collected and the walk goes on, so that one
//! link that cannot be put back does not leave every other change in place.

use std::collections::{BTreeMap, BTreeSet};

use cni_common::netlink::{
    BondSettings, BridgePortSettings, BridgeSettings, Netlink, NewRoute, PortVlan, RouteInfo, Veth,
};
use ipnetwork::IpNetwork;
use nix::libc::{EADDRNOTAVAIL, EEXIST, EOPNOTSUPP, ESRCH};

use crate::node::{Kind, NodeState, RouteState, PROTO_KERNEL};
use crate::target::{is_link_local, same_route, LinkTarget, RouteGoal, RouteMatch};

/// The changes made so far, one line each, and what went wrong on the way.
pub(crate) struct Converge<'a> {
    nl: &'a Netlink,
    /// A rollback's walk: a failure is collected in `errors` and the walk goes on.
    best_effort: bool,
    pub steps: Vec<String>,
    pub errors: Vec<String>,
    /// A write request was sent, whether or not it succeeded: the node may have changed.
    pub sent: bool,
    /// A write request was sent that the kernel did not refuse as unsupported. A create the
    /// kernel refuses with EOPNOTSUPP (it lacks the kind) changed nothing.
    pub touched: bool,
}

impl<'a> Converge<'a> {
    /// A walk that ends at the first failure: an apply.
    pub(crate) fn apply(nl: &'a Netlink) -> Converge<'a> {
        Converge {
            nl,
            best_effort: false,
            steps: Vec::new(),
            errors: Vec::new(),
            sent: false,
            touched: false,
        }
    }

    /// A walk that goes on past failures and collects them: a rollback or a recovery.
    pub(crate) fn rollback(nl: &'a Netlink) -> Converge<'a> {
        Converge {
            best_effort: true,
            ..Converge::apply(nl)
        }
    }

    fn done(&mut self, line: String) {
        tracing::info!(step = %line, "changed");
        self.steps.push(line);
    }

    /// A failure: it ends an apply's walk; a rollback's walk records it and goes on.
    fn fail(&mut self, msg: String) -> Result<(), String> {
        if self.best_effort {
            tracing::warn!(error = %msg, "rollback step failed");
            self.errors.push(msg);
            Ok(())
        } else {
            Err(msg)
        }
    }

    /// The outcome of one write request about `what`: `line` recorded on success, the errnos
    /// in `tolerated` ignored, any other error a failure. True when it succeeded.
    fn wrote(
        &mut self,
        what: &str,
        result: Result<(), cni_common::Error>,
        tolerated: &[i32],
        line: String,
    ) -> Result<bool, String> {
        self.sent = true;
        self.touched = true;
        match result {
            Ok(()) => {
                self.done(line);
                Ok(true)
            }
            Err(e) if tolerated.contains(&e.errno()) => Ok(false),
            Err(e) => self.fail(format!("{what}: {e}")).map(|()| false),
        }
    }

    /// The node as it is now; None when reading it failed in a rollback (the phase that needs
    /// it is skipped, the failure collected).
    fn node(&mut self) -> Result<Option<NodeState>, String> {
        match NodeState::read(self.nl) {
            Ok(node) => Ok(Some(node)),
            Err(e) => self.fail(e.to_string()).map(|()| None),
        }
    }

    /// One link as it is now; None when it is not there or reading it failed in a rollback.
    fn link(&mut self, name: &str) -> Result<Option<cni_common::netlink::Link>, String> {
        match link(self.nl, name) {
            Ok(l) => Ok(l),
            Err(e) => self.fail(e).map(|()| None),
        }
    }

    /// Makes the node match `targets` and `routes`. An apply's walk returns the first failure;
    /// a rollback's runs every phase and leaves its failures in `errors`.
    pub(crate) fn run(&mut self, targets: &[LinkTarget], routes: &RouteGoal) -> Result<(), String> {
        self.create(targets)?;
        self.delete(targets)?;
        let mut downed = Vec::new();
        if let Some(node) = self.node()? {
            downed = self.release_remoded_bonds(targets, &node)?;
        }
        if let Some(node) = self.node()? {
            downed.extend(self.release_and_settle(targets, &node)?);
        }
        if let Some(node) = self.node()? {
            self.mtu(targets, &node)?;
        }
        if let Some(node) = self.node()? {
            self.enslave(targets, &node)?;
        }
        if let Some(node) = self.node()? {
            self.raise(targets, &downed, &node)?;
        }
        if let Some(node) = self.node()? {
            self.addresses(targets, &node)?;
        }
        if let Some(node) = self.node()? {
            self.routes(routes, &node)?;
        }
        Ok(())
    }

    fn create(&mut self, targets: &[LinkTarget]) -> Result<(), String> {
        // A VLAN's base first: it may be created here too.
        let ordered = ordered(targets, &|t| {
            t.vlan.iter().map(|(b, _)| b.clone()).collect()
        });
        for t in ordered.into_iter().filter(|t| t.exists) {
            let nl = self.nl;
            match link(nl, &t.name) {
                Ok(Some(_)) => continue,
                Ok(None) => {}
                Err(e) => {
                    self.fail(e)?;
                    continue;
                }
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
                        self.fail(format!(
                            "interface {}: a vlan needs a base and an ID",
                            t.name
                        ))?;
                        continue;
                    };
                    let base_link = match link(nl, base) {
                        Ok(Some(l)) => l,
                        Ok(None) => {
                            self.fail(format!(
                                "interface {}: base interface {base} does not exist",
                                t.name
                            ))?;
                            continue;
                        }
                        Err(e) => {
                            self.fail(e)?;
                            continue;
                        }
                    };
                    nl.link_add_vlan(&t.name, base_link.index, *id).map(drop)
                }
                Kind::Veth => {
                    let Some(peer) = &t.veth_peer else {
                        self.fail(format!(
                            "interface {}: a veth needs its peer's name",
                            t.name
                        ))?;
                        continue;
                    };
                    nl.link_add_veth(&Veth {
                        name: &t.name,
                        peer_name: peer,
                        ..Veth::default()
                    })
                    .map(drop)
                }
                other => {
                    self.fail(format!(
                        "interface {}: a {} link cannot be created",
                        t.name,
                        other.kernel_name()
                    ))?;
                    continue;
                }
            };
            match result {
                // The kernel lacks the kind (its module is not there): it changed nothing.
                Err(e) if e.errno() == EOPNOTSUPP => {
                    self.sent = true;
                    self.fail(format!(
                        "interface {}: this kernel cannot create {kind} links (Operation not supported)",
                        t.name
                    ))?;
                }
                result => {
                    self.wrote(
                        &format!("interface {}", t.name),
                        result,
                        &[],
                        format!("{}: created ({kind})", t.name),
                    )?;
                }
            }
        }
        Ok(())
    }

    fn delete(&mut self, targets: &[LinkTarget]) -> Result<(), String> {
        for t in targets.iter().filter(|t| !t.exists) {
            if let Some(l) = self.link(&t.name)? {
                let result = self.nl.link_del(l.index);
                self.wrote(
                    &format!("interface {}", t.name),
                    result,
                    &[],
                    format!("{}: deleted", t.name),
                )?;
            }
        }
        Ok(())
    }

    /// Releases the ports of bonds whose mode changes and takes those bonds down: the kernel
    /// changes a bond's mode only so. The ports are targets of the bond (the plan names them),
    /// so the enslave phase puts them back. Returns the links taken down.
    fn release_remoded_bonds(
        &mut self,
        targets: &[LinkTarget],
        node: &NodeState,
    ) -> Result<Vec<String>, String> {
        let mut downed = Vec::new();
        for t in targets.iter().filter(|t| t.changes_bond_mode(node)) {
            let nl = self.nl;
            for port in node.ports_of(&t.name) {
                let Some(p) = node.links.get(&port) else {
                    continue;
                };
                let what = format!("interface {port}");
                self.wrote(
                    &what,
                    nl.link_set_nomaster(p.index),
                    &[],
                    format!("{port}: released from {} to change its mode", t.name),
                )?;
                if p.up
                    && self.wrote(
                        &what,
                        nl.link_set_down(p.index),
                        &[],
                        format!("{port}: down to join {} again", t.name),
                    )?
                {
                    downed.push(port.clone());
                }
            }
            let Some(cur) = node.links.get(&t.name) else {
                continue;
            };
            if cur.up
                && self.wrote(
                    &format!("interface {}", t.name),
                    nl.link_set_down(cur.index),
                    &[],
                    format!("{}: down to change its mode", t.name),
                )?
            {
                downed.push(t.name.clone());
            }
        }
        Ok(downed)
    }

    /// Releases links from masters they must leave, takes down what must be down (and bond
    /// ports about to be enslaved, which the kernel wants down), and sets each link's own
    /// properties but the MTU. Returns the links taken down only for enslaving.
    fn release_and_settle(
        &mut self,
        targets: &[LinkTarget],
        node: &NodeState,
    ) -> Result<Vec<String>, String> {
        let mut downed = Vec::new();
        for t in targets.iter().filter(|t| t.exists) {
            let Some(cur) = node.links.get(&t.name) else {
                self.fail(format!(
                    "interface {}: missing after it was created",
                    t.name
                ))?;
                continue;
            };
            let nl = self.nl;
            let what = format!("interface {}", t.name);
            let want_master = t.master.as_deref().map(|m| (!m.is_empty()).then_some(m));
            if let Some(want) = want_master {
                if cur.master.is_some() && cur.master.as_deref() != want {
                    self.wrote(
                        &what,
                        nl.link_set_nomaster(cur.index),
                        &[],
                        format!(
                            "{}: released from {}",
                            t.name,
                            cur.master.as_deref().unwrap_or("")
                        ),
                    )?;
                }
                let to_bond = want.is_some_and(|m| {
                    targets.iter().any(|o| o.name == m && o.kind == Kind::Bond)
                        || node.links.get(m).is_some_and(|l| l.kind == Kind::Bond)
                });
                if to_bond
                    && cur.master.as_deref() != want
                    && cur.up
                    && self.wrote(
                        &what,
                        nl.link_set_down(cur.index),
                        &[],
                        format!("{}: down to join {}", t.name, want.unwrap_or("")),
                    )?
                {
                    downed.push(t.name.clone());
                }
            }
            if t.up == Some(false) && cur.up {
                self.wrote(
                    &what,
                    nl.link_set_down(cur.index),
                    &[],
                    format!("{}: down", t.name),
                )?;
            }
            if let Some(mac) = t.mac.filter(|m| Some(*m) != cur.mac) {
                self.wrote(
                    &what,
                    nl.link_set_address(cur.index, &mac),
                    &[],
                    format!("{}: mac-address {mac}", t.name),
                )?;
            }
            if let Some(alias) = t
                .alias
                .as_ref()
                .filter(|a| **a != cur.alias.clone().unwrap_or_default())
            {
                self.wrote(
                    &what,
                    nl.link_set_alias(cur.index, alias),
                    &[],
                    format!("{}: description {alias:?}", t.name),
                )?;
            }
            if let (Some(want), Some(have)) = (t.bridge, cur.bridge) {
                let change = BridgeSettings {
                    stp: differs(want.stp, have.stp),
                    forward_delay: differs(want.forward_delay, have.forward_delay),
                    hello_time: differs(want.hello_time, have.hello_time),
                    max_age: differs(want.max_age, have.max_age),
                    priority: differs(want.priority, have.priority),
                    ageing_time: differs(want.ageing_time, have.ageing_time),
                    multicast_snooping: differs(want.multicast_snooping, have.multicast_snooping),
                    vlan_filtering: differs(want.vlan_filtering, have.vlan_filtering),
                };
                if change != BridgeSettings::default() {
                    self.wrote(
                        &what,
                        nl.bridge_set(cur.index, &change),
                        &[],
                        format!("{}: bridge options {change}", t.name),
                    )?;
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
                    self.wrote(
                        &what,
                        nl.bond_set(cur.index, &change),
                        &[],
                        format!("{}: bond options {change}", t.name),
                    )?;
                }
            }
        }
        Ok(downed)
    }

    /// Sets the MTUs: lowered on upper links (VLANs, controllers) before the links they sit on,
    /// raised on the lower links first, so that an upper link never needs more than its lower
    /// link has.
    fn mtu(&mut self, targets: &[LinkTarget], node: &NodeState) -> Result<(), String> {
        let lower_first = ordered(targets, &|t| lower_links(t, targets, node));
        for raising in [false, true] {
            let pass: Vec<&LinkTarget> = if raising {
                lower_first.clone()
            } else {
                lower_first.iter().rev().copied().collect()
            };
            for t in pass.into_iter().filter(|t| t.exists) {
                let Some(want) = t.mtu else { continue };
                // Read now: lowering a base may have lowered the VLANs on it already.
                let Some(cur) = self.link(&t.name)? else {
                    continue;
                };
                if (raising && want > cur.mtu) || (!raising && want < cur.mtu) {
                    let result = self.nl.link_set_mtu(cur.index, want);
                    self.wrote(
                        &format!("interface {}", t.name),
                        result,
                        &[],
                        format!("{}: mtu {} -> {want}", t.name, cur.mtu),
                    )?;
                }
            }
        }
        Ok(())
    }

    /// Enslaves links to their masters, then sets their port settings and VLANs.
    fn enslave(&mut self, targets: &[LinkTarget], node: &NodeState) -> Result<(), String> {
        for t in targets.iter().filter(|t| t.exists) {
            let Some(cur) = node.links.get(&t.name) else {
                continue;
            };
            let nl = self.nl;
            let what = format!("interface {}", t.name);
            if let Some(master) = t.master.as_deref().filter(|m| !m.is_empty()) {
                if cur.master.as_deref() != Some(master) {
                    let Some(m) = node.links.get(master) else {
                        self.fail(format!(
                            "interface {}: controller {master} does not exist",
                            t.name
                        ))?;
                        continue;
                    };
                    self.wrote(
                        &what,
                        nl.link_set_master(cur.index, m.index),
                        &[],
                        format!("{}: port of {master}", t.name),
                    )?;
                }
            }
            if let Some(want) = t.port {
                let have = cur
                    .port
                    .filter(|_| cur.master == t.master)
                    .unwrap_or_default();
                let change = BridgePortSettings {
                    priority: differs(want.priority, have.priority),
                    cost: differs(want.cost, have.cost),
                    hairpin: differs(want.hairpin, have.hairpin),
                };
                if change != BridgePortSettings::default() {
                    self.wrote(
                        &what,
                        nl.bridge_link_set_stp(cur.index, &change),
                        &[],
                        format!("{}: port options {change}", t.name),
                    )?;
                }
            }
            if let Some(want) = &t.port_vlans {
                let have = match nl.bridge_vlan_show(cur.index) {
                    Ok(have) => have,
                    Err(e) => {
                        self.fail(format!("{what}: {e}"))?;
                        continue;
                    }
                };
                let extra: Vec<PortVlan> =
                    have.iter().filter(|v| !want.contains(v)).copied().collect();
                let missing: Vec<PortVlan> =
                    want.iter().filter(|v| !have.contains(v)).copied().collect();
                if !extra.is_empty() {
                    self.wrote(
                        &what,
                        nl.bridge_vlan_del(cur.index, &extra),
                        &[],
                        format!("{}: port VLANs {} removed", t.name, vlans_text(&extra)),
                    )?;
                }
                if !missing.is_empty() {
                    self.wrote(
                        &what,
                        nl.bridge_vlan_add(cur.index, &missing),
                        &[],
                        format!("{}: port VLANs {} added", t.name, vlans_text(&missing)),
                    )?;
                }
            }
        }
        Ok(())
    }

    /// Brings links up: a VLAN's base before the VLAN, a controller before its ports, so that
    /// a link comes up onto something that works.
    fn raise(
        &mut self,
        targets: &[LinkTarget],
        downed: &[String],
        node: &NodeState,
    ) -> Result<(), String> {
        let ordered = ordered(targets, &|t| {
            base_of(t, node)
                .into_iter()
                .chain(master_of(t, node))
                .collect()
        });
        for t in ordered.into_iter().filter(|t| t.exists) {
            let was_downed = downed.contains(&t.name);
            if t.up == Some(true) || (was_downed && t.up.is_none()) {
                let Some(cur) = self.link(&t.name)? else {
                    continue;
                };
                if !cur.up {
                    let result = self.nl.link_set_up(cur.index);
                    self.wrote(
                        &format!("interface {}", t.name),
                        result,
                        &[],
                        format!("{}: up", t.name),
                    )?;
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
            let nl = self.nl;
            let what = format!("interface {}", t.name);
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
                // EADDRNOTAVAIL: gone with another address (an IPv4 secondary) or with the
                // link going down.
                self.wrote(
                    &what,
                    nl.addr_del(cur.index, *a),
                    &[EADDRNOTAVAIL],
                    format!("{}: address {a} removed", t.name),
                )?;
            }
            for a in want.iter().filter(|a| !cur.addresses.contains(a)) {
                // EEXIST: the kernel made it meanwhile (an IPv6 link-local address on link up).
                self.wrote(
                    &what,
                    nl.addr_add(cur.index, *a),
                    &[EEXIST],
                    format!("{}: address {a} added", t.name),
                )?;
            }
        }
        Ok(())
    }

    fn routes(&mut self, goal: &RouteGoal, node: &NodeState) -> Result<(), String> {
        let (add, remove) = route_changes(goal, node);
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
                multipath: false,
                table: r.table,
                metric: r.metric,
                protocol: r.protocol,
                scope: r.scope,
            };
            // ESRCH: gone meanwhile (with its link or its address).
            self.wrote(
                &format!("route {}", route_text(r)),
                self.nl.route_del(&info),
                &[ESRCH],
                format!("route {} removed", route_text(r)),
            )?;
        }
        for r in &add {
            let Some(oif) = r.oif.as_ref().and_then(|o| node.links.get(o)) else {
                self.fail(format!(
                    "route {}: its interface does not exist",
                    route_text(r)
                ))?;
                continue;
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
            // EEXIST: made meanwhile, by the kernel or another daemon.
            self.wrote(
                &format!("route {}", route_text(r)),
                self.nl.route_add(oif.index, &new),
                &[EEXIST],
                format!("route {} added", route_text(r)),
            )?;
        }
        Ok(())
    }
}

/// The routes to add and to remove to reach `goal` from `node`.
fn route_changes(goal: &RouteGoal, node: &NodeState) -> (Vec<RouteState>, Vec<RouteState>) {
    let managed = node.routes.iter().filter(|r| r.protocol != PROTO_KERNEL);
    match goal {
        RouteGoal::Change { add, remove } => {
            let adds = add
                .iter()
                .filter(|(key, _)| !node.routes.iter().any(|r| key.matches(r)))
                .map(|(_, r)| r.clone())
                .collect();
            // A route an add selects is what the state wants, even where an absent route
            // selects it too (remove everything on eth1, then add these on eth1).
            let removes = managed
                .filter(|r| {
                    remove.iter().any(|m| m.matches(r)) && !add.iter().any(|(k, _)| k.matches(r))
                })
                .cloned()
                .collect();
            (adds, removes)
        }
        RouteGoal::Undo { added, removed } => {
            let adds = removed
                .iter()
                .filter(|r| !node.routes.iter().any(|n| same_route(n, r)))
                .cloned()
                .collect();
            let removes = managed
                .filter(|n| undo_removes(added, removed, n))
                .cloned()
                .collect();
            (adds, removes)
        }
    }
}

/// Whether undoing an apply removes `n`: a route one of the apply's adds selects (none did
/// before the apply) that was not there before the apply either.
pub(crate) fn undo_removes(added: &[RouteMatch], removed: &[RouteState], n: &RouteState) -> bool {
    n.protocol != PROTO_KERNEL
        && added.iter().any(|k| k.matches(n))
        && !removed.iter().any(|r| same_route(r, n))
}

fn link(nl: &Netlink, name: &str) -> Result<Option<cni_common::netlink::Link>, String> {
    nl.link_show(name)
        .map_err(|e| format!("interface {name}: {e}"))
}

/// The VLAN base `t` sits on: wanted, or as it is.
fn base_of(t: &LinkTarget, node: &NodeState) -> Option<String> {
    t.vlan
        .as_ref()
        .or_else(|| node.links.get(&t.name).and_then(|l| l.vlan.as_ref()))
        .map(|(base, _)| base.clone())
}

/// The controller `t` will have: wanted, or as it is when the target leaves it alone.
fn master_of(t: &LinkTarget, node: &NodeState) -> Option<String> {
    match t.master.as_deref() {
        Some("") => None,
        Some(m) => Some(m.to_string()),
        None => node.links.get(&t.name).and_then(|l| l.master.clone()),
    }
}

/// The links `t` sits on, among the targets: its VLAN base and its ports.
fn lower_links(t: &LinkTarget, targets: &[LinkTarget], node: &NodeState) -> Vec<String> {
    base_of(t, node)
        .into_iter()
        .chain(
            targets
                .iter()
                .filter(|p| master_of(p, node).as_deref() == Some(t.name.as_str()))
                .map(|p| p.name.clone()),
        )
        .collect()
}

/// The targets, each after the targets `first` names for it, in name order otherwise. A cycle
/// (which no valid state has) is broken where it closes.
fn ordered<'t>(
    targets: &'t [LinkTarget],
    first: &dyn Fn(&LinkTarget) -> Vec<String>,
) -> Vec<&'t LinkTarget> {
    fn visit<'t>(
        t: &'t LinkTarget,
        by_name: &BTreeMap<&str, &'t LinkTarget>,
        first: &dyn Fn(&LinkTarget) -> Vec<String>,
        seen: &mut BTreeSet<String>,
        out: &mut Vec<&'t LinkTarget>,
    ) {
        if !seen.insert(t.name.clone()) {
            return;
        }
        for name in first(t) {
            if let Some(before) = by_name.get(name.as_str()) {
                visit(before, by_name, first, seen, out);
            }
        }
        out.push(t);
    }
    let by_name: BTreeMap<&str, &LinkTarget> =
        targets.iter().map(|t| (t.name.as_str(), t)).collect();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for t in by_name.values() {
        visit(t, &by_name, first, &mut seen, &mut out);
    }
    out
}

/// `want` when it is set and differs from `have`.
fn differs<T: PartialEq + Copy>(want: Option<T>, have: Option<T>) -> Option<T> {
    want.filter(|w| Some(*w) != have)
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

pub(crate) fn route_text(r: &RouteState) -> String {
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
    use crate::node::LinkState;

    fn names(ts: &[&LinkTarget]) -> Vec<String> {
        ts.iter().map(|t| t.name.clone()).collect()
    }

    fn route(dst: &str, oif: &str) -> RouteState {
        RouteState::for_test(dst, oif)
    }

    fn on(oif: &str) -> RouteMatch {
        RouteMatch::on(oif)
    }

    #[test]
    fn only_differing_wanted_values_are_changes() {
        assert_eq!(differs(Some(1), Some(1)), None);
        assert_eq!(differs(Some(2), Some(1)), Some(2));
        assert_eq!(differs(None::<u8>, Some(1)), None);
    }

    #[test]
    fn a_vlan_comes_after_its_base_whatever_their_names() {
        let node = NodeState::default();
        let vlan = LinkTarget {
            vlan: Some(("zeth1".to_string(), 100)),
            ..LinkTarget::new("a100", Kind::Vlan)
        };
        let targets = vec![vlan, LinkTarget::new("zeth1", Kind::Ethernet)];
        let up = ordered(&targets, &|t| base_of(t, &node).into_iter().collect());
        assert_eq!(names(&up), ["zeth1", "a100"]);
    }

    #[test]
    fn mtu_order_puts_ports_and_bases_before_their_controllers_and_vlans() {
        let mut node = NodeState::default();
        let mut vlan = LinkState::for_test("a.5", Kind::Vlan);
        vlan.vlan = Some(("br0".to_string(), 5));
        node.links.insert("a.5".to_string(), vlan);
        let port = LinkTarget {
            master: Some("br0".to_string()),
            ..LinkTarget::new("zport", Kind::Ethernet)
        };
        let targets = vec![
            LinkTarget::new("a.5", Kind::Vlan),
            LinkTarget::new("br0", Kind::Bridge),
            port,
        ];
        let lower_first = ordered(&targets, &|t| lower_links(t, &targets, &node));
        assert_eq!(names(&lower_first), ["zport", "br0", "a.5"]);
    }

    #[test]
    fn a_controller_comes_up_before_its_ports() {
        let node = NodeState::default();
        let port = LinkTarget {
            master: Some("zbr".to_string()),
            ..LinkTarget::new("eth1", Kind::Ethernet)
        };
        let targets = vec![port, LinkTarget::new("zbr", Kind::Bridge)];
        let up = ordered(&targets, &|t| master_of(t, &node).into_iter().collect());
        assert_eq!(names(&up), ["zbr", "eth1"]);
    }

    #[test]
    fn routes_an_add_selects_are_not_removed_by_an_absent_route_on_the_same_interface() {
        let node = NodeState {
            routes: vec![route("10.1.0.0/16", "eth1"), route("10.2.0.0/16", "eth1")],
            ..NodeState::default()
        };
        let wanted = route("10.1.0.0/16", "eth1");
        let key = RouteMatch {
            dst: Some(wanted.dst),
            ..on("eth1")
        };
        let goal = RouteGoal::Change {
            add: vec![(key, wanted)],
            remove: vec![on("eth1")],
        };
        let (add, remove) = route_changes(&goal, &node);
        assert!(add.is_empty(), "{add:?}");
        assert_eq!(remove, vec![route("10.2.0.0/16", "eth1")]);
    }

    #[test]
    fn undoing_routes_removes_only_what_the_apply_added() {
        // 10.1/16 the apply added; 10.9/16 another daemon added meanwhile.
        let node = NodeState {
            routes: vec![route("10.1.0.0/16", "eth1"), route("10.9.0.0/16", "eth1")],
            ..NodeState::default()
        };
        let goal = RouteGoal::Undo {
            added: vec![RouteMatch {
                dst: Some("10.1.0.0/16".parse().expect("network")),
                ..on("eth1")
            }],
            removed: vec![route("10.3.0.0/16", "eth1")],
        };
        let (add, remove) = route_changes(&goal, &node);
        assert_eq!(remove, vec![route("10.1.0.0/16", "eth1")]);
        assert_eq!(add, vec![route("10.3.0.0/16", "eth1")]);
    }
}
