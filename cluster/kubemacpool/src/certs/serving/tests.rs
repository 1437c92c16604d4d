use super::*;
use crate::certs::issue::Ca;
use std::time::Duration;

const NOW: i64 = 1_800_000_000;

fn pair(ca: &Ca) -> crate::certs::ServingPair {
    ca.issue_serving("ns", NOW, Duration::from_secs(3600))
        .expect("cert")
}

#[test]
fn nothing_is_served_before_a_certificate_is_set() {
    assert!(!ServingCerts::default().is_loaded());
}

#[test]
fn a_certificate_and_its_key_are_served() {
    let ca = Ca::generate(NOW, Duration::from_secs(7200)).expect("ca");
    let p = pair(&ca);
    let certs = ServingCerts::new();
    certs
        .set_from_pem(p.cert_pem.as_bytes(), p.key_pem.as_bytes())
        .expect("loaded");
    assert!(certs.is_loaded());
    let served = certs.current().expect("served");
    assert_eq!(served.cert, vec![p.cert_der]);
}

#[test]
fn a_key_of_another_certificate_is_refused_and_the_old_one_kept() {
    let ca = Ca::generate(NOW, Duration::from_secs(7200)).expect("ca");
    let (a, b) = (pair(&ca), pair(&ca));
    let certs = ServingCerts::new();
    certs
        .set_from_pem(a.cert_pem.as_bytes(), a.key_pem.as_bytes())
        .expect("loaded");
    let e = certs
        .set_from_pem(a.cert_pem.as_bytes(), b.key_pem.as_bytes())
        .expect_err("mismatch");
    assert!(matches!(e, CertError::KeyMismatch), "{e}");
    assert_eq!(certs.current().expect("kept").cert, vec![a.cert_der]);
}

#[test]
fn only_the_first_certificate_of_tls_crt_is_presented() {
    let ca = Ca::generate(NOW, Duration::from_secs(7200)).expect("ca");
    let (new, old) = (pair(&ca), pair(&ca));
    let both = format!("{}{}", new.cert_pem, old.cert_pem);
    let certs = ServingCerts::new();
    certs
        .set_from_pem(both.as_bytes(), new.key_pem.as_bytes())
        .expect("loaded");
    assert_eq!(certs.current().expect("served").cert, vec![new.cert_der]);
}

#[test]
fn an_unchanged_secret_is_not_loaded_twice() {
    let ca = Ca::generate(NOW, Duration::from_secs(7200)).expect("ca");
    let p = pair(&ca);
    let secret = crate::certs::objects::serving_secret(None, "ns", &Default::default(), &p);
    let certs = ServingCerts::new();
    let mut last = None;
    load(&certs, &secret, &mut last);
    let first = certs.current().expect("served");
    load(&certs, &secret, &mut last);
    assert!(Arc::ptr_eq(&first, &certs.current().expect("served")));
}
