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
