//! What a failed parse, apply, rollback or recovery reports. Each message is written to be read
//! in a Kubernetes condition: it names the interface and says whether the node was changed.

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
    /// The journal could not be written, read or removed.
    #[error("journal {path}: {reason}")]
    Journal { path: String, reason: String },
    /// Reading the node's state failed.
    #[error("reading the node's network state: {0}")]
    Read(String),
}
