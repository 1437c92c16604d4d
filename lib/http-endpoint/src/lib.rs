//! The HTTPS endpoint of a long-running process, for probes and Prometheus: GET and HEAD of a
//! few fixed paths, each answered with a text body. `/metrics` is served only to a caller whose
//! bearer token the API server authenticates (TokenReview) and allows to `get` the
//! non-resource URL `/metrics` (SubjectAccessReview), as the API server's and the kubelet's own
//! metrics are; the probes' paths to anyone. The operator (`/healthz`, `/readyz`, `/metrics`),
//! the node agent and KubeMacPool's manager (`/metrics`) serve theirs with it.
//!
//! - `serve`: the server, its limits and timeouts;
//! - `review`: the token's TokenReview and SubjectAccessReview; `cache`: their verdicts, kept
//!   briefly, keyed by the token's digest;
//! - `tls`: the self-signed certificate of a process that has no other;
//! - `client`: a pinning HTTPS client, for tests of what a process serves.

use std::net::SocketAddr;

use http::StatusCode;

pub mod cache;
pub mod client;
#[cfg(test)]
mod fake_api;
pub mod review;
pub mod serve;
pub mod tls;

pub use review::{Authorizer, METRICS_PATH};
pub use serve::serve;
pub use tls::{self_signed, SelfSigned, TlsError};
pub use tokio_rustls::rustls::ServerConfig;

/// Prometheus' text exposition format.
pub const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";
const PLAIN_TEXT: &str = "text/plain; charset=utf-8";

/// The answer to one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: StatusCode,
    pub body: String,
    pub content_type: &'static str,
}

impl Reply {
    pub fn text(status: StatusCode, body: impl Into<String>) -> Reply {
        Reply {
            status,
            body: body.into(),
            content_type: PLAIN_TEXT,
        }
    }

    /// 200 with metrics in Prometheus' text format.
    pub fn metrics(body: String) -> Reply {
        Reply {
            status: StatusCode::OK,
            body,
            content_type: PROMETHEUS_TEXT,
        }
    }

    pub fn not_found() -> Reply {
        Reply::text(StatusCode::NOT_FOUND, "not found\n")
    }
}

/// `:8080` (every interface), `127.0.0.1:8080` or `[::1]:8080` as a socket address.
pub fn parse_address(s: &str) -> Result<SocketAddr, InvalidAddress> {
    let full = match s.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => s.to_string(),
    };
    // The parser's own error ("invalid socket address syntax") says less than the example.
    full.parse().map_err(|_| InvalidAddress(s.to_string()))
}

/// An address option that is neither `:PORT` nor `IP:PORT`.
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not an address (e.g. :8080 or 127.0.0.1:8080)")]
pub struct InvalidAddress(String);

/// The names of the samples in Prometheus text `text` that no `# TYPE` line declared before them:
/// none in a well-formed exposition.
pub fn undeclared_samples(text: &str) -> Vec<String> {
    let mut declared = Vec::new();
    let mut undeclared = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            declared.push(rest.split_whitespace().next().unwrap_or_default());
        } else if !line.starts_with('#') {
            let name = line.split(['{', ' ']).next().unwrap_or_default();
            if !declared.contains(&name) {
                undeclared.push(name.to_string());
            }
        }
    }
    undeclared
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_must_follow_their_type() {
        assert!(undeclared_samples("# TYPE up gauge\nup 1\nup{a=\"b\"} 1\n").is_empty());
        assert_eq!(undeclared_samples("up 1\n# TYPE up gauge\n"), ["up"]);
    }

    #[test]
    fn addresses() {
        assert_eq!(
            parse_address(":8080").ok(),
            "0.0.0.0:8080".parse::<SocketAddr>().ok()
        );
        assert!(parse_address("127.0.0.1:9").is_ok());
        assert!(parse_address("nowhere").is_err());
    }

    #[test]
    fn a_wrong_address_is_refused_with_examples() {
        let e = parse_address("nowhere").expect_err("no port");
        assert_eq!(
            e.to_string(),
            r#""nowhere" is not an address (e.g. :8080 or 127.0.0.1:8080)"#
        );
    }
}
