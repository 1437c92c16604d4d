//! What can go wrong talking to OVSDB. Each variant says one thing; what was being done when it
//! happened is added by [`Context`] on a `Result` (by [`Error::wrap`] elsewhere), and the cause is
//! the error's `source`.

use std::fmt;
use std::io;

pub type Result<T> = std::result::Result<T, Error>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// What was being done when `source` stopped it.
    #[error("{context}")]
    Wrapped {
        context: String,
        #[source]
        source: Box<Error>,
    },

    #[error(transparent)]
    Io(#[from] io::Error),

    #[error("no answer in time")]
    Timeout,

    #[error("the connection was closed")]
    Closed,

    /// Bytes that are not a JSON-RPC message.
    #[error("undecodable message")]
    Json(#[from] serde_json::Error),

    /// A message that decodes but does not say what RFC 7047 says it must.
    #[error("{0}")]
    Protocol(String),

    /// The server answered the request with a JSON-RPC error.
    #[error("refused {method}: {error}{}", in_parens(.details))]
    Rpc {
        method: String,
        error: String,
        details: String,
    },

    /// The transaction was answered, but one of its operations (or its commit) failed.
    #[error("OVSDB transaction failed: {0}")]
    Transaction(OpFailure),

    #[error("{endpoint:?}: {why}")]
    InvalidEndpoint { endpoint: String, why: &'static str },

    #[error("{endpoint:?}: ssl: endpoints are not supported; use unix: or tcp:")]
    UnsupportedEndpoint { endpoint: String },
}

fn in_parens(details: &str) -> String {
    if details.is_empty() {
        String::new()
    } else {
        format!(" ({details})")
    }
}

impl Error {
    /// `err`, with what was being done when it happened.
    pub fn wrap(context: impl Into<String>, err: impl Into<Error>) -> Error {
        Error::Wrapped {
            context: context.into(),
            source: Box::new(err.into()),
        }
    }

    /// The innermost error: what actually went wrong, under every context.
    pub fn root(&self) -> &Error {
        let mut e = self;
        while let Error::Wrapped { source, .. } = e {
            e = source;
        }
        e
    }

    /// The server could not be reached or stopped answering. Trying again later may work: OVS
    /// restarting is the usual cause.
    pub fn is_transient(&self) -> bool {
        matches!(self.root(), Error::Io(_) | Error::Timeout | Error::Closed)
    }

    /// The error and its causes on one line, outermost first, for places that carry a message
    /// only (a CNI error's `msg`, a log line): [`error_context::report`].
    pub fn report(&self) -> String {
        error_context::report(self)
    }
}

// `.context(..)` and `.with_context(|| ..)` on every Result whose error converts into ours.
error_context::context_trait!(Error, Error::wrap);

/// The operation a transaction failed at, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpFailure {
    /// Index of the failed operation; equal to the number of operations for a failed commit.
    pub index: usize,
    pub error: String,
    pub details: String,
}

impl fmt::Display for OpFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.error)?;
        if !self.details.is_empty() {
            write!(f, " ({})", self.details)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_reads_outermost_first() {
        let e = Error::wrap(
            "cannot reach OVSDB at unix:/x",
            io::Error::from(io::ErrorKind::NotFound),
        );
        assert_eq!(
            e.report(),
            "cannot reach OVSDB at unix:/x: entity not found"
        );
    }

    #[test]
    fn rpc_errors_show_their_details() {
        let e = Error::Rpc {
            method: "transact".into(),
            error: "unknown database".into(),
            details: "no db Foo".into(),
        };
        assert_eq!(
            e.to_string(),
            "refused transact: unknown database (no db Foo)"
        );
    }

    #[test]
    fn only_connection_failures_are_transient_however_deeply_wrapped() {
        let wrapped = |e: Error| Error::wrap("b", Error::wrap("a", e));
        assert!(wrapped(Error::Timeout).is_transient());
        assert!(wrapped(Error::Closed).is_transient());
        assert!(wrapped(io::Error::other("reset").into()).is_transient());
        assert!(!wrapped(Error::Protocol("x".into())).is_transient());
        let rpc = Error::Rpc {
            method: "transact".into(),
            error: "e".into(),
            details: String::new(),
        };
        assert!(!wrapped(rpc).is_transient());
    }
}
