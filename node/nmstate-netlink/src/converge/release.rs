//! The release phases: bonds whose mode changes lose their ports and go down (the kernel
//! changes a bond's mode only so), links leave controllers they must leave (and go down to
//! join a bond), and each link gets its own properties but the MTU.

use cni_common::netlink::{BondSettings, BridgeSettings};

use super::{differs, Converge};
use crate::error::Error;
use crate::node::{Kind, LinkState, NodeState};
use crate::target::LinkTarget;

impl Converge<'_> {
    /// Releases the ports of bonds whose mode changes and takes those bonds down: the kernel
    /// changes a bond's mode only so. The ports are targets of the bond (the plan names them),
    /// so the enslave phase puts them back. Returns the links taken down.
    pub(super) fn release_remoded_bonds(
        &mut self,
        targets: &[LinkTarget],
        node: &NodeState,
    ) -> Result<Vec<String>, Error> {
        let mut downed = Vec::new();
        for t in targets.iter().filter(|t| t.changes_bond_mode(node)) {
            downed.extend(self.release_ports_to_remode(&t.name, node)?);
            let Some(cur) = node.links.get(&t.name) else {
                continue;
            };
            if cur.up
                && self.wrote(
                    &format!("interface {}", t.name),
                    self.nl.link_set_down(cur.index),
                    &[],
                    format!("{}: down to change its mode", t.name),
                )?
            {
                downed.push(t.name.clone());
            }
        }
        Ok(downed)
    }

    /// Releases the ports of `bond` and takes down those that are up (they join it again
    /// down). Returns the ports taken down.
    fn release_ports_to_remode(
        &mut self,
        bond: &str,
        node: &NodeState,
    ) -> Result<Vec<String>, Error> {
        let nl = self.nl;
        let mut downed = Vec::new();
        for port in node.ports_of(bond) {
            let Some(p) = node.links.get(&port) else {
                continue;
            };
            let what = format!("interface {port}");
            self.wrote(
                &what,
                nl.link_set_nomaster(p.index),
                &[],
                format!("{port}: released from {bond} to change its mode"),
            )?;
            if p.up
                && self.wrote(
                    &what,
                    nl.link_set_down(p.index),
                    &[],
                    format!("{port}: down to join {bond} again"),
                )?
            {
                downed.push(port.clone());
            }
        }
        Ok(downed)
    }

    /// Releases links from masters they must leave, takes down what must be down (and bond
    /// ports about to be enslaved, which the kernel wants down), and sets each link's own
    /// properties but the MTU. Returns the links taken down only for enslaving.
    pub(super) fn release_and_settle(
        &mut self,
        targets: &[LinkTarget],
        node: &NodeState,
    ) -> Result<Vec<String>, Error> {
        let mut downed = Vec::new();
        for t in targets.iter().filter(|t| t.exists) {
            let Some(cur) = node.links.get(&t.name) else {
                self.fail(Error::Step(format!(
                    "interface {}: missing after it was created",
                    t.name
                )))?;
                continue;
            };
            if self.release(t, cur, targets, node)? {
                downed.push(t.name.clone());
            }
            self.settle(t, cur)?;
            self.set_bridge_options(t, cur)?;
            self.set_bond_options(t, cur)?;
        }
        Ok(downed)
    }

    /// Releases `t` from a master other than the one it wants, and takes it down when it is to
    /// join a bond. True when it took it down.
    fn release(
        &mut self,
        t: &LinkTarget,
        cur: &LinkState,
        targets: &[LinkTarget],
        node: &NodeState,
    ) -> Result<bool, Error> {
        // None: the master is left as it is; Some(None): no master.
        let Some(want) = t.master.as_deref().map(|m| (!m.is_empty()).then_some(m)) else {
            return Ok(false);
        };
        let nl = self.nl;
        let what = format!("interface {}", t.name);
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
        Ok(to_bond
            && cur.master.as_deref() != want
            && cur.up
            && self.wrote(
                &what,
                nl.link_set_down(cur.index),
                &[],
                format!("{}: down to join {}", t.name, want.unwrap_or("")),
            )?)
    }

    /// The link's own state and names: down when it must be, its MAC and its description.
    fn settle(&mut self, t: &LinkTarget, cur: &LinkState) -> Result<(), Error> {
        let nl = self.nl;
        let what = format!("interface {}", t.name);
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
        Ok(())
    }

    /// The bridge options that differ from the bridge's.
    fn set_bridge_options(&mut self, t: &LinkTarget, cur: &LinkState) -> Result<(), Error> {
        let (Some(want), Some(have)) = (t.bridge, cur.bridge) else {
            return Ok(());
        };
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
                &format!("interface {}", t.name),
                self.nl.bridge_set(cur.index, &change),
                &[],
                format!("{}: bridge options {change}", t.name),
            )?;
        }
        Ok(())
    }

    /// The bond options that differ from the bond's.
    fn set_bond_options(&mut self, t: &LinkTarget, cur: &LinkState) -> Result<(), Error> {
        let (Some(want), Some(have)) = (t.bond, cur.bond) else {
            return Ok(());
        };
        let change = BondSettings {
            mode: differs(want.mode, have.mode),
            miimon: differs(want.miimon, have.miimon),
            updelay: differs(want.updelay, have.updelay),
            downdelay: differs(want.downdelay, have.downdelay),
            min_links: differs(want.min_links, have.min_links),
        };
        if change != BondSettings::default() {
            self.wrote(
                &format!("interface {}", t.name),
                self.nl.bond_set(cur.index, &change),
                &[],
                format!("{}: bond options {change}", t.name),
            )?;
        }
        Ok(())
    }
}
