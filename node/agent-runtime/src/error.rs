//! The error of the node agent's shared pieces and of kubernetes-nmstate's handler: what was
//! being done, with the error that stopped it as its source, printed as a chain on one line
//! (`report`), outermost first, as `node-agent` prints its own.

use std::io;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file system call on `path` failed; `action` names it ("opening", "locking").
    #[error("{action} {}", path.display())]
    Io {
        action: String,
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    /// A system call that involves no file (signal handlers, the runtime) failed.
    #[error("{action}")]
    System {
        action: &'static str,
        #[source]
        source: io::Error,
    },

    /// A request to the API server failed.
    #[error("{action}")]
    Kube {
        action: String,
        #[source]
        source: kube::Error,
    },

    /// Netlink, through the shared CNI library, whose errors say what failed.
    #[error(transparent)]
    Cni(#[from] cni_common::Error),

    /// A fact that stops the command.
    #[error("{0}")]
    Message(String),

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
    pub fn msg(msg: impl Into<String>) -> Error {
        Error::Message(msg.into())
    }

    /// Says what was being done when `err` happened.
    pub fn wrap(context: impl Into<String>, err: Error) -> Error {
        Error::Chain {
            context: context.into(),
            source: Box::new(err),
        }
    }

    pub fn io(action: impl Into<String>, path: &Path, source: io::Error) -> Error {
        Error::Io {
            action: action.into(),
            path: path.to_path_buf(),
            source,
        }
    }

    pub fn kube(action: impl Into<String>, source: kube::Error) -> Error {
        Error::Kube {
            action: action.into(),
            source,
        }
    }

    /// The whole chain on one line, outermost first.
    pub fn report(&self) -> String {
        report(self)
    }
}

// `.context(..)` and `.with_context(|| ..)` on every Result whose error converts into ours.
error_context::context_trait!(Error, Error::wrap);

/// `err` and each of its sources, joined with ": ", on one line. A cause that the error above
/// it already printed (as some libraries' errors do) is not repeated.
pub fn report(err: &dyn std::error::Error) -> String {
    let mut line = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !line.ends_with(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        source = cause.source();
    }
    line.replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrapped_error_reads_outermost_first_on_one_line() {
        let io = Error::io(
            "locking",
            Path::new("/run/x"),
            io::Error::from_raw_os_error(libc::EBADF),
        );
        assert_eq!(
            Error::wrap("starting", io).report(),
            "starting: locking /run/x: Bad file descriptor (os error 9)"
        );
    }
}
