use super::*;

const NOW: i64 = 1_800_000_000;
const DAY: u64 = 86_400;

fn days(n: u64) -> Duration {
    Duration::from_secs(n * DAY)
}

#[test]
fn a_ca_lives_its_rotate_interval() {
    let ca = Ca::generate(NOW, days(365)).expect("ca");
    assert_eq!(ca.validity().not_after, NOW + 365 * DAY as i64);
    assert!(ca.validity().not_before <= NOW);
}

#[test]
fn the_serving_cert_names_the_service() {
    let ca = Ca::generate(NOW, days(365)).expect("ca");
    let pair = ca.issue_serving("kmp-ns", NOW, days(180)).expect("cert");
    assert_eq!(pair.validity.not_after, NOW + 180 * DAY as i64);
    for host in [
        "kubemacpool-service.kmp-ns.svc",
        "kubemacpool-service.kmp-ns.svc.cluster.local",
        "kubemacpool-service.kmp-ns",
        "kubemacpool-service",
    ] {
        let ok = verify_serving_for(&pair.cert_der, ca.cert_der(), host, NOW);
        assert!(ok, "{host} is not named");
    }
    assert!(!verify_serving_for(
        &pair.cert_der,
        ca.cert_der(),
        "kubemacpool-service.other.svc",
        NOW
    ));
}

fn verify_serving_for(
    cert: &CertificateDer<'_>,
    ca: &CertificateDer<'_>,
    host: &str,
    now: i64,
) -> bool {
    let mut roots = RootCertStore::empty();
    roots.add(ca.clone().into_owned()).expect("anchor");
    let verifier = WebPkiServerVerifier::builder_with_provider(
        Arc::new(roots),
        Arc::new(ring::default_provider()),
    )
    .build()
    .expect("verifier");
    let name = ServerName::try_from(host.to_string()).expect("name");
    let at = UnixTime::since_unix_epoch(Duration::from_secs(now as u64));
    verifier
        .verify_server_cert(cert, &[], &name, &[], at)
        .is_ok()
}

#[test]
fn a_serving_cert_verifies_under_its_ca_only() {
    let ca = Ca::generate(NOW, days(365)).expect("ca");
    let other = Ca::generate(NOW, days(365)).expect("ca");
    let pair = ca.issue_serving("ns", NOW, days(180)).expect("cert");
    verify_serving(&pair.cert_der, ca.cert_der(), "ns", NOW).expect("trusted");
    assert!(verify_serving(&pair.cert_der, other.cert_der(), "ns", NOW).is_err());
}

#[test]
fn an_expired_serving_cert_does_not_verify() {
    let ca = Ca::generate(NOW, days(365)).expect("ca");
    let pair = ca.issue_serving("ns", NOW, days(1)).expect("cert");
    let later = NOW + 2 * DAY as i64;
    assert!(verify_serving(&pair.cert_der, ca.cert_der(), "ns", later).is_err());
}

#[test]
fn a_refused_serving_cert_names_the_host_and_says_why_once() {
    let ca = Ca::generate(NOW, days(365)).expect("ca");
    let pair = ca.issue_serving("ns", NOW, days(1)).expect("cert");
    let later = NOW + 2 * DAY as i64;
    let e = verify_serving(&pair.cert_der, ca.cert_der(), "ns", later).expect_err("expired");
    let text = e.to_string();
    assert!(
        text.starts_with(
            "the certificate is not valid for kubemacpool-service.ns.svc under the CA: "
        ),
        "{text}"
    );
    assert!(std::error::Error::source(&e).is_some());
    assert_eq!(error_context::report(&e), text);
}

#[test]
fn an_unreadable_key_says_why_once() {
    let ca = Ca::generate(NOW, days(365)).expect("ca");
    let key = "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n";
    let e = Ca::from_pem(ca.cert_pem().as_bytes(), key.as_bytes()).expect_err("unreadable");
    let text = e.to_string();
    assert!(
        text.starts_with("the private key cannot be used: "),
        "{text}"
    );
    assert!(std::error::Error::source(&e).is_some());
    assert_eq!(error_context::report(&e), text);
}

#[test]
fn a_stored_ca_signs_like_a_fresh_one() {
    let ca = Ca::generate(NOW, days(365)).expect("ca");
    let stored =
        Ca::from_pem(ca.cert_pem().as_bytes(), ca.key_pem().as_bytes()).expect("read back");
    assert_eq!(stored.validity(), ca.validity());
    let pair = stored.issue_serving("ns", NOW, days(10)).expect("cert");
    verify_serving(&pair.cert_der, ca.cert_der(), "ns", NOW).expect("trusted");
}

#[test]
fn a_ca_with_a_foreign_key_is_refused() {
    let ca = Ca::generate(NOW, days(365)).expect("ca");
    let other = Ca::generate(NOW, days(365)).expect("ca");
    let e =
        Ca::from_pem(ca.cert_pem().as_bytes(), other.key_pem().as_bytes()).expect_err("mismatch");
    assert!(matches!(e, CertError::KeyMismatch), "{e}");
}

#[test]
fn pem_wraps_at_64_columns_and_reads_back() {
    let ca = Ca::generate(NOW, days(1)).expect("ca");
    let text = ca.cert_pem();
    assert!(text.lines().all(|l| l.len() <= 64));
    assert_eq!(
        &first_certificate(text.as_bytes()).expect("pem"),
        ca.cert_der()
    );
}

#[test]
fn a_new_ca_key_is_rsa_the_only_kind_upstreams_cert_manager_reads() {
    use rsa::pkcs8::DecodePrivateKey;
    let ca = Ca::generate(NOW, days(365)).expect("ca");
    rsa::RsaPrivateKey::from_pkcs8_pem(&ca.key_pem()).expect("an RSA key");
}

#[test]
fn an_upstream_ca_with_a_pkcs1_rsa_key_is_read_and_signs() {
    use rsa::pkcs1::EncodeRsaPrivateKey;
    use rsa::pkcs8::EncodePrivateKey;
    let rsa_key = rsa::RsaPrivateKey::new(&mut rand_core::OsRng, 2048).expect("key");
    let pkcs1 = rsa_key
        .to_pkcs1_pem(rsa::pkcs1::LineEnding::LF)
        .expect("pkcs1");
    let signer =
        KeyPair::try_from(rsa_key.to_pkcs8_der().expect("der").as_bytes()).expect("signer");
    let mut params = ca_params();
    set_validity(&mut params, NOW - 60, NOW + 365 * DAY as i64);
    let cert_der = params.self_signed(&signer).expect("ca").der().clone();
    let ca = Ca::from_pem(pem("CERTIFICATE", &cert_der).as_bytes(), pkcs1.as_bytes())
        .expect("upstream's CA");
    let pair = ca.issue_serving("ns", NOW, days(10)).expect("cert");
    verify_serving(&pair.cert_der, &cert_der, "ns", NOW).expect("trusted");
}
