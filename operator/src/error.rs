//! The operator's one error type: what failed, with the cause's text.

use std::fmt;

#[derive(Debug)]
pub struct Error {
    context: String,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn new(context: impl Into<String>) -> Error {
        Error {
            context: context.into(),
        }
    }

    /// Wraps a cause with what was being done: `Error::with("apply DaemonSet multus", e)`.
    pub fn with(context: impl fmt::Display, cause: impl fmt::Display) -> Error {
        Error {
            context: format!("{context}: {cause}"),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.context)
    }
}

impl std::error::Error for Error {}

/// Adds context to any displayable error: `op().context("read the applied ConfigMap")?`.
pub trait Context<T> {
    fn context(self, what: impl fmt::Display) -> Result<T>;
}

impl<T, E: fmt::Display> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl fmt::Display) -> Result<T> {
        self.map_err(|e| Error::with(what, e))
    }
}
