//! The webhook server's TLS configuration from the manager's `--tls-min-version` and
//! `--tls-cipher-suites` flags (Go's names for both), on the *ring* provider.
//!
//! rustls speaks TLS 1.2 and 1.3 only: `VersionTLS10` and `VersionTLS11` are accepted and serve
//! 1.2 and up. As in Go, the suite list applies to TLS 1.2 (1.3 suites are always on); the
//! rustls TLS 1.2 suites are the ECDHE ones with AES-GCM or ChaCha20-Poly1305, and any other
//! name (CBC, RSA key exchange, ...) is ignored with a warning. When no named suite is one of
//! them, the defaults stay. The serving keys made here are ECDSA (only the CA's is RSA), so a
//! list naming only `ECDHE_RSA` suites leaves TLS 1.2 clients nothing to agree on (TLS 1.3
//! still works).

use std::sync::Arc;

use tokio_rustls::rustls::crypto::ring::{self, cipher_suite as suite};
use tokio_rustls::rustls::version::{TLS12, TLS13};
use tokio_rustls::rustls::{ServerConfig, SupportedCipherSuite, SupportedProtocolVersion};
use tracing::warn;

use super::serving::ServingCerts;
use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsVersions {
    Tls12AndUp,
    Tls13Only,
}

impl TlsVersions {
    /// Go's `tls.VersionName`-style value of `--tls-min-version`; absent or empty means 1.2.
    pub fn from_flag(min: Option<&str>) -> Result<TlsVersions> {
        match min.map(str::trim).unwrap_or_default() {
            "" | "VersionTLS12" => Ok(TlsVersions::Tls12AndUp),
            v @ ("VersionTLS10" | "VersionTLS11") => {
                warn!(
                    min_tls_version = v,
                    "TLS below 1.2 is not offered; serving 1.2 and up"
                );
                Ok(TlsVersions::Tls12AndUp)
            }
            "VersionTLS13" => Ok(TlsVersions::Tls13Only),
            other => Err(Error::TlsMinVersion(other.to_string())),
        }
    }

    pub fn versions(self) -> &'static [&'static SupportedProtocolVersion] {
        static TLS12_AND_UP: &[&SupportedProtocolVersion] = &[&TLS13, &TLS12];
        static TLS13_ONLY: &[&SupportedProtocolVersion] = &[&TLS13];
        match self {
            TlsVersions::Tls12AndUp => TLS12_AND_UP,
            TlsVersions::Tls13Only => TLS13_ONLY,
        }
    }
}

/// The TLS 1.2 suite a name stands for, by its IANA name (as Go prints it), Go's older name for
/// the ChaCha20 ones, or its OpenSSL name.
fn tls12_suite(name: &str) -> Option<SupportedCipherSuite> {
    Some(match name {
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256" | "ECDHE-ECDSA-AES128-GCM-SHA256" => {
            suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
        }
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384" | "ECDHE-ECDSA-AES256-GCM-SHA384" => {
            suite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
        }
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"
        | "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305"
        | "ECDHE-ECDSA-CHACHA20-POLY1305" => suite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256" | "ECDHE-RSA-AES128-GCM-SHA256" => {
            suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
        }
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384" | "ECDHE-RSA-AES256-GCM-SHA384" => {
            suite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384
        }
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"
        | "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305"
        | "ECDHE-RSA-CHACHA20-POLY1305" => suite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        _ => return None,
    })
}

/// TLS 1.3 suite names: accepted and ignored, those suites are always on.
fn is_tls13_name(name: &str) -> bool {
    matches!(
        name,
        "TLS_AES_128_GCM_SHA256" | "TLS_AES_256_GCM_SHA384" | "TLS_CHACHA20_POLY1305_SHA256"
    )
}

/// The TLS 1.2 suites a comma-separated `--tls-cipher-suites` value names, in its order, and the
/// names that are none of them (TLS 1.3 names are neither).
pub fn tls12_cipher_suites(names: &str) -> (Vec<SupportedCipherSuite>, Vec<String>) {
    let mut chosen: Vec<SupportedCipherSuite> = Vec::new();
    let mut unknown = Vec::new();
    for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        match tls12_suite(name) {
            Some(s) if !chosen.iter().any(|c| c.suite() == s.suite()) => chosen.push(s),
            Some(_) => {}
            None if is_tls13_name(name) => {}
            None => unknown.push(name.to_string()),
        }
    }
    (chosen, unknown)
}

/// The server's TLS configuration: certificates from `certs` at each handshake, ALPN h2 and
/// http/1.1, the ring provider (never the process default).
pub fn server_config(
    certs: Arc<ServingCerts>,
    min_tls: Option<&str>,
    cipher_suites: Option<&str>,
) -> Result<ServerConfig> {
    let versions = TlsVersions::from_flag(min_tls)?;
    let mut provider = ring::default_provider();
    if let Some(names) = cipher_suites.filter(|n| !n.trim().is_empty()) {
        let (tls12, unknown) = tls12_cipher_suites(names);
        for name in &unknown {
            warn!(cipher_suite = %name, "not a TLS 1.2 cipher suite this server offers; ignored");
        }
        if tls12.is_empty() {
            warn!("no usable TLS 1.2 cipher suite in --tls-cipher-suites; keeping the defaults");
        } else {
            provider
                .cipher_suites
                .retain(|s| matches!(s, SupportedCipherSuite::Tls13(_)));
            provider.cipher_suites.extend(tls12);
        }
    }
    let mut config = ServerConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(versions.versions())?
        .with_no_client_auth()
        .with_cert_resolver(certs);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

#[cfg(test)]
mod tests;
