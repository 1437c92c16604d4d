//! The ports of bridges and bonds: the exact set the state gives, each enslaved, up and
//! without addresses of its own; the ports a controller has and is not given any more,
//! released; and the ports of a bond whose mode changes, named so that they join it again.

use std::collections::BTreeMap;

use cni_common::netlink::{BridgePortSettings, PortVlan};

use super::{guard, kind_of, refuse, Listed};
use crate::desired::{DesiredState, Iface, IfaceState, PortVlanConf};
use crate::node::{Kind, NodeState};
use crate::target::LinkTarget;
use crate::Error;

/// Ports: the exact set, each enslaved, up and without addresses of its own.
pub(super) fn port_targets(
    desired: &DesiredState,
    listed: &Listed,
    targets: &mut BTreeMap<String, LinkTarget>,
) -> Result<(), Error> {
    let mut port_of: BTreeMap<String, String> = BTreeMap::new();
    for iface in desired
        .interfaces
        .iter()
        .filter(|i| i.state != IfaceState::Absent)
    {
        let Some(ports) = iface.ports() else { continue };
        for port in &ports {
            check_port(iface, port, listed, &mut port_of)?;
            let t = port_target(port, listed, targets);
            enslave(t, iface, port)?;
        }
        release_dropped_ports(iface, &ports, listed.node, targets);
    }
    Ok(())
}

/// A port is another link, of one controller, that will exist and that this crate may touch.
fn check_port(
    iface: &Iface,
    port: &str,
    listed: &Listed,
    port_of: &mut BTreeMap<String, String>,
) -> Result<(), Error> {
    if port == iface.name {
        return Err(refuse(format!(
            "interface {}: cannot be its own port",
            iface.name
        )));
    }
    if let Some(other) = port_of.insert(port.to_string(), iface.name.clone()) {
        return Err(refuse(format!(
            "interface {port} is listed as a port of both {other} and {}",
            iface.name
        )));
    }
    if !listed.will_exist(port) {
        return Err(refuse(format!(
            "interface {}: port {port} does not exist",
            iface.name
        )));
    }
    guard(listed, port)
}

/// The port's target: its own when the state lists it, otherwise a new one of its kind.
fn port_target<'t>(
    port: &str,
    listed: &Listed,
    targets: &'t mut BTreeMap<String, LinkTarget>,
) -> &'t mut LinkTarget {
    let kind = listed
        .node
        .links
        .get(port)
        .map(|l| l.kind.clone())
        .or_else(|| listed.ifaces.get(port).and_then(|i| kind_of(i.kind)));
    targets
        .entry(port.to_string())
        .or_insert_with(|| LinkTarget::new(port, kind.unwrap_or(Kind::Ethernet)))
}

/// Makes `t` a port of `iface`: enslaved, up unless the state says otherwise, without
/// addresses, with the bridge port's settings and VLANs.
fn enslave(t: &mut LinkTarget, iface: &Iface, port: &str) -> Result<(), Error> {
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
        .and_then(|p| p.iter().find(|p| p.name == port))
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
    Ok(())
}

/// Ports it has now and is not given any more are released.
fn release_dropped_ports(
    iface: &Iface,
    ports: &[String],
    node: &NodeState,
    targets: &mut BTreeMap<String, LinkTarget>,
) {
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

/// A bond whose mode changes must lose its ports for the change (the kernel refuses it
/// otherwise): the ports it keeps are named, so that they join it again.
pub(super) fn remoded_bond_ports(node: &NodeState, targets: &mut BTreeMap<String, LinkTarget>) {
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
}

/// A port's VLAN config as the bridge's VLAN table holds it.
fn port_vlans(conf: &PortVlanConf) -> Vec<PortVlan> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
