//! What a failed parse, apply, rollback or recovery reports. Each message is written to be read
//! in a Kubernetes condition: it names the interface and says whether the node was changed.
//! The outcomes callers tell apart ([`Error::Refused`], [`Error::Failed`],
//! [`Error::RollbackFailed`]) carry their message, rendered on one line; the failures on the
//! way to them are typed, with context, until they become that message.

/// Why a desired state was not applied, or a journal not restored.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Refused before anything on the node was touched: a field we do not support, a port that
    /// does not exist, a kind this kernel cannot create.
    #[error("{0}")]
    Refused(String),
    /// The apply changed the node, failed, and the node was put back as it was.
    #[error("{cause} (the changes were rolled back)")]
    Failed { cause: String },
    /// The apply (or a later rollback) failed and so did putting the node back: the node is in
    /// between, and the journal is kept for [`crate::recover`] to try again.
    #[error("{cause}; rolling back failed too: {rollback}")]
    RollbackFailed { cause: String, rollback: String },
    /// A netlink request or dump, or a write of the journal, through the shared CNI library.
    #[error(transparent)]
    Cni(#[from] cni_common::Error),
    /// The journal does not decode.
    #[error(transparent)]
    Decode(#[from] serde_json::Error),
    /// The journal is not one this version restores, or its path names no file.
    #[error("{0}")]
    Journal(String),
    /// A change the walk could not make: what it needs is not there, or the kernel lacks the
    /// kind.
    #[error("{0}")]
    Step(String),
    /// The node read back differs from what the walk was to leave.
    #[error("verification failed: {}", .0.join("; "))]
    Mismatch(Vec<String>),
    /// What was being done when `source` happened.
    #[error("{context}")]
    Chain {
        context: String,
        #[source]
        source: Box<Error>,
    },
}

impl Error {
    /// Says what was being done when `cause` happened.
    pub fn wrap(context: impl Into<String>, cause: Error) -> Error {
        Error::Chain {
            context: context.into(),
            source: Box::new(cause),
        }
    }
}

// `.context(..)` and `.with_context(|| ..)` on every Result whose error converts into ours.
error_context::context_trait!(Error, Error::wrap);

/// What reading the node failed in; the same words whether an apply or a report read it.
pub(crate) const READING: &str = "reading the node's network state";

/// Several failures on one line, each with its causes: a walk back goes on past its failures
/// and reports them all.
pub(crate) fn one_line(errors: &[Error]) -> String {
    errors
        .iter()
        .map(|e| error_context::report(e))
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_request_reads_as_what_it_was_about_and_the_kernels_answer() {
        let refused = cni_common::Error::Netlink {
            errno: nix::libc::EBUSY,
            detail: None,
        };
        let err = Err::<(), _>(refused)
            .context("interface eth1")
            .expect_err("an error");
        assert_eq!(
            error_context::report(&err),
            "interface eth1: Device or resource busy (os error 16)"
        );
    }

    #[test]
    fn several_failures_are_one_line_in_the_order_they_happened() {
        let errors = [
            Error::wrap("interface eth1", Error::Step("gone".to_string())),
            Error::Mismatch(vec!["eth2: mtu 1400, not 1500".to_string()]),
        ];
        assert_eq!(
            one_line(&errors),
            "interface eth1: gone; verification failed: eth2: mtu 1400, not 1500"
        );
    }
}
