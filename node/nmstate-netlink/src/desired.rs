//! The policy's `desiredState`, read strictly: what nmstate fields mean here, and refusals for
//! the ones we cannot honour.
//!
//! - `model`: the state as this crate understands it (interfaces, their sections, routes).
//! - `parse`: the top level, the interfaces and the routes, read field by field; `controllers`:
//!   the bridge and bond sections with their ports.
//! - `bounds`: the limits the kernel sets on names, descriptions, MTUs, timers and tables.

mod bounds;
mod controllers;
mod model;
mod parse;

pub use model::DesiredState;
pub(crate) use model::{
    bond_mode_name, BridgeConf, Iface, IfaceState, IfaceType, PortVlanConf, RouteWant,
};

/// The refusal a state gets from [`DesiredState::parse`].
#[cfg(test)]
fn refusal(v: serde_json::Value) -> String {
    match DesiredState::parse(&v) {
        Err(crate::Error::Refused(msg)) => msg,
        other => panic!("expected a refusal, got {other:?}"),
    }
}
