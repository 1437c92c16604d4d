//! KubeMacPool's errors: [`Error`], what was being done and the cause that stopped it, as a
//! chain; and the certificates' errors it carries, which callers match on.
//!
//! The text of an [`Error`] is its outermost context only, as with every `source()` chain: a
//! log line prints it whole with [`error_context::report`].
//!
//! [`CertError`] and [`IntervalsError`] belong to `certs` (which re-exports them) but live here,
//! below it: `certs` returns an [`Error`], which carries them. `RangeError` and `ClaimError`
//! stay in `range` and `claims`, which return no [`Error`].

use std::time::Duration;

use net_types::GoDurationError;

use crate::range::RangeError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// What was being done when `source` happened; built by [`Error::wrap`], which
    /// [`Context`] calls on a `Result`.
    #[error("{context}")]
    Chain {
        context: String,
        #[source]
        source: Box<Error>,
    },
    /// The API server refused a request, or could not be reached.
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// An object that does not (de)serialise as JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The signal handlers, the listening sockets.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A variable of the Deployment that is not set.
    #[error(transparent)]
    Env(#[from] std::env::VarError),
    /// The webhook server's TLS configuration.
    #[error(transparent)]
    Tls(#[from] tokio_rustls::rustls::Error),
    #[error(transparent)]
    Cert(#[from] CertError),
    #[error(transparent)]
    Intervals(#[from] IntervalsError),
    #[error(transparent)]
    Range(#[from] RangeError),
    #[error(
        "invalid --tls-min-version {0:?}: expected VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13"
    )]
    TlsMinVersion(String),
    /// A watch meant to run as long as the process did not: `0` names it.
    #[error("the {0} ended")]
    WatchEnded(String),
}

impl Error {
    /// Wraps a cause with what was being done: `Error::wrap("reading Secret x", e)`, or
    /// `.context("reading Secret x")` on a `Result`.
    pub fn wrap(context: impl Into<String>, cause: impl Into<Error>) -> Error {
        Error::Chain {
            context: context.into(),
            source: Box::new(cause.into()),
        }
    }
}

// `.context(..)` and `.with_context(|| ..)` on every Result whose error converts into ours.
error_context::context_trait!(Error, Error::wrap);

/// What a key or a verification failed with: boxed, as several libraries' errors end up here.
type Cause = Box<dyn std::error::Error + Send + Sync>;

/// Why a certificate or a key cannot be made or used.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    #[error("no PEM certificate found")]
    NoCertificate,
    #[error("no PEM private key found")]
    NoKey,
    #[error("the certificate cannot be read")]
    BadCertificate,
    #[error("the private key does not belong to the certificate")]
    KeyMismatch,
    #[error("the private key cannot be used: {0}")]
    BadKey(#[source] Cause),
    #[error("generating a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("the certificate is not valid for {name} under the CA: {cause}")]
    NotTrusted {
        name: String,
        #[source]
        cause: Cause,
    },
    #[error("the CA cannot be a trust anchor: {0}")]
    NotAnAnchor(#[source] tokio_rustls::rustls::Error),
    #[error("TLS: {0}")]
    Tls(#[from] tokio_rustls::rustls::Error),
}

impl CertError {
    /// A key that cannot be made, read or converted: `.map_err(CertError::bad_key)`.
    pub fn bad_key(cause: impl Into<Cause>) -> CertError {
        CertError::BadKey(cause.into())
    }

    /// A certificate the API server would refuse for `name`, for whichever check failed:
    /// `.map_err(CertError::not_trusted(name))`.
    pub fn not_trusted<E: Into<Cause>>(name: &str) -> impl FnOnce(E) -> CertError + '_ {
        move |cause| CertError::NotTrusted {
            name: name.to_string(),
            cause: cause.into(),
        }
    }
}

/// Rotation intervals the cert manager refuses; each names its variables.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntervalsError {
    #[error("{name}: {source}")]
    Unparsable {
        name: &'static str,
        source: GoDurationError,
    },
    #[error("{0} must be longer than zero")]
    Zero(&'static str),
    #[error("{overlap} ({overlap_value:?}) must be shorter than {rotate} ({rotate_value:?})")]
    OverlapTooLong {
        overlap: &'static str,
        overlap_value: Duration,
        rotate: &'static str,
        rotate_value: Duration,
    },
    #[error("CERT_ROTATE_INTERVAL ({0:?}) must not be longer than CA_ROTATE_INTERVAL ({1:?})")]
    CertOutlivesCa(Duration, Duration),
}

#[cfg(test)]
mod tests;
