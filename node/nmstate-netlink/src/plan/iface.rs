//! One listed interface's target: checked against the link it names (its kind, whether it can
//! be created or deleted, what cannot change once it exists), then given the state's settings.

use cni_common::netlink::{BondSettings, BridgeSettings};

use super::{guard, kind_of, refuse, Listed};
use crate::desired::{BridgeConf, Iface, IfaceState};
use crate::node::{Kind, LinkState};
use crate::target::LinkTarget;
use crate::Error;

pub(super) fn iface_target(iface: &Iface, listed: &Listed) -> Result<LinkTarget, Error> {
    let name = &iface.name;
    guard(listed, name)?;
    let cur = listed.node.links.get(name);
    let wanted_kind = kind_of(iface.kind);
    if let Some(cur) = cur {
        check_kind(iface, cur, wanted_kind.as_ref())?;
    }
    if iface.state == IfaceState::Absent {
        return absent_target(name, cur, wanted_kind);
    }
    let kind = kind_to_be(name, cur, wanted_kind)?;
    let mut t = LinkTarget::new(name, kind.clone());
    fixed_at_creation(&mut t, &kind, iface, cur, listed)?;
    own_settings(&mut t, iface);
    Ok(t)
}

/// The listed type must be the existing link's.
fn check_kind(iface: &Iface, cur: &LinkState, wanted: Option<&Kind>) -> Result<(), Error> {
    let Some(want) = wanted else {
        return Ok(());
    };
    // nmstate has long reported veths as ethernet: accept that spelling.
    let same = cur.kind == *want || (cur.kind == Kind::Veth && *want == Kind::Ethernet);
    if !same {
        let name = &iface.name;
        return Err(refuse(format!(
            "interface {name} is a {} link, not {}",
            cur.kind.kernel_name(),
            iface.kind.nmstate_name()
        )));
    }
    Ok(())
}

/// An absent interface: deleted, or for a NIC down without addresses.
fn absent_target(
    name: &str,
    cur: Option<&LinkState>,
    wanted_kind: Option<Kind>,
) -> Result<LinkTarget, Error> {
    if let Some(cur) = cur {
        refuse_unrestorable_delete(cur)?;
    }
    Ok(match cur {
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
    })
}

/// Deleting this could not be undone: a veth whose peer is in another namespace (the peer goes
/// with it and a rollback cannot re-create it there). A bridge that holds pods' veths may go,
/// as with NetworkManager: its pods are unplugged (a veth of a test node's or VM's NIC cannot
/// be told from a pod's by the kernel alone).
fn refuse_unrestorable_delete(cur: &LinkState) -> Result<(), Error> {
    let name = &cur.name;
    if cur.kind == Kind::Veth && cur.foreign_peer {
        return Err(refuse(format!(
            "interface {name}: a veth whose peer is in another namespace cannot be made absent (its peer would be deleted with it, and a rollback could not re-create it there)"
        )));
    }
    Ok(())
}

/// The kind of link there will be: the existing link's, or one this crate can create.
fn kind_to_be(
    name: &str,
    cur: Option<&LinkState>,
    wanted_kind: Option<Kind>,
) -> Result<Kind, Error> {
    Ok(match (cur, wanted_kind) {
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
    })
}

/// What a link is created with and keeps: a VLAN's base and ID, a veth's peer; a new bond
/// also needs its mode.
fn fixed_at_creation(
    t: &mut LinkTarget,
    kind: &Kind,
    iface: &Iface,
    cur: Option<&LinkState>,
    listed: &Listed,
) -> Result<(), Error> {
    match kind {
        Kind::Vlan => vlan_link(t, iface, cur, listed),
        Kind::Veth => veth_peer(t, iface, cur, listed),
        Kind::Bond if cur.is_none() && iface.bond.as_ref().and_then(|b| b.mode).is_none() => {
            let name = &iface.name;
            Err(refuse(format!(
                "interface {name}: a new bond needs link-aggregation.mode"
            )))
        }
        _ => Ok(()),
    }
}

/// A new VLAN's base (which will exist) and ID; an existing VLAN's cannot change.
fn vlan_link(
    t: &mut LinkTarget,
    iface: &Iface,
    cur: Option<&LinkState>,
    listed: &Listed,
) -> Result<(), Error> {
    let name = &iface.name;
    if let Some(cur) = cur {
        if iface.vlan.is_some() && iface.vlan != cur.vlan {
            return Err(refuse(format!(
                "interface {name}: the vlan base-iface and id of an existing vlan cannot change"
            )));
        }
        return Ok(());
    }
    let Some((base, _)) = &iface.vlan else {
        return Err(refuse(format!(
            "interface {name}: a new vlan needs vlan.base-iface and vlan.id"
        )));
    };
    if !listed.will_exist(base) {
        return Err(refuse(format!(
            "interface {name}: base interface {base} does not exist"
        )));
    }
    guard(listed, base)?;
    t.vlan = iface.vlan.clone();
    Ok(())
}

/// A new veth's peer (a name not taken); an existing veth's cannot change.
fn veth_peer(
    t: &mut LinkTarget,
    iface: &Iface,
    cur: Option<&LinkState>,
    listed: &Listed,
) -> Result<(), Error> {
    let name = &iface.name;
    if let Some(cur) = cur {
        if iface.veth_peer.is_some() && iface.veth_peer != cur.veth_peer {
            return Err(refuse(format!(
                "interface {name}: the peer of an existing veth cannot change"
            )));
        }
        return Ok(());
    }
    let Some(peer) = &iface.veth_peer else {
        return Err(refuse(format!(
            "interface {name}: a new veth needs veth.peer"
        )));
    };
    if listed.node.links.contains_key(peer) {
        return Err(refuse(format!(
            "interface {name}: its peer {peer} already exists"
        )));
    }
    t.veth_peer = Some(peer.clone());
    Ok(())
}

/// The settings the state gives: MTU, MAC, description, state, addresses, bridge and bond
/// options.
fn own_settings(t: &mut LinkTarget, iface: &Iface) {
    t.mtu = iface.mtu;
    t.mac = iface.mac;
    t.alias = iface.description.clone();
    t.up = Some(iface.state == IfaceState::Up);
    addresses(t, iface);
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
}

/// Each family given: its list, or none when disabled; a family not given is left alone.
fn addresses(t: &mut LinkTarget, iface: &Iface) {
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::tests::{node_of, refusal};
    use super::*;

    /// A veth whose peer is in another namespace.
    fn foreign_veth(name: &str) -> LinkState {
        LinkState {
            foreign_peer: true,
            ..LinkState::for_test(name, Kind::Veth)
        }
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
}
