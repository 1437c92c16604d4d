//! The node agent's error: what was being done, with the error that stopped it as its source.
//! `main` prints the whole chain, outermost first, on one line
//! ("installing bridge: creating /opt/cni/bin/.bridge.cni-installer.tmp: No space left on
//! device (os error 28)") and exits non-zero.

use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// What the node agent shares with the nmstate handler: a file system call on a path
    /// ([`Error::io`]), a system call, an API request ([`Error::kube`]), netlink, a fact that
    /// stops the command ([`Error::msg`]). Its text is the shared error's own.
    #[error(transparent)]
    Runtime(#[from] agent_runtime::Error),

    /// A call between two paths (rename, link, copy) failed.
    #[error("{action} {} to {}", from.display(), to.display())]
    IoPair {
        action: &'static str,
        from: PathBuf,
        to: PathBuf,
        #[source]
        source: io::Error,
    },

    /// The record in the destination directory does not decode.
    #[error("{} is not a record of node-agent (move it away to start afresh)", path.display())]
    Record {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },

    /// A plugin did not answer CNI_COMMAND=VERSION as a plugin must.
    #[error("running {} with CNI_COMMAND=VERSION", path.display())]
    Version {
        path: PathBuf,
        #[source]
        source: VersionError,
    },

    /// A call to the container runtime over CRI (`call` names the method) failed.
    #[error("CRI {call} on {}", socket.display())]
    Cri {
        call: &'static str,
        socket: PathBuf,
        #[source]
        source: CriError,
    },

    /// The node's Open vSwitch database.
    #[error(transparent)]
    Ovsdb(#[from] ovsdb::Error),

    /// The command line does not say what to do.
    #[error("{0} (node-agent help for usage)")]
    Usage(String),

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
    /// A fact that stops the command (a foreign file, a plugin not installed, ...).
    pub fn msg(msg: impl Into<String>) -> Error {
        agent_runtime::Error::msg(msg).into()
    }

    /// Says what was being done when `err` happened.
    pub fn wrap(context: impl Into<String>, err: Error) -> Error {
        Error::Chain {
            context: context.into(),
            source: Box::new(err),
        }
    }

    /// A file system call on `path` failed; `action` names it ("opening", "fsync of").
    pub fn io(action: impl Into<String>, path: &Path, source: io::Error) -> Error {
        agent_runtime::Error::io(action, path, source).into()
    }

    pub fn io_pair(action: &'static str, from: &Path, to: &Path, source: io::Error) -> Error {
        Error::IoPair {
            action,
            from: from.to_path_buf(),
            to: to.to_path_buf(),
            source,
        }
    }

    pub fn kube(action: impl Into<String>, source: kube::Error) -> Error {
        agent_runtime::Error::kube(action, source).into()
    }

    /// The whole chain on one line, outermost first, as `main` prints it.
    pub fn report(&self) -> String {
        report(self)
    }
}

// `.context(..)` and `.with_context(|| ..)` on every Result whose error converts into ours.
error_context::context_trait!(Error, Error::wrap);

/// Netlink, through the shared CNI library, whose errors say what failed.
impl From<cni_common::Error> for Error {
    fn from(e: cni_common::Error) -> Error {
        agent_runtime::Error::Cni(e).into()
    }
}

/// `err` and each of its sources on one line, as the node's shared pieces print theirs.
pub use agent_runtime::error::report;

/// Why a plugin's answer to CNI_COMMAND=VERSION was not one.
#[derive(Debug, thiserror::Error)]
pub enum VersionError {
    /// It could not be started or waited for, or its output not read.
    #[error(transparent)]
    Io(#[from] io::Error),

    #[error("no answer in {timeout:?}")]
    NoAnswer { timeout: Duration },

    /// It exited, but something it left running holds its output open.
    #[error("exited ({status}) but its output was still open after {timeout:?}")]
    OutputOpen {
        status: ExitStatus,
        timeout: Duration,
    },

    #[error("{status}: {output}")]
    Failed { status: ExitStatus, output: String },

    #[error("not a CNI version answer: {output:?}")]
    NotAnAnswer {
        output: String,
        #[source]
        source: serde_json::Error,
    },

    #[error("empty cniVersion or supportedVersions: {output:?}")]
    Empty { output: String },
}

/// Why a call to the runtime failed.
#[derive(Debug, thiserror::Error)]
pub enum CriError {
    /// The socket is missing, refuses, or is not ours to open.
    #[error("connecting")]
    Connect(#[source] io::Error),

    #[error("starting HTTP/2")]
    Handshake(#[source] hyper::Error),

    /// The runtime answered with an error status, or the connection broke during the call.
    #[error("{}", describe(.0))]
    Status(tonic::Status),

    /// Connecting and the whole call took longer than this.
    #[error("no answer in {0:?}")]
    Timeout(Duration),
}

/// "Unimplemented: unknown service runtime.v1.RuntimeService", and for a status made from a
/// broken connection, what broke it. (A status's own Display prints its metadata.)
fn describe(status: &tonic::Status) -> String {
    let mut text = format!("{:?}: {}", status.code(), status.message());
    let mut cause = std::error::Error::source(status);
    while let Some(err) = cause {
        let more = err.to_string();
        // The message is often the first cause's own text.
        if !text.ends_with(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = err.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrapped_error_reads_outermost_first_on_one_line() {
        let io = Error::io(
            "writing",
            Path::new("x"),
            io::Error::from_raw_os_error(libc::ENOSPC),
        );
        let err = Error::wrap("installing bridge", io);
        assert_eq!(err.to_string(), "installing bridge");
        assert_eq!(
            err.report(),
            "installing bridge: writing x: No space left on device (os error 28)"
        );
        assert_eq!(Error::msg("a\nb").report(), "a b");
    }

    /// Like a library error that prints its source itself.
    #[derive(Debug, thiserror::Error)]
    #[error("request failed: {0}")]
    struct Verbose(#[source] io::Error);

    #[test]
    fn a_cause_printed_by_its_parent_is_not_repeated() {
        let err = Verbose(io::Error::other("connection refused"));
        assert_eq!(report(&err), "request failed: connection refused");
    }

    #[test]
    fn the_source_of_an_io_error_is_the_os_error() {
        let err = Error::io(
            "opening",
            Path::new("/x"),
            io::Error::from_raw_os_error(libc::ENOENT),
        );
        let source = std::error::Error::source(&err).and_then(|s| s.downcast_ref::<io::Error>());
        assert_eq!(source.and_then(io::Error::raw_os_error), Some(libc::ENOENT));
    }

    #[test]
    fn a_usage_error_points_at_the_help() {
        assert_eq!(
            Error::Usage("no command given".to_string()).report(),
            "no command given (node-agent help for usage)"
        );
    }
}
