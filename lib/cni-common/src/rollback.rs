//! Undo for ADD: each step that changes the node records how to undo itself in a [`Rollback`];
//! dropping the rollback uncommitted (an error returned with `?`, a panic) undoes the steps in
//! reverse order, and [`Rollback::commit`] at the end of a successful ADD keeps them all.

use crate::error::Result;

type Step<'a> = (String, Box<dyn FnOnce() -> Result<()> + 'a>);

/// The undo steps of one ADD, newest last.
#[derive(Default)]
#[must_use = "dropping a rollback undoes its steps; commit it when the ADD succeeded"]
pub struct Rollback<'a> {
    steps: Vec<Step<'a>>,
}

impl<'a> Rollback<'a> {
    pub fn new() -> Self {
        Rollback { steps: Vec::new() }
    }

    /// Records how to undo a step that just succeeded; `what` names it in the log when the undo
    /// itself fails.
    pub fn push(&mut self, what: impl Into<String>, undo: impl FnOnce() -> Result<()> + 'a) {
        self.steps.push((what.into(), Box::new(undo)));
    }

    /// The ADD succeeded: keep everything it did.
    pub fn commit(mut self) {
        self.steps.clear();
    }
}

impl Drop for Rollback<'_> {
    fn drop(&mut self) {
        // Every step is undone even when an earlier undo fails: each frees something else.
        while let Some((what, undo)) = self.steps.pop() {
            if let Err(e) = undo() {
                tracing::warn!("rollback: undoing {what}: {}", e.msg());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use std::cell::RefCell;

    #[test]
    fn dropping_uncommitted_undoes_the_steps_newest_first() {
        let undone = RefCell::new(Vec::new());
        {
            let mut r = Rollback::new();
            r.push("veth", || {
                undone.borrow_mut().push("veth");
                Ok(())
            });
            r.push("lease", || {
                undone.borrow_mut().push("lease");
                Ok(())
            });
        }
        assert_eq!(*undone.borrow(), ["lease", "veth"]);
    }

    #[test]
    fn a_failed_undo_does_not_stop_the_others() {
        let undone = RefCell::new(Vec::new());
        {
            let mut r = Rollback::new();
            r.push("veth", || {
                undone.borrow_mut().push("veth");
                Ok(())
            });
            r.push("rules", || Err(Error::system("nft refused")));
        }
        assert_eq!(*undone.borrow(), ["veth"]);
    }

    #[test]
    fn committing_keeps_everything() {
        let undone = RefCell::new(Vec::new());
        let mut r = Rollback::new();
        r.push("veth", || {
            undone.borrow_mut().push("veth");
            Ok(())
        });
        r.commit();
        assert!(undone.borrow().is_empty());
    }
}
