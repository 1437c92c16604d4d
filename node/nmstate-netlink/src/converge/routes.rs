//! The routes phase: what to add and remove to reach the goal (an apply's change or a
//! rollback's undo), then one request per route. It comes last: routes need their links and
//! addresses.

use cni_common::netlink::{NewRoute, RouteInfo};
use nix::libc::{EEXIST, ESRCH};

use super::text::route_text;
use super::Converge;
use crate::error::Error;
use crate::node::{NodeState, RouteState, PROTO_KERNEL};
use crate::target::{same_route, RouteGoal, RouteMatch};

impl Converge<'_> {
    pub(super) fn routes(&mut self, goal: &RouteGoal, node: &NodeState) -> Result<(), Error> {
        let (add, remove) = route_changes(goal, node);
        for r in &remove {
            self.remove_route(r, node)?;
        }
        for r in &add {
            self.add_route(r, node)?;
        }
        Ok(())
    }

    fn remove_route(&mut self, r: &RouteState, node: &NodeState) -> Result<(), Error> {
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
        Ok(())
    }

    fn add_route(&mut self, r: &RouteState, node: &NodeState) -> Result<(), Error> {
        let Some(oif) = r.oif.as_ref().and_then(|o| node.links.get(o)) else {
            return self.fail(Error::Step(format!(
                "route {}: its interface does not exist",
                route_text(r)
            )));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn route(dst: &str, oif: &str) -> RouteState {
        RouteState::for_test(dst, oif)
    }

    fn on(oif: &str) -> RouteMatch {
        RouteMatch::on(oif)
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
