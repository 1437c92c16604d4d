//! The enslave phase: links join their controllers, then get their port settings and, on a
//! VLAN-filtering bridge, exactly the wanted VLANs.

use cni_common::netlink::{BridgePortSettings, PortVlan};

use super::text::vlans_text;
use super::{differs, Converge};
use crate::error::Error;
use crate::node::{LinkState, NodeState};
use crate::target::LinkTarget;

impl Converge<'_> {
    /// Enslaves links to their masters, then sets their port settings and VLANs.
    pub(super) fn enslave(
        &mut self,
        targets: &[LinkTarget],
        node: &NodeState,
    ) -> Result<(), Error> {
        for t in targets.iter().filter(|t| t.exists) {
            let Some(cur) = node.links.get(&t.name) else {
                continue;
            };
            if !self.join_master(t, cur, node)? {
                continue;
            }
            self.set_port_options(t, cur)?;
            self.set_port_vlans(t, cur)?;
        }
        Ok(())
    }

    /// Makes `t` a port of the master it wants. False when that master does not exist (the
    /// failure recorded, and the port's settings left alone).
    fn join_master(
        &mut self,
        t: &LinkTarget,
        cur: &LinkState,
        node: &NodeState,
    ) -> Result<bool, Error> {
        let Some(master) = t.master.as_deref().filter(|m| !m.is_empty()) else {
            return Ok(true);
        };
        if cur.master.as_deref() == Some(master) {
            return Ok(true);
        }
        let Some(m) = node.links.get(master) else {
            self.fail(Error::Step(format!(
                "interface {}: controller {master} does not exist",
                t.name
            )))?;
            return Ok(false);
        };
        self.wrote(
            &format!("interface {}", t.name),
            self.nl.link_set_master(cur.index, m.index),
            &[],
            format!("{}: port of {master}", t.name),
        )?;
        Ok(true)
    }

    /// The bridge port's STP settings that differ from what it has under this master.
    fn set_port_options(&mut self, t: &LinkTarget, cur: &LinkState) -> Result<(), Error> {
        let Some(want) = t.port else {
            return Ok(());
        };
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
                &format!("interface {}", t.name),
                self.nl.bridge_link_set_stp(cur.index, &change),
                &[],
                format!("{}: port options {change}", t.name),
            )?;
        }
        Ok(())
    }

    /// The port's VLANs, as read now: the extra ones removed, the missing ones added.
    fn set_port_vlans(&mut self, t: &LinkTarget, cur: &LinkState) -> Result<(), Error> {
        let Some(want) = &t.port_vlans else {
            return Ok(());
        };
        let nl = self.nl;
        let what = format!("interface {}", t.name);
        let have = match nl.bridge_vlan_show(cur.index) {
            Ok(have) => have,
            Err(e) => return self.fail(Error::wrap(what, e.into())),
        };
        let extra: Vec<PortVlan> = have.iter().filter(|v| !want.contains(v)).copied().collect();
        let missing: Vec<PortVlan> = want.iter().filter(|v| !have.contains(v)).copied().collect();
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
        Ok(())
    }
}
