//! From a desired state and the node as it is: the targets to walk to, checked against the node
//! before anything is touched, and the snapshot of everything they may change.
//!
//! - `iface`: each listed interface's target; `ports`: the exact port sets (and the ports a
//!   bond whose mode changes must let go and take back); `routes`: the routes to add and
//!   remove; `snapshot`: what a rollback walks back to and what it verifies.

mod iface;
mod ports;
mod routes;
mod snapshot;

use std::collections::BTreeMap;

use crate::desired::{DesiredState, Iface, IfaceState, IfaceType};
use crate::node::{Kind, NodeState};
use crate::target::{LinkTarget, RouteGoal, RouteMatch};
use crate::Error;

/// What an apply does, and what its rollback returns to.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub targets: Vec<LinkTarget>,
    pub routes: RouteGoal,
    pub snapshot: Snapshot,
}

/// Everything the plan may change, as it was: the journal's content.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Snapshot {
    /// What the rollback walks to: the links as they were.
    pub links: Vec<LinkTarget>,
    /// What a rollback verifies: the same links cut down to what the apply changes, IPv6
    /// link-local addresses aside (the kernel makes them). What the apply did not change may
    /// have been changed meanwhile by the kernel or another daemon, and that does not make a
    /// rollback fail.
    pub check: Vec<LinkTarget>,
    pub routes: RouteGoal,
}

pub(crate) fn plan(desired: &DesiredState, node: &NodeState) -> Result<Plan, Error> {
    let listed = Listed::new(desired, node);
    let mut targets: BTreeMap<String, LinkTarget> = BTreeMap::new();
    for iface in &desired.interfaces {
        let t = iface::iface_target(iface, &listed)?;
        targets.insert(iface.name.clone(), t);
    }
    ports::port_targets(desired, &listed, &mut targets)?;
    ports::remoded_bond_ports(node, &mut targets);
    // A port listed on its own with a master of nothing but named by a bridge: already handled.
    let targets: Vec<LinkTarget> = targets.into_values().collect();

    let (add, remove) = routes::route_wants(desired, &listed)?;
    let keys: Vec<RouteMatch> = add
        .iter()
        .map(|(k, _)| k.clone())
        .chain(remove.iter().cloned())
        .collect();
    // The adds that select no route now: what the apply adds, and a rollback removes.
    let added: Vec<RouteMatch> = add
        .iter()
        .filter(|(k, _)| !node.routes.iter().any(|r| k.matches(r)))
        .map(|(k, _)| k.clone())
        .collect();
    let routes = RouteGoal::Change { add, remove };

    let snapshot = snapshot::snapshot(&targets, node, &keys, added);
    Ok(Plan {
        targets,
        routes,
        snapshot,
    })
}

/// The interfaces the state lists, by name, and the node they are planned against.
struct Listed<'a> {
    ifaces: BTreeMap<&'a str, &'a Iface>,
    node: &'a NodeState,
}

impl<'a> Listed<'a> {
    fn new(desired: &'a DesiredState, node: &'a NodeState) -> Listed<'a> {
        let ifaces = desired
            .interfaces
            .iter()
            .map(|i| (i.name.as_str(), i))
            .collect();
        Listed { ifaces, node }
    }

    /// Links that will exist after the apply: what is there and not deleted, and what is created.
    fn will_exist(&self, name: &str) -> bool {
        match self.ifaces.get(name) {
            Some(i) => i.state != IfaceState::Absent,
            None => self.node.links.contains_key(name),
        }
    }

    /// Whether the state lists `name`.
    fn lists(&self, name: &str) -> bool {
        self.ifaces.contains_key(name)
    }
}

fn refuse(msg: String) -> Error {
    Error::Refused(msg)
}

fn kind_of(t: IfaceType) -> Option<Kind> {
    match t {
        IfaceType::Ethernet => Some(Kind::Ethernet),
        IfaceType::Veth => Some(Kind::Veth),
        IfaceType::LinuxBridge => Some(Kind::Bridge),
        IfaceType::Vlan => Some(Kind::Vlan),
        IfaceType::Bond => Some(Kind::Bond),
        IfaceType::Dummy => Some(Kind::Dummy),
        IfaceType::Unknown => None,
    }
}

/// Links this crate never touches: the loopback, and pods' veths: a veth whose peer is in
/// another namespace and that a bridge the state does not name holds (a CNI plugged it). Such
/// a veth with no controller, or in a bridge of this state, is a node's link like any other
/// (a test node's or a VM's NIC can be a veth).
fn guard(listed: &Listed, name: &str) -> Result<(), Error> {
    let node = listed.node;
    let plugged_elsewhere = node
        .links
        .get(name)
        .and_then(|l| l.master.as_deref())
        .is_some_and(|m| !listed.lists(m));
    if node.is_pod_link(name) && plugged_elsewhere {
        return Err(refuse(format!("interface {name} is a pod's veth (its peer is in another namespace, and a bridge this state does not name holds it) and is not touched")));
    }
    if node
        .links
        .get(name)
        .is_some_and(|l| l.kind == Kind::Loopback)
    {
        return Err(refuse(format!(
            "interface {name} is the loopback and is not touched"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::LinkState;

    /// The refusal a plan of `state` against `node` gets.
    pub(super) fn refusal(state: serde_json::Value, node: &NodeState) -> String {
        let desired = DesiredState::parse(&state).expect("parses");
        match plan(&desired, node) {
            Err(Error::Refused(msg)) => msg,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    pub(super) fn node_of(links: Vec<LinkState>) -> NodeState {
        NodeState {
            links: links.into_iter().map(|l| (l.name.clone(), l)).collect(),
            routes: Vec::new(),
        }
    }
}
