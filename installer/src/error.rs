//! The one error type: a message that carries what was being done, outermost first
//! ("installing bridge: writing /opt/cni/bin/.bridge.cni-installer.tmp: No space left on device").
//! `main` prints it as one line on stderr and exits non-zero.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    msg: String,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn new(msg: impl Into<String>) -> Error {
        Error { msg: msg.into() }
    }

    /// Prefixes the message with what was being done.
    pub fn context(self, ctx: impl fmt::Display) -> Error {
        Error {
            msg: format!("{ctx}: {}", self.msg),
        }
    }

    pub fn msg(&self) -> &str {
        &self.msg
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // One line, whatever the causes said.
        f.write_str(&self.msg.replace('\n', " "))
    }
}

impl std::error::Error for Error {}

/// Errors of the shared CNI library (netlink, OVSDB) already say what failed.
impl From<cni_common::Error> for Error {
    fn from(e: cni_common::Error) -> Error {
        Error::new(e.to_string())
    }
}

/// Adds context to any error that can be displayed (io, serde_json, kube, cni-common, ...).
pub trait Context<T> {
    fn context(self, ctx: impl fmt::Display) -> Result<T>;
    fn with_context<C: fmt::Display>(self, ctx: impl FnOnce() -> C) -> Result<T>;
}

impl<T, E: fmt::Display> Context<T> for std::result::Result<T, E> {
    fn context(self, ctx: impl fmt::Display) -> Result<T> {
        self.map_err(|e| Error::new(format!("{ctx}: {e}")))
    }

    fn with_context<C: fmt::Display>(self, ctx: impl FnOnce() -> C) -> Result<T> {
        self.map_err(|e| Error::new(format!("{}: {e}", ctx())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_reads_outermost_first_on_one_line() {
        let io: std::result::Result<(), std::io::Error> =
            Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
        let err = io
            .context("writing x")
            .map_err(|e| e.context("installing bridge"))
            .expect_err("an error");
        assert_eq!(
            err.to_string(),
            "installing bridge: writing x: No space left on device (os error 28)"
        );
        assert_eq!(Error::new("a\nb").to_string(), "a b");
    }
}
