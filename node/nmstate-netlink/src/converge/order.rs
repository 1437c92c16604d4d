//! The order in which a phase walks links that sit on others: a VLAN on its base, a port on its
//! controller.

use std::collections::{BTreeMap, BTreeSet};

use crate::node::NodeState;
use crate::target::LinkTarget;

/// The VLAN base `t` sits on: wanted, or as it is.
pub(super) fn base_of(t: &LinkTarget, node: &NodeState) -> Option<String> {
    t.vlan
        .as_ref()
        .or_else(|| node.links.get(&t.name).and_then(|l| l.vlan.as_ref()))
        .map(|(base, _)| base.clone())
}

/// The controller `t` will have: wanted, or as it is when the target leaves it alone.
pub(super) fn master_of(t: &LinkTarget, node: &NodeState) -> Option<String> {
    match t.master.as_deref() {
        Some("") => None,
        Some(m) => Some(m.to_string()),
        None => node.links.get(&t.name).and_then(|l| l.master.clone()),
    }
}

/// The links `t` sits on, among the targets: its VLAN base and its ports.
pub(super) fn lower_links(t: &LinkTarget, targets: &[LinkTarget], node: &NodeState) -> Vec<String> {
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
pub(super) fn ordered<'t>(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::{Kind, LinkState};

    fn names(ts: &[&LinkTarget]) -> Vec<String> {
        ts.iter().map(|t| t.name.clone()).collect()
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
}
