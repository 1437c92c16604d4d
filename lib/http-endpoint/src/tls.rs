//! TLS for the endpoint: the self-signed certificate of a process that has no other (the
//! operator, the node agent), made at start and never written anywhere. Scrapers do not verify
//! it (`insecureSkipVerify`, as for the kubelet's own metrics); what keeps `/metrics` private is
//! the token check, and TLS keeps that token off the wire in clear text.

use std::sync::Arc;

use tokio_rustls::rustls::crypto::ring;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::ServerConfig;

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("making a self-signed certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    #[error("TLS: {0}")]
    Tls(#[from] tokio_rustls::rustls::Error),
}

/// A server configuration with a fresh self-signed certificate, and that certificate (for a
/// client that pins it).
#[derive(Debug)]
pub struct SelfSigned {
    pub config: ServerConfig,
    pub certificate: CertificateDer<'static>,
}

/// A self-signed ECDSA P-256 certificate for `names` (DNS names or IP addresses).
pub fn self_signed(names: &[String]) -> Result<SelfSigned, TlsError> {
    let made = rcgen::generate_simple_self_signed(names.to_vec())?;
    let certificate = made.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.signing_key.serialize_der()));
    let config = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(vec![certificate.clone()], key)?;
    Ok(SelfSigned {
        config,
        certificate,
    })
}

/// The names a process's certificate carries: `localhost` and the host name (a pod's name, or
/// the node's on the host network), when the environment gives it.
pub fn local_names() -> Vec<String> {
    let mut names = vec!["localhost".to_string()];
    if let Ok(host) = std::env::var("HOSTNAME") {
        if !host.is_empty() && host != "localhost" {
            names.push(host);
        }
    }
    names
}
