//! The handler's error: what was being done (`.context(..)`, `.with_context(|| ..)`), with the
//! error that stopped it as its source, printed on one line, outermost first, by
//! [`error_context::report`]. What it shares with the node agent (the runtime, signals, the
//! directory lock, link notifications) fails with `agent_runtime`'s error, held here as one
//! variant with its own text.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The runtime, a signal handler, the directory lock, the link notifications.
    #[error(transparent)]
    Runtime(#[from] agent_runtime::Error),

    /// A request to the API server failed.
    #[error(transparent)]
    Kube(#[from] kube::Error),

    /// A file system or system call failed; the context says on what.
    #[error(transparent)]
    Io(#[from] std::io::Error),

    /// Netlink, through the shared CNI library.
    #[error(transparent)]
    Cni(#[from] cni_common::Error),

    /// The node's network state: reading it, restoring an unfinished change, a transaction.
    #[error(transparent)]
    Netlink(#[from] nmstate_netlink::Error),

    /// An object built here does not decode as the API's.
    #[error(transparent)]
    Json(#[from] serde_json::Error),

    /// Work handed to a blocking thread did not finish there.
    #[error(transparent)]
    Task(#[from] tokio::task::JoinError),

    /// The ready mark is not there (yet).
    #[error("{} is missing: the node's policies are not applied yet", .0.display())]
    NotReady(PathBuf),

    /// Something a policy asks for that the handler does not do.
    #[error("{0} is not supported")]
    Unsupported(&'static str),

    /// A policy's `maxUnavailable` (`value` as the policy has it) is no number of nodes.
    #[error("maxUnavailable {value}: {why}")]
    MaxUnavailable { value: String, why: &'static str },

    /// A probe did not pass: what it saw instead.
    #[error("{0}")]
    Probe(String),

    /// What was being done when `source` happened.
    #[error("{context}")]
    Chain {
        context: String,
        #[source]
        source: Box<Error>,
    },
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Says what was being done when `cause` happened.
    pub fn wrap(context: impl Into<String>, cause: impl Into<Error>) -> Error {
        Error::Chain {
            context: context.into(),
            source: Box::new(cause.into()),
        }
    }
}

// `.context(..)` and `.with_context(|| ..)` on every Result whose error converts into ours.
error_context::context_trait!(Error, Error::wrap);

#[cfg(test)]
mod tests;
