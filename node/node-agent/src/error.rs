//! The node agent's error: what was being done, with the error that stopped it as its source.
//! `main` prints the whole chain, outermost first, on one line
//! ("installing bridge: creating /opt/cni/bin/.bridge.cni-installer.tmp: No space left on
//! device (os error 28)") and exits non-zero.
//!
//! Files, system calls, API requests and netlink are the shared error's (`agent_runtime::Error`,
//! one variant here); the variants below are the node agent's own.

use std::io;
use std::process::ExitStatus;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// What the node agent shares with the nmstate handler. Its text is the shared error's own.
    #[error(transparent)]
    Runtime(#[from] agent_runtime::Error),

    /// The record or the node policy does not encode or decode; the context says which.
    #[error(transparent)]
    Json(#[from] serde_json::Error),

    /// A plugin did not answer CNI_COMMAND=VERSION as a plugin must.
    #[error(transparent)]
    Version(#[from] VersionError),

    /// A call to the container runtime over CRI (`call` names the method) failed.
    #[error("CRI {call} on {}", socket.display())]
    Cri {
        call: &'static str,
        socket: std::path::PathBuf,
        #[source]
        source: CriError,
    },

    /// The node's Open vSwitch database.
    #[error(transparent)]
    Ovsdb(#[from] ovsdb::Error),

    /// The metrics endpoint's certificate could not be made.
    #[error(transparent)]
    Tls(#[from] http_endpoint::TlsError),

    /// Work handed to a blocking thread did not finish there.
    #[error(transparent)]
    Task(#[from] tokio::task::JoinError),

    /// A fact that stops the command: a foreign file, a plugin not installed, ...
    #[error("{0}")]
    Message(String),

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
    pub fn msg(msg: impl Into<String>) -> Error {
        Error::Message(msg.into())
    }

    /// Says what was being done when `err` happened.
    pub fn wrap(context: impl Into<String>, err: impl Into<Error>) -> Error {
        Error::Chain {
            context: context.into(),
            source: Box::new(err.into()),
        }
    }

    /// The whole chain on one line, outermost first, as `main` prints it.
    pub fn report(&self) -> String {
        error_context::report(self)
    }
}

// `.context(..)` and `.with_context(|| ..)` on every Result whose error converts into ours.
error_context::context_trait!(Error, Error::wrap);

// The shared error's causes convert through it, so that `?` and `.context(..)` take them here.

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        agent_runtime::Error::from(e).into()
    }
}

impl From<kube::Error> for Error {
    fn from(e: kube::Error) -> Error {
        agent_runtime::Error::from(e).into()
    }
}

impl From<cni_common::Error> for Error {
    fn from(e: cni_common::Error) -> Error {
        agent_runtime::Error::from(e).into()
    }
}

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
    let head = format!("{:?}: {}", status.code(), status.message());
    match std::error::Error::source(status).map(error_context::report) {
        None => head,
        // The message is often the first cause's own text, not to be said twice.
        Some(causes) => match causes.strip_prefix(status.message()) {
            Some(rest) if rest.is_empty() || rest.starts_with(": ") => format!("{head}{rest}"),
            _ => format!("{head}: {causes}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Context;

    #[test]
    fn a_wrapped_error_reads_outermost_first_on_one_line() {
        let writing: std::result::Result<(), io::Error> =
            Err(io::Error::from_raw_os_error(libc::ENOSPC));
        let err = writing
            .context("writing x")
            .context("installing bridge")
            .expect_err("still an error");
        assert_eq!(err.to_string(), "installing bridge");
        assert_eq!(
            err.report(),
            "installing bridge: writing x: No space left on device (os error 28)"
        );
        assert_eq!(Error::msg("a\nb").report(), "a b");
    }

    #[test]
    fn a_usage_error_points_at_the_help() {
        assert_eq!(
            Error::Usage("no command given".to_string()).report(),
            "no command given (node-agent help for usage)"
        );
    }
}
