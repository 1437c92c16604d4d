//! The state's routes as the plan's goal: each one checked against the links it names, the
//! routes it selects (its key), and for a route to add the route the kernel will hold.

use cni_common::netlink::RT_TABLE_MAIN;
use ipnetwork::IpNetwork;

use super::{guard, refuse, Listed};
use crate::desired::{DesiredState, RouteWant};
use crate::node::RouteState;
use crate::target::RouteMatch;
use crate::Error;

/// RTPROT_STATIC, the protocol a configured route reports.
const PROTO_STATIC: u8 = 4;
/// RT_SCOPE_UNIVERSE and RT_SCOPE_LINK.
const SCOPE_UNIVERSE: u8 = 0;
const SCOPE_LINK: u8 = 253;

/// The routes to add (each with the key that selects it) and the keys of the routes to remove.
pub(super) type RouteWants = (Vec<(RouteMatch, RouteState)>, Vec<RouteMatch>);

pub(super) fn route_wants(desired: &DesiredState, listed: &Listed) -> Result<RouteWants, Error> {
    let mut add = Vec::new();
    let mut remove = Vec::new();
    for (i, r) in desired.routes.iter().enumerate() {
        check_route(i, r, listed)?;
        let key = route_key(r);
        if r.absent {
            remove.push(key);
        } else if let Some(route) = route_to_add(r) {
            add.push((key, route));
        }
    }
    Ok((add, remove))
}

/// An absent route selects something in particular; a route's interface will exist and is
/// one this crate may touch.
fn check_route(i: usize, r: &RouteWant, listed: &Listed) -> Result<(), Error> {
    if r.absent && r.destination.is_none() && r.next_hop_interface.is_none() {
        return Err(refuse(format!(
            "route {i}: an absent route needs a destination or a next-hop-interface (without either it selects routes anywhere on the node)"
        )));
    }
    if let Some(dev) = &r.next_hop_interface {
        if !r.absent && !listed.will_exist(dev) {
            return Err(refuse(format!(
                "route to {}: interface {dev} does not exist",
                r.destination.map(|d| d.to_string()).unwrap_or_default()
            )));
        }
        guard(listed, dev)?;
    }
    Ok(())
}

/// What the route selects: a route to add in main unless it names a table, an absent one in
/// any table unless it names one.
fn route_key(r: &RouteWant) -> RouteMatch {
    RouteMatch {
        dst: r.destination.map(network),
        gw: r.next_hop_address,
        oif: r.next_hop_interface.clone(),
        metric: r.metric,
        table: r
            .table
            .or(if r.absent { None } else { Some(RT_TABLE_MAIN) }),
    }
}

/// The route the kernel will hold for a route to add.
fn route_to_add(r: &RouteWant) -> Option<RouteState> {
    let (Some(dst), Some(dev)) = (r.destination, &r.next_hop_interface) else {
        return None;
    };
    Some(RouteState {
        dst: network(dst),
        gw: r.next_hop_address,
        oif: Some(dev.clone()),
        table: r.table.unwrap_or(RT_TABLE_MAIN),
        metric: r.metric,
        protocol: PROTO_STATIC,
        scope: if r.next_hop_address.is_some() {
            SCOPE_UNIVERSE
        } else {
            SCOPE_LINK
        },
    })
}

/// The network of a destination (the kernel refuses host bits in a route).
fn network(dst: IpNetwork) -> IpNetwork {
    IpNetwork::new(dst.network(), dst.prefix()).unwrap_or(dst)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::tests::refusal;
    use crate::node::NodeState;

    #[test]
    fn an_absent_route_without_destination_or_interface_is_refused() {
        let msg = refusal(
            json!({"routes": {"config": [{"metric": 100, "state": "absent"}]}}),
            &NodeState::default(),
        );
        assert!(
            msg.starts_with("route 0: an absent route needs a destination or a next-hop-interface"),
            "{msg}"
        );
    }
}
