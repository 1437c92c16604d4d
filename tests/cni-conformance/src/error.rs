//! The suite's own failures: an `ip` command that failed, a file it could not create or read, a
//! configuration it cannot use. A check's verdict is not an error: it is the text of the
//! check's report line (see `report`).

use std::error::Error as StdError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Message(String),
    /// `context` explains what was being done when `source` happened.
    #[error("{context}")]
    Chain {
        context: String,
        #[source]
        source: Box<Error>,
    },
    #[error("`ip {args}` failed: {stderr}")]
    IpFailed { args: String, stderr: String },
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

impl Error {
    /// `err`, explained by `context`.
    pub fn wrap(context: impl Into<String>, err: impl Into<Error>) -> Self {
        Error::Chain {
            context: context.into(),
            source: Box::new(err.into()),
        }
    }

    /// The error and its sources on one line, `outer: inner: innermost`, as report lines and
    /// the command line show it.
    pub fn chain(&self) -> String {
        let mut text = self.to_string();
        let mut next = self.source();
        while let Some(err) = next {
            text.push_str(": ");
            text.push_str(&err.to_string());
            next = err.source();
        }
        text
    }
}

// `.context(..)` and `.with_context(|| ..)` on every Result whose error converts into ours.
error_context::context_trait!(Error, Error::wrap);

impl From<String> for Error {
    fn from(message: String) -> Self {
        Error::Message(message)
    }
}

impl From<&str> for Error {
    fn from(message: &str) -> Self {
        Error::Message(message.to_string())
    }
}

/// A check's verdict is text: an error in it shows its whole chain.
impl From<Error> for String {
    fn from(err: Error) -> Self {
        err.chain()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrapped_error_shows_every_cause_outermost_first() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let err = Error::wrap(
            "cannot create the sandbox",
            Error::wrap("cannot read /x", io),
        );
        assert_eq!(
            err.chain(),
            "cannot create the sandbox: cannot read /x: no such file"
        );
    }

    #[test]
    fn a_wrapped_error_keeps_its_cause_as_source() {
        let err = Error::wrap(
            "listing links",
            Error::from("`ip -j addr` output is not a list"),
        );
        assert_eq!(err.to_string(), "listing links");
        assert_eq!(
            err.source().map(ToString::to_string).as_deref(),
            Some("`ip -j addr` output is not a list")
        );
    }
}
