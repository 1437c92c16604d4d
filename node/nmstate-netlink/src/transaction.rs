//! An apply as a transaction: plan and check, journal, change, verify; on any failure put the
//! node back from the snapshot. [`Applied`] holds the change until it is kept or undone.

use std::fmt;
use std::path::Path;

use cni_common::netlink::Netlink;
use error_context::report;

use crate::converge::Converge;
use crate::error::{one_line, Context, READING};
use crate::journal::Journal;
use crate::node::NodeState;
use crate::plan::{plan, Snapshot};
use crate::verify::mismatches;
use crate::{DesiredState, Error};

/// An applied desired state, not yet kept: [`Applied::commit`] keeps it, [`Applied::rollback`]
/// undoes it. Dropping it does neither and leaves the journal, as a crash would, for
/// [`recover`] to undo.
pub struct Applied {
    nl: Netlink,
    journal: Journal,
    snapshot: Snapshot,
    steps: Vec<String>,
}

impl fmt::Debug for Applied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Applied")
            .field("journal", &self.journal)
            .field("steps", &self.steps)
            .finish_non_exhaustive()
    }
}

impl Applied {
    /// Keeps the change: removes the journal.
    pub fn commit(self) -> Result<(), Error> {
        self.journal.remove()?;
        tracing::info!(steps = self.steps.len(), "network change committed");
        Ok(())
    }

    /// Puts the node back as the journal says (used when a probe fails after apply), removes
    /// the journal.
    pub fn rollback(self) -> Result<(), Error> {
        match restore(&self.nl, &self.snapshot) {
            Ok(_) => self.journal.remove(),
            Err(rollback) => Err(Error::RollbackFailed {
                cause: "rolling back on request".to_string(),
                rollback: one_line(&rollback),
            }),
        }
    }

    /// Whether the apply changed anything on the node (false: the node already was as the
    /// state asks, and there is nothing to probe).
    pub fn changed(&self) -> bool {
        !self.steps.is_empty()
    }

    /// What changed, one line per step, for logs and the enactment message.
    pub fn summary(&self) -> String {
        if self.steps.is_empty() {
            "nothing to change".to_string()
        } else {
            self.steps.join("\n")
        }
    }
}

/// Applies `desired` in the calling thread's network namespace. See the crate's documentation
/// for the guarantees.
pub fn apply(desired: &DesiredState, journal: &Path) -> Result<Applied, Error> {
    let journal = Journal::at(journal);
    if journal.exists() {
        return Err(Error::Refused(format!(
            "the journal of an unfinished apply is at {}: recover it first",
            journal.path().display()
        )));
    }
    let nl = Netlink::current().context(READING)?;
    let node = NodeState::read(&nl)?;
    let plan = plan(desired, &node)?;
    journal.write(&plan.snapshot)?;
    let mut walk = Converge::apply(&nl);
    let result = walk
        .run(&plan.targets, &plan.routes)
        .and_then(|()| check(&nl, &plan.targets, &plan.routes));
    let (steps, sent, touched) = (std::mem::take(&mut walk.steps), walk.sent, walk.touched);
    let cause = match result {
        Ok(()) => {
            return Ok(Applied {
                nl,
                journal,
                snapshot: plan.snapshot,
                steps,
            })
        }
        Err(cause) => cause,
    };
    // The failure becomes the message of what the caller sees: refused, or rolled back.
    let cause = report(&cause);
    tracing::warn!(%cause, changed = steps.len(), "apply failed");
    if !sent {
        journal.remove()?;
        return Err(Error::Refused(cause));
    }
    // A request was sent: even one that failed may have changed part of what it asked for,
    // so the node is walked back whatever the steps say.
    match restore(&nl, &plan.snapshot) {
        Ok(undone) => {
            journal.remove()?;
            if touched || !undone.is_empty() {
                Err(Error::Failed { cause })
            } else {
                // Only creates the kernel refused as unsupported, and nothing to undo: the
                // node was not changed.
                Err(Error::Refused(cause))
            }
        }
        Err(rollback) => Err(Error::RollbackFailed {
            cause,
            rollback: one_line(&rollback),
        }),
    }
}

/// At start: when a journal is left by a process killed mid-apply, restore it and remove it.
/// Ok(None) when there was none.
pub fn recover(journal: &Path) -> Result<Option<String>, Error> {
    let journal = Journal::at(journal);
    let Some(snapshot) = journal.read()? else {
        return Ok(None);
    };
    let nl = Netlink::current().context(READING)?;
    match restore(&nl, &snapshot) {
        Ok(steps) => {
            journal.remove()?;
            let what = if steps.is_empty() {
                "nothing had changed".to_string()
            } else {
                steps.join("\n")
            };
            tracing::info!(restored = %what, "recovered an unfinished network change");
            Ok(Some(what))
        }
        Err(rollback) => Err(Error::RollbackFailed {
            cause: "recovering an unfinished apply".to_string(),
            rollback: one_line(&rollback),
        }),
    }
}

/// Reads the node back and compares it with the targets.
fn check(
    nl: &Netlink,
    targets: &[crate::target::LinkTarget],
    routes: &crate::target::RouteGoal,
) -> Result<(), Error> {
    let node = NodeState::read(nl)?;
    let wrong = mismatches(&node, targets, routes);
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(Error::Mismatch(wrong))
    }
}

/// Walks the node back to the snapshot and verifies it; the steps taken. Best effort: every
/// phase runs whatever failed before it, and the errors are every failure and every mismatch
/// left.
fn restore(nl: &Netlink, snapshot: &Snapshot) -> Result<Vec<String>, Vec<Error>> {
    let mut walk = Converge::rollback(nl);
    if let Err(e) = walk.run(&snapshot.links, &snapshot.routes) {
        walk.errors.push(e);
    }
    let mut errors = std::mem::take(&mut walk.errors);
    match NodeState::read(nl) {
        Ok(node) => {
            let wrong = mismatches(&node, &snapshot.check, &snapshot.routes);
            if !wrong.is_empty() {
                errors.push(Error::Mismatch(wrong));
            }
        }
        Err(e) => errors.push(e),
    }
    if errors.is_empty() {
        Ok(walk.steps)
    } else {
        Err(errors)
    }
}
