//! The error of what the node agent and kubernetes-nmstate's handler share: what was being
//! done (`.context(..)`, `.with_context(|| ..)`), with the error that stopped it as its source,
//! printed on one line, outermost first, by [`error_context::report`].

use std::io;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file system or system call failed; the context says on what.
    #[error(transparent)]
    Io(#[from] io::Error),

    /// A request to the API server failed.
    #[error(transparent)]
    Kube(#[from] kube::Error),

    /// Netlink, through the shared CNI library, whose errors say what failed.
    #[error(transparent)]
    Cni(#[from] cni_common::Error),

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
    /// Says what was being done when `err` happened.
    pub fn wrap(context: impl Into<String>, err: impl Into<Error>) -> Error {
        Error::Chain {
            context: context.into(),
            source: Box::new(err.into()),
        }
    }

    /// The whole chain on one line, outermost first.
    pub fn report(&self) -> String {
        error_context::report(self)
    }
}

// `.context(..)` and `.with_context(|| ..)` on every Result whose error converts into ours.
error_context::context_trait!(Error, Error::wrap);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrapped_error_reads_outermost_first_on_one_line() {
        let locking: std::result::Result<(), io::Error> =
            Err(io::Error::from_raw_os_error(libc::EBADF));
        let err = locking
            .context("locking /run/x")
            .context("starting")
            .expect_err("still an error");
        assert_eq!(
            err.report(),
            "starting: locking /run/x: Bad file descriptor (os error 9)"
        );
    }
}
