//! The operator's error: what was being done, and the cause that stopped it, as a chain.
//!
//! The text of an error is what ends up in the NetworkAddonsConfig's conditions and events, so
//! it reads on one line with its causes (`apply DaemonSet ns/a: <the server's message>`), and a
//! Kubernetes API error is described by the server's own message (which names the object and
//! the field), not by the client library's debug dump of the whole `Status`.

pub type Result<T> = std::result::Result<T, Error>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// What was being done when the inner error happened; built by [`Error::wrap`], which
    /// [`Context`] calls on a `Result`.
    #[error("{0}: {1}")]
    Chain(String, #[source] Box<Error>),
    /// The API server refused a request, or could not be reached.
    #[error("{}", describe(.0))]
    Kube(#[from] kube::Error),
    /// A spec, status or object that does not (de)serialise as JSON.
    #[error("{}", describe(.0))]
    Json(#[from] serde_json::Error),
    /// A CR or spec given to `render` that is not the YAML it should be. Only the command
    /// line reads YAML, so the parser's several-line excerpt of the input is kept.
    #[error("{0}")]
    YamlRead(#[from] serde_saphyr::Error),
    /// A manifest that cannot be written as YAML.
    #[error("{}", describe(.0))]
    YamlWrite(#[from] serde_saphyr::SerializeError),
    /// The leader election's Lease could not be read or written.
    #[error("{}", describe(.0))]
    Lease(#[from] kube_lease_manager::LeaseManagerError),
    /// Files, stdout, the metrics socket, the runtime.
    #[error("{}", describe(.0))]
    Io(#[from] std::io::Error),
    /// The metrics endpoint's self-signed certificate could not be made.
    #[error("{}", describe(.0))]
    Tls(#[from] http_endpoint::tls::TlsError),
    /// A NetworkAddonsConfig the operator refuses: it fails validation, or changes what cannot
    /// be changed in place.
    #[error("{0}")]
    InvalidConfig(String),
    /// A reconcile that reported `reason` (and `message`) as Degraded.
    #[error("{reason}: {message}")]
    NotApplied { reason: String, message: String },
    /// Anything else the operator finds wrong: an object without a namespace, a rollout that
    /// never finished deleting.
    #[error("{0}")]
    Other(String),
}

impl Error {
    /// Wraps a cause with what was being done: `Error::wrap("apply DaemonSet ns/a", e)`, or
    /// `.context("apply DaemonSet ns/a")` on a `Result`. The text reads `context: cause`, and the
    /// cause stays reachable as the error's source.
    pub fn wrap(context: impl Into<String>, cause: impl Into<Error>) -> Error {
        Error::Chain(context.into(), Box::new(cause.into()))
    }

    pub fn other(message: impl Into<String>) -> Error {
        Error::Other(message.into())
    }
}

// `.context(..)` and `.with_context(|| ..)` on every Result whose error converts into ours.
error_context::context_trait!(Error, Error::wrap);

/// One line describing `e`: for an error the API server answered, its message (`Service "x" is
/// invalid: spec.ports[0].protocol: Required value`), or its reason and code when it sent no
/// message; for any other error, its text and those of its causes, each once
/// ([`error_context::report`]).
pub fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    // Ours already carries its causes' text.
    if let Some(ours) = e.downcast_ref::<Error>() {
        return one_line(&ours.to_string());
    }
    if let Some(kube::Error::Api(status)) = e.downcast_ref::<kube::Error>() {
        return api_message(status);
    }
    error_context::report(e)
}

/// The server's message, else its reason and code.
fn api_message(status: &kube::core::Status) -> String {
    let message = one_line(&status.message);
    if !message.is_empty() {
        return message;
    }
    let reason = if status.reason.is_empty() {
        "no reason given"
    } else {
        status.reason.as_str()
    };
    format!("the API server answered {} ({reason})", status.code)
}

/// Runs of whitespace, newlines included, as one space.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests;
