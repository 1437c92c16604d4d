//! The real-kernel tier's error: what failed, with the context it failed in.

use std::path::Path;

/// Why setting up, booting or checking failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A plain statement of what is wrong and what to do.
    #[error("{0}")]
    Message(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// `error` happened while doing `context`.
    #[error("{context}: {source}")]
    Chain { context: String, source: Box<Error> },
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn msg(text: impl Into<String>) -> Error {
        Error::Message(text.into())
    }

    /// `err`, saying what was being done when it happened.
    pub fn wrap(context: impl Into<String>, err: impl Into<Error>) -> Error {
        Error::Chain {
            context: context.into(),
            source: Box::new(err.into()),
        }
    }

    /// An I/O error on `path` while doing `what`.
    pub fn io(what: &str, path: &Path, err: std::io::Error) -> Error {
        Error::wrap(format!("{what} {}", path.display()), err)
    }
}

// `.context(..)` and `.with_context(|| ..)` on every Result whose error converts into ours.
error_context::context_trait!(Error, Error::wrap);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrapped_error_shows_its_whole_chain() {
        let inner = Error::io(
            "cannot read",
            Path::new("/x"),
            std::io::Error::from(std::io::ErrorKind::NotFound),
        );
        let err = Error::wrap("setup", inner);
        assert_eq!(err.to_string(), "setup: cannot read /x: entity not found");
    }
}
