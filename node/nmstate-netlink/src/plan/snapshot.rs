//! The snapshot of everything a plan may change, as it is now: what a rollback walks back to,
//! and the part of it a rollback verifies.

use std::collections::BTreeSet;

use super::Snapshot;
use crate::node::{Kind, NodeState};
use crate::target::{LinkTarget, RouteGoal, RouteMatch};

/// Everything the targets may change, as it is now: the targets' links, the ports and VLANs a
/// deleted link takes with it, the old masters of moved ports, and the routes through them or
/// selected by the state's routes (`keys`); `added` selects the routes the apply adds.
pub(super) fn snapshot(
    targets: &[LinkTarget],
    node: &NodeState,
    keys: &[RouteMatch],
    added: Vec<RouteMatch>,
) -> Snapshot {
    let (recreated, released) = deleted_with(targets, node);
    let mut names: BTreeSet<String> = targets.iter().map(|t| t.name.clone()).collect();
    // The targets' masters as they are: a moved port leaves them.
    names.extend(
        targets
            .iter()
            .filter_map(|t| node.links.get(&t.name))
            .filter_map(|cur| cur.master.clone()),
    );
    names.extend(recreated.iter().cloned());
    names.extend(released.iter().cloned());
    let links = links_as_they_are(&names, targets, node);
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

/// Links deleted with a deleted link (a rollback re-creates them: the link itself, its veth
/// peer, the VLANs on it), and its ports (a rollback enslaves them again).
fn deleted_with(targets: &[LinkTarget], node: &NodeState) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut recreated: BTreeSet<String> = BTreeSet::new();
    let mut released: BTreeSet<String> = BTreeSet::new();
    for t in targets.iter().filter(|t| !t.exists) {
        let Some(cur) = node.links.get(&t.name) else {
            continue;
        };
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
    (recreated, released)
}

/// The links `names` as they are now; one that is not there is to be absent again. Pods'
/// veths only where the state names them itself (a pod's may be gone by the time of a
/// rollback; a named one is the node's).
fn links_as_they_are(
    names: &BTreeSet<String>,
    targets: &[LinkTarget],
    node: &NodeState,
) -> Vec<LinkTarget> {
    let named: BTreeSet<&str> = targets.iter().map(|t| t.name.as_str()).collect();
    names
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
        .collect()
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
    use serde_json::json;

    use super::super::plan;
    use super::super::tests::node_of;
    use crate::desired::DesiredState;
    use crate::node::{Kind, LinkState};
    use crate::verify::mismatches;

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
}
