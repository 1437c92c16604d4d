//! Walks the node towards a set of targets, one netlink request per change, recording each
//! change as a line. The same walk applies a plan and rolls it back (towards the snapshot).
//!
//! Order: links are created first (a kind this kernel lacks fails before anything that existed
//! is changed), then deleted, released from old masters, changed, given their MTUs, enslaved,
//! set up, given their addresses; routes come last because they need the links and addresses. Within a phase,
//! links that others sit on come in the order the kernel needs: a VLAN's base is created and
//! brought up before the VLAN, a controller is brought up before its ports, and an MTU is
//! raised on the lower links first and lowered on the upper links first.
//!
//! An apply's walk ends at the first failure (the rollback then undoes what it did). A
//! rollback's walk is best effort: a failure is collected and the walk goes on, so that one
//! link that cannot be put back does not leave every other change in place.
//!
//! - `links`: creating, deleting and bringing up links; `release`: taking links from their old
//!   controllers (and bonds whose mode changes from their ports) and setting their own
//!   properties; `mtu`; `ports`: enslaving and port settings; `addresses`; `routes`.
//! - `order`: the order in which links that sit on others are walked.
//! - `text`: how a change reads in the journal and in a mismatch.

mod addresses;
mod links;
mod mtu;
mod order;
mod ports;
mod release;
mod routes;
mod text;

use cni_common::netlink::Netlink;
use error_context::report;

use crate::error::{Context, Error};
use crate::node::NodeState;
use crate::target::{LinkTarget, RouteGoal};

pub(crate) use routes::undo_removes;
pub(crate) use text::{route_text, vlans_text};

/// The changes made so far, one line each, and what went wrong on the way.
pub(crate) struct Converge<'a> {
    nl: &'a Netlink,
    /// A rollback's walk: a failure is collected in `errors` and the walk goes on.
    best_effort: bool,
    pub steps: Vec<String>,
    pub errors: Vec<Error>,
    /// A write request was sent, whether or not it succeeded: the node may have changed.
    pub sent: bool,
    /// A write request was sent that the kernel did not refuse as unsupported. A create the
    /// kernel refuses with EOPNOTSUPP (it lacks the kind) changed nothing.
    pub touched: bool,
}

impl<'a> Converge<'a> {
    /// A walk that ends at the first failure: an apply.
    pub(crate) fn apply(nl: &'a Netlink) -> Converge<'a> {
        Converge {
            nl,
            best_effort: false,
            steps: Vec::new(),
            errors: Vec::new(),
            sent: false,
            touched: false,
        }
    }

    /// A walk that goes on past failures and collects them: a rollback or a recovery.
    pub(crate) fn rollback(nl: &'a Netlink) -> Converge<'a> {
        Converge {
            best_effort: true,
            ..Converge::apply(nl)
        }
    }

    fn done(&mut self, line: String) {
        tracing::info!(step = %line, "changed");
        self.steps.push(line);
    }

    /// A failure: it ends an apply's walk; a rollback's walk records it and goes on.
    fn fail(&mut self, e: Error) -> Result<(), Error> {
        if self.best_effort {
            tracing::warn!(error = %report(&e), "rollback step failed");
            self.errors.push(e);
            Ok(())
        } else {
            Err(e)
        }
    }

    /// The outcome of one write request about `what`: `line` recorded on success, the errnos
    /// in `tolerated` ignored, any other error a failure. True when it succeeded.
    fn wrote(
        &mut self,
        what: &str,
        result: Result<(), cni_common::Error>,
        tolerated: &[i32],
        line: String,
    ) -> Result<bool, Error> {
        self.sent = true;
        self.touched = true;
        match result {
            Ok(()) => {
                self.done(line);
                Ok(true)
            }
            Err(e) if tolerated.contains(&e.errno()) => Ok(false),
            Err(e) => self.fail(Error::wrap(what, e.into())).map(|()| false),
        }
    }

    /// The node as it is now; None when reading it failed in a rollback (the phase that needs
    /// it is skipped, the failure collected).
    fn node(&mut self) -> Result<Option<NodeState>, Error> {
        match NodeState::read(self.nl) {
            Ok(node) => Ok(Some(node)),
            Err(e) => self.fail(e).map(|()| None),
        }
    }

    /// One link as it is now; None when it is not there or reading it failed in a rollback.
    fn link(&mut self, name: &str) -> Result<Option<cni_common::netlink::Link>, Error> {
        match link(self.nl, name) {
            Ok(l) => Ok(l),
            Err(e) => self.fail(e).map(|()| None),
        }
    }

    /// Makes the node match `targets` and `routes`. An apply's walk returns the first failure;
    /// a rollback's runs every phase and leaves its failures in `errors`.
    pub(crate) fn run(&mut self, targets: &[LinkTarget], routes: &RouteGoal) -> Result<(), Error> {
        self.create(targets)?;
        self.delete(targets)?;
        let mut downed = Vec::new();
        if let Some(node) = self.node()? {
            downed = self.release_remoded_bonds(targets, &node)?;
        }
        if let Some(node) = self.node()? {
            downed.extend(self.release_and_settle(targets, &node)?);
        }
        if let Some(node) = self.node()? {
            self.mtu(targets, &node)?;
        }
        if let Some(node) = self.node()? {
            self.enslave(targets, &node)?;
        }
        if let Some(node) = self.node()? {
            self.raise(targets, &downed, &node)?;
        }
        if let Some(node) = self.node()? {
            self.addresses(targets, &node)?;
        }
        if let Some(node) = self.node()? {
            self.routes(routes, &node)?;
        }
        Ok(())
    }
}

fn link(nl: &Netlink, name: &str) -> Result<Option<cni_common::netlink::Link>, Error> {
    nl.link_show(name)
        .with_context(|| format!("interface {name}"))
}

/// `want` when it is set and differs from `have`.
fn differs<T: PartialEq + Copy>(want: Option<T>, have: Option<T>) -> Option<T> {
    want.filter(|w| Some(*w) != have)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_differing_wanted_values_are_changes() {
        assert_eq!(differs(Some(1), Some(1)), None);
        assert_eq!(differs(Some(2), Some(1)), Some(2));
        assert_eq!(differs(None::<u8>, Some(1)), None);
    }
}
