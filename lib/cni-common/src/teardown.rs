//! Teardown that goes as far as it can: DEL and GC run every step, even after one fails, and
//! report every failure. Stopping at the first would leave the later steps' objects behind
//! (a failed IPAM DEL must not keep the spoof-check rules), and the runtime retries DEL anyway.

use crate::error::{Error, Result};

/// The failures of one teardown, collected step by step.
#[derive(Debug, Default)]
pub struct Teardown {
    errors: Vec<Error>,
}

impl Teardown {
    pub fn new() -> Self {
        Teardown::default()
    }

    /// Takes one step's outcome: its value, or `None` with the failure kept for [`finish`].
    ///
    /// [`finish`]: Teardown::finish
    pub fn step<T>(&mut self, outcome: Result<T>) -> Option<T> {
        match outcome {
            Ok(v) => Some(v),
            Err(e) => {
                tracing::warn!("teardown step failed: {}", e.msg());
                self.errors.push(e);
                None
            }
        }
    }

    /// Takes the failures of a step that keeps its own list.
    pub fn extend(&mut self, errors: impl IntoIterator<Item = Error>) {
        for e in errors {
            self.step::<()>(Err(e));
        }
    }

    pub fn is_clean(&self) -> bool {
        self.errors.is_empty()
    }

    /// Every step ran: success, the one failure, or all of them in order.
    pub fn finish(mut self) -> Result<()> {
        match self.errors.len() {
            0 => Ok(()),
            1 => Err(self.errors.remove(0)),
            _ => Err(Error::Several(self.errors)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;

    #[test]
    fn a_clean_teardown_finishes_ok() {
        let mut t = Teardown::new();
        assert_eq!(t.step(Ok(3)), Some(3));
        assert!(t.finish().is_ok());
    }

    #[test]
    fn steps_after_a_failure_still_run() {
        let mut t = Teardown::new();
        let mut ran = Vec::new();
        for step in 0..3 {
            t.step(if step == 0 {
                Err(Error::system("first"))
            } else {
                ran.push(step);
                Ok(())
            });
        }
        assert_eq!(ran, [1, 2]);
        assert_eq!(t.finish().expect_err("one failed").msg(), "first");
    }

    #[test]
    fn several_failures_are_all_reported_with_the_first_code() {
        let mut t = Teardown::new();
        t.step::<()>(Err(Error::new(Code::Ipam, "host-local DEL: disk full")));
        t.step::<()>(Err(Error::system("nft: table busy")));
        let e = t.finish().expect_err("two failed");
        assert_eq!(e.code(), Code::Ipam);
        assert_eq!(
            e.msg(),
            "2 teardown steps failed: host-local DEL: disk full; nft: table busy"
        );
    }
}
