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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsVersions {
    Tls12AndUp,
    Tls13Only,
}

impl TlsVersions {
    /// Go's `tls.VersionName`-style value of `--tls-min-version`; absent or empty means 1.2.
    pub fn from_flag(min: Option<&str>) -> anyhow::Result<TlsVersions> {
        match min.map(str::trim).unwrap_or_default() {
            "" | "VersionTLS12" => Ok(TlsVersions::Tls12AndUp),
            v @ ("VersionTLS10" | "VersionTLS11") => {
                warn!(min_tls_version = v, "TLS below 1.2 is not offered; serving 1.2 and up");
                Ok(TlsVersions::Tls12AndUp)
            }
            "VersionTLS13" => Ok(TlsVersions::Tls13Only),
            other => anyhow::bail!(
                "invalid --tls-min-version {other:?}: expected VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13"
            ),
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
) -> anyhow::Result<ServerConfig> {
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
mod tests {
    use super::*;
    use crate::certs::issue::Ca;
    use std::time::{Duration, SystemTime, UNIX_EPOCH};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};
    use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
    use tokio_rustls::rustls::{ClientConfig, RootCertStore};
    use tokio_rustls::{TlsAcceptor, TlsConnector};

    const NS: &str = "kmp-test";

    fn now() -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock")
            .as_secs() as i64
    }

    /// A CA and a ServingCerts loaded with a certificate from it.
    fn serving() -> (Ca, Arc<ServingCerts>) {
        let ca = Ca::generate(now(), Duration::from_secs(86_400)).expect("ca");
        let certs = Arc::new(ServingCerts::new());
        load(&certs, &ca);
        (ca, certs)
    }

    fn load(certs: &ServingCerts, ca: &Ca) {
        let pair = ca
            .issue_serving(NS, now(), Duration::from_secs(3_600))
            .expect("cert");
        certs
            .set_from_pem(pair.cert_pem.as_bytes(), pair.key_pem.as_bytes())
            .expect("loaded");
    }

    /// One connection: the client trusts only `ca` and offers `versions`; returns the ALPN
    /// protocol agreed, or the client's error.
    async fn handshake(
        server: Arc<ServerConfig>,
        ca: &CertificateDer<'static>,
        versions: &[&'static SupportedProtocolVersion],
    ) -> std::io::Result<Option<Vec<u8>>> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let acceptor = TlsAcceptor::from(server);
        let task = tokio::spawn(async move {
            let (tcp, _) = listener.accept().await?;
            let mut tls = acceptor.accept(tcp).await?;
            let mut ping = [0u8; 4];
            tls.read_exact(&mut ping).await?;
            tls.write_all(b"pong").await?;
            tls.shutdown().await
        });
        let mut roots = RootCertStore::empty();
        roots.add(ca.clone()).expect("anchor");
        let mut client = ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
            .with_protocol_versions(versions)
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        client.alpn_protocols = vec![b"h2".to_vec()];
        let name = ServerName::try_from(format!("kubemacpool-service.{NS}.svc")).expect("name");
        let result = async {
            let tcp = TcpStream::connect(addr).await?;
            let mut tls = TlsConnector::from(Arc::new(client))
                .connect(name, tcp)
                .await?;
            tls.write_all(b"ping").await?;
            let mut pong = [0u8; 4];
            tls.read_exact(&mut pong).await?;
            assert_eq!(&pong, b"pong");
            Ok(tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec))
        }
        .await;
        task.abort();
        result
    }

    #[tokio::test]
    async fn a_client_trusting_the_ca_completes_a_handshake_for_the_service_name() {
        let (ca, certs) = serving();
        let config = Arc::new(server_config(certs, None, None).expect("config"));
        let alpn = handshake(config, ca.cert_der(), &[&TLS13, &TLS12])
            .await
            .expect("handshake");
        assert_eq!(alpn.as_deref(), Some(&b"h2"[..]));
    }

    #[tokio::test]
    async fn a_tls12_client_is_served_with_a_named_suite() {
        let (ca, certs) = serving();
        let suites = Some("TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_RSA_WITH_AES_128_CBC_SHA");
        let config = Arc::new(server_config(certs, Some("VersionTLS12"), suites).expect("config"));
        handshake(config, ca.cert_der(), &[&TLS12])
            .await
            .expect("handshake");
    }

    #[tokio::test]
    async fn a_rotated_certificate_is_served_without_a_restart() {
        let (old_ca, certs) = serving();
        let config = Arc::new(server_config(certs.clone(), None, None).expect("config"));
        let new_ca = Ca::generate(now(), Duration::from_secs(86_400)).expect("ca");
        load(&certs, &new_ca);
        handshake(config.clone(), new_ca.cert_der(), &[&TLS13])
            .await
            .expect("the new certificate is served");
        assert!(handshake(config, old_ca.cert_der(), &[&TLS13])
            .await
            .is_err());
    }

    #[tokio::test]
    async fn tls13_only_refuses_a_tls12_client() {
        let (ca, certs) = serving();
        let config = Arc::new(server_config(certs, Some("VersionTLS13"), None).expect("config"));
        assert!(handshake(config.clone(), ca.cert_der(), &[&TLS12])
            .await
            .is_err());
        handshake(config, ca.cert_der(), &[&TLS13])
            .await
            .expect("TLS 1.3 handshake");
    }

    #[tokio::test]
    async fn no_certificate_means_no_handshake() {
        let (ca, _) = serving();
        let empty = Arc::new(ServingCerts::new());
        let config = Arc::new(server_config(empty, None, None).expect("config"));
        assert!(handshake(config, ca.cert_der(), &[&TLS13]).await.is_err());
    }

    #[test]
    fn the_min_version_flag_takes_go_names() {
        assert_eq!(
            TlsVersions::from_flag(None).expect("v"),
            TlsVersions::Tls12AndUp
        );
        assert_eq!(
            TlsVersions::from_flag(Some("VersionTLS11")).expect("v"),
            TlsVersions::Tls12AndUp
        );
        assert_eq!(
            TlsVersions::from_flag(Some("VersionTLS13")).expect("v"),
            TlsVersions::Tls13Only
        );
        assert!(TlsVersions::from_flag(Some("TLS1.3")).is_err());
    }

    #[test]
    fn cipher_suite_names_map_to_tls12_suites_and_unknown_ones_are_reported() {
        let (chosen, unknown) = tls12_cipher_suites(
            "ECDHE-RSA-AES256-GCM-SHA384, TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305,\
             TLS_AES_128_GCM_SHA256,TLS_RSA_WITH_AES_128_CBC_SHA,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        );
        assert_eq!(
            chosen.iter().map(|s| s.suite()).collect::<Vec<_>>(),
            vec![
                suite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384.suite(),
                suite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256.suite(),
            ]
        );
        assert_eq!(unknown, vec!["TLS_RSA_WITH_AES_128_CBC_SHA".to_string()]);
    }

    #[test]
    fn named_suites_replace_the_tls12_defaults_only() {
        let certs = Arc::new(ServingCerts::new());
        let config = server_config(certs, None, Some("ECDHE-ECDSA-AES128-GCM-SHA256")).expect("c");
        let suites = &config.crypto_provider().cipher_suites;
        let tls12: Vec<_> = suites
            .iter()
            .filter(|s| matches!(s, SupportedCipherSuite::Tls12(_)))
            .map(|s| s.suite())
            .collect();
        assert_eq!(
            tls12,
            vec![suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256.suite()]
        );
        assert_eq!(suites.len() - tls12.len(), 3);
    }

    #[test]
    fn unusable_suite_names_keep_the_defaults() {
        let certs = Arc::new(ServingCerts::new());
        let config = server_config(certs, None, Some("TLS_RSA_WITH_RC4_128_SHA")).expect("c");
        assert_eq!(
            config.crypto_provider().cipher_suites.len(),
            ring::default_provider().cipher_suites.len()
        );
    }
}
