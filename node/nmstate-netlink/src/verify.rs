//! Reading back: does the node now match the targets? Every mismatch is one line.

use ipnetwork::IpNetwork;

use crate::converge::{route_text, undo_removes, vlans_text};
use crate::node::{NodeState, PROTO_KERNEL};
use crate::target::{is_link_local, same_route, LinkTarget, RouteGoal};

pub(crate) fn mismatches(
    node: &NodeState,
    targets: &[LinkTarget],
    routes: &RouteGoal,
) -> Vec<String> {
    let mut out = Vec::new();
    for t in targets {
        let cur = node.links.get(&t.name);
        let Some(cur) = cur.filter(|_| t.exists) else {
            if t.exists {
                out.push(format!("interface {} does not exist", t.name));
            } else if cur.is_some() {
                out.push(format!("interface {} still exists", t.name));
            }
            continue;
        };
        let mut check = |what: &str, ok: bool, want: String| {
            if !ok {
                out.push(format!("interface {}: {what} is not {want}", t.name));
            }
        };
        if let Some(mtu) = t.mtu {
            check("mtu", cur.mtu == mtu, mtu.to_string());
        }
        if let Some(mac) = t.mac {
            check("mac-address", cur.mac == Some(mac), mac.to_string());
        }
        if let Some(alias) = &t.alias {
            check(
                "description",
                cur.alias.clone().unwrap_or_default() == *alias,
                format!("{alias:?}"),
            );
        }
        if let Some(up) = t.up {
            check(
                "state",
                cur.up == up,
                if up { "up" } else { "down" }.to_string(),
            );
        }
        if let Some(master) = &t.master {
            let ok = cur.master.clone().unwrap_or_default() == *master;
            check(
                "controller",
                ok,
                if master.is_empty() {
                    "none".to_string()
                } else {
                    master.clone()
                },
            );
        }
        let addrs = |v6: bool| -> Vec<IpNetwork> {
            let mut a: Vec<IpNetwork> = cur
                .addresses
                .iter()
                .filter(|a| a.is_ipv6() == v6 && !(v6 && t.keep_link_local && is_link_local(a)))
                .copied()
                .collect();
            a.sort();
            a
        };
        for (v6, want) in [(false, &t.ipv4), (true, &t.ipv6)] {
            if let Some(want) = want {
                let mut want: Vec<IpNetwork> = want
                    .iter()
                    .filter(|a| !(t.keep_link_local && is_link_local(a)))
                    .copied()
                    .collect();
                want.sort();
                let have = addrs(v6);
                let text = want
                    .iter()
                    .map(|a| a.to_string())
                    .collect::<Vec<_>>()
                    .join(", ");
                check(
                    if v6 {
                        "ipv6 addresses"
                    } else {
                        "ipv4 addresses"
                    },
                    have == want,
                    format!("[{text}]"),
                );
            }
        }
        if let (Some(want), Some(have)) = (t.bridge, cur.bridge) {
            let ok = agree(want.stp, have.stp)
                && agree(want.forward_delay, have.forward_delay)
                && agree(want.hello_time, have.hello_time)
                && agree(want.max_age, have.max_age)
                && agree(want.priority, have.priority)
                && agree(want.ageing_time, have.ageing_time)
                && agree(want.multicast_snooping, have.multicast_snooping)
                && agree(want.vlan_filtering, have.vlan_filtering);
            check("bridge options", ok, want.to_string());
        }
        if let Some(want) = t.port {
            let have = cur.port.unwrap_or_default();
            let ok = agree(want.priority, have.priority)
                && agree(want.cost, have.cost)
                && agree(want.hairpin, have.hairpin);
            check("port options", ok, want.to_string());
        }
        if let Some(want) = &t.port_vlans {
            let mut want = want.clone();
            want.sort_unstable();
            let ok = cur.port_vlans.as_ref() == Some(&want)
                || (want.is_empty() && cur.port_vlans.is_none());
            check("port VLANs", ok, vlans_text(&want));
        }
        if let (Some(want), Some(have)) = (t.bond, cur.bond) {
            let ok = agree(want.mode, have.mode)
                && agree(want.miimon, have.miimon)
                && agree(want.updelay, have.updelay)
                && agree(want.downdelay, have.downdelay)
                && agree(want.min_links, have.min_links);
            check("bond options", ok, want.to_string());
        }
    }
    match routes {
        RouteGoal::Change { add, remove } => {
            for (key, r) in add {
                if !node.routes.iter().any(|n| key.matches(n)) {
                    out.push(format!("route {} is missing", route_text(r)));
                }
            }
            // A route an add selects is wanted, even where an absent route selects it too.
            for n in node.routes.iter().filter(|n| {
                n.protocol != PROTO_KERNEL
                    && remove.iter().any(|m| m.matches(n))
                    && !add.iter().any(|(k, _)| k.matches(n))
            }) {
                out.push(format!("route {} is still there", route_text(n)));
            }
        }
        RouteGoal::Undo { added, removed } => {
            for r in removed
                .iter()
                .filter(|r| !node.routes.iter().any(|n| same_route(n, r)))
            {
                out.push(format!("route {} is missing", route_text(r)));
            }
            for n in node
                .routes
                .iter()
                .filter(|n| undo_removes(added, removed, n))
            {
                out.push(format!("route {} should not be there", route_text(n)));
            }
        }
    }
    out
}

/// A wanted value agrees with what is there when nothing is wanted, or it is the same.
fn agree<T: PartialEq>(want: Option<T>, have: Option<T>) -> bool {
    want.is_none() || want == have
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::RouteState;
    use crate::target::RouteMatch;

    fn route(dst: &str, oif: &str) -> RouteState {
        RouteState::for_test(dst, oif)
    }

    fn on(oif: &str) -> RouteMatch {
        RouteMatch::on(oif)
    }

    #[test]
    fn routes_added_on_an_interface_an_absent_route_clears_are_not_still_there() {
        let added = route("203.0.113.0/24", "eth1");
        let node = NodeState {
            routes: vec![added.clone()],
            ..NodeState::default()
        };
        let goal = RouteGoal::Change {
            add: vec![(
                RouteMatch {
                    dst: Some(added.dst),
                    table: Some(cni_common::netlink::RT_TABLE_MAIN),
                    ..on("eth1")
                },
                added,
            )],
            remove: vec![on("eth1")],
        };
        assert_eq!(mismatches(&node, &[], &goal), Vec::<String>::new());
    }

    #[test]
    fn an_undo_does_not_mind_routes_it_neither_added_nor_removed() {
        let node = NodeState {
            routes: vec![route("10.9.0.0/16", "eth1"), route("10.3.0.0/16", "eth1")],
            ..NodeState::default()
        };
        let goal = RouteGoal::Undo {
            added: vec![RouteMatch {
                dst: Some("10.1.0.0/16".parse().expect("network")),
                ..on("eth1")
            }],
            removed: vec![route("10.3.0.0/16", "eth1")],
        };
        assert_eq!(mismatches(&node, &[], &goal), Vec::<String>::new());
    }
}
