//! What can go wrong talking to nf_tables. The kernel answers with an errno; the ones callers
//! act on have variants of their own, so nobody matches on message text.

use std::io;

pub type Result<T> = std::result::Result<T, Error>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The socket itself failed (opening, sending, receiving); what it was doing is the
    /// context around it.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// ENOENT: the table, chain, set, element or rule named by `operation` does not exist.
    #[error("{operation}: {source}")]
    NotFound {
        operation: String,
        #[source]
        source: io::Error,
    },
    /// EEXIST (or EBUSY, which older kernels give for an element whose key is taken with other
    /// data): `operation` would replace something that is there.
    #[error("{operation}: {source}")]
    Exists {
        operation: String,
        #[source]
        source: io::Error,
    },
    /// ERESTART: a transaction bound to a generation of the ruleset
    /// ([`crate::Batch::if_generation`]) was refused whole, because another one changed the
    /// ruleset since that generation.
    #[error("{operation}: the ruleset changed since it was read: {source}")]
    GenerationChanged {
        operation: String,
        #[source]
        source: io::Error,
    },
    /// Any other errno from the kernel.
    #[error("{operation}: {source}")]
    Kernel {
        operation: String,
        #[source]
        source: io::Error,
    },
    /// The kernel sent something this crate cannot read.
    #[error("malformed nf_tables message: {0}")]
    Decode(String),
    /// What the caller was doing when `source` happened.
    #[error("{context}")]
    Context {
        context: String,
        #[source]
        source: Box<Error>,
    },
}

impl Error {
    /// `err`, explained by what the caller was doing.
    pub fn wrap(context: impl Into<String>, err: impl Into<Error>) -> Error {
        Error::Context {
            context: context.into(),
            source: Box::new(err.into()),
        }
    }

    /// The kernel's answer to `operation`, `errno` (positive).
    pub(crate) fn from_errno(operation: impl Into<String>, errno: i32) -> Error {
        let operation = operation.into();
        let source = io::Error::from_raw_os_error(errno);
        match errno {
            libc::ENOENT => Error::NotFound { operation, source },
            libc::EEXIST | libc::EBUSY => Error::Exists { operation, source },
            libc::ERESTART => Error::GenerationChanged { operation, source },
            _ => Error::Kernel { operation, source },
        }
    }

    /// The error under any context.
    pub fn root(&self) -> &Error {
        match self {
            Error::Context { source, .. } => source.root(),
            other => other,
        }
    }

    /// The kernel's errno, if it answered with one.
    pub fn errno(&self) -> Option<i32> {
        match self.root() {
            Error::NotFound { source, .. }
            | Error::Exists { source, .. }
            | Error::GenerationChanged { source, .. }
            | Error::Kernel { source, .. }
            | Error::Io(source) => source.raw_os_error(),
            _ => None,
        }
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self.root(), Error::NotFound { .. })
    }

    pub fn is_exists(&self) -> bool {
        matches!(self.root(), Error::Exists { .. })
    }

    /// Whether the ruleset changed since the generation a transaction was bound to: listing
    /// again and planning anew may succeed.
    pub fn is_generation_changed(&self) -> bool {
        matches!(self.root(), Error::GenerationChanged { .. })
    }
}

// `.context(..)` and `.with_context(|| ..)` on every Result whose error converts into ours.
error_context::context_trait!(Error, Error::wrap);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enoent_is_not_found_through_any_context() {
        let e = Error::wrap(
            "removing the spoof check",
            Error::from_errno("delete chain", 2),
        );
        assert!(e.is_not_found());
        assert_eq!(e.errno(), Some(libc::ENOENT));
    }

    #[test]
    fn eexist_and_ebusy_are_exists() {
        assert!(Error::from_errno("add element", libc::EEXIST).is_exists());
        assert!(Error::from_errno("add element", libc::EBUSY).is_exists());
        assert!(!Error::from_errno("add element", libc::EPERM).is_exists());
    }

    #[test]
    fn erestart_is_a_changed_generation() {
        let e = Error::from_errno("nftables transaction", libc::ERESTART);
        assert!(e.is_generation_changed());
        assert!(!e.is_not_found());
        assert_eq!(e.errno(), Some(libc::ERESTART));
        assert!(e
            .to_string()
            .starts_with("nftables transaction: the ruleset changed since it was read"));
    }

    #[test]
    fn the_message_names_the_operation_and_the_errno() {
        let e = Error::from_errno("delete table inet t", libc::ENOENT);
        assert!(e
            .to_string()
            .starts_with("delete table inet t: No such file or directory"));
    }
}
