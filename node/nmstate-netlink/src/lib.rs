//! Applies a kubernetes-nmstate / nmstate desired state to the node's kernel over netlink, as a
//! transaction, and reports the current state in nmstate's format.
//!
//! - [`DesiredState::parse`] reads a policy's `desiredState` strictly: a field we do not
//!   support is refused by name, before anything is touched.
//! - [`apply`] plans against the node (ports and bases exist, names are valid, pods' veths and
//!   the loopback are left alone), writes a snapshot of everything it will change to a journal
//!   before the first change, applies (new links first), and verifies by reading back. Any
//!   failure rolls the node back from the snapshot.
//! - [`Applied::commit`] keeps the change, [`Applied::rollback`] undoes it (a probe failed);
//!   [`recover`] undoes what a killed process left in its journal.
//! - [`current_state`] reports the node as nmstate does, without pods' veths and without
//!   anything that changes on an idle node.
//!
//! Everything runs synchronously in the calling thread's network namespace.

mod converge;
mod current;
mod desired;
mod error;
mod fields;
mod journal;
mod node;
mod plan;
mod target;
mod transaction;
mod verify;

pub use current::{current_state, current_state_showing};
pub use desired::DesiredState;
pub use error::Error;
pub use transaction::{apply, recover, Applied};
