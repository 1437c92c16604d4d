use super::*;
use rcgen::{date_time_ymd, CertificateParams, KeyPair};

fn cert_between(from: (i32, u8, u8), to: (i32, u8, u8)) -> Vec<u8> {
    cert_with_key(from, to, &KeyPair::generate().expect("key"))
}

fn cert_with_key(from: (i32, u8, u8), to: (i32, u8, u8), key: &KeyPair) -> Vec<u8> {
    let mut params = CertificateParams::new(vec!["x.test".to_string()]).expect("params");
    params.not_before = date_time_ymd(from.0, from.1, from.2);
    params.not_after = date_time_ymd(to.0, to.1, to.2);
    params.self_signed(key).expect("cert").der().to_vec()
}

#[test]
fn the_validity_of_a_certificate_is_read() {
    let der = cert_between((2024, 2, 29), (2025, 3, 1));
    let v = validity(&der).expect("validity");
    assert_eq!(v.not_before, 1_709_164_800);
    assert_eq!(v.not_after, 1_740_787_200);
}

#[test]
fn a_date_after_2049_is_read_from_its_generalized_time() {
    let der = cert_between((2020, 1, 1), (2051, 6, 15));
    let v = validity(&der).expect("validity");
    assert_eq!(v.not_before, 1_577_836_800);
    assert_eq!(v.not_after, 2_570_400_000);
}

#[test]
fn a_utc_time_of_the_last_century_is_read() {
    assert_eq!(time(UTC_TIME, b"991231235959Z"), Some(946_684_799));
    assert_eq!(time(UTC_TIME, b"700101000000Z"), Some(0));
}

#[test]
fn the_public_key_of_a_certificate_is_read() {
    use rcgen::PublicKeyData;
    let key = KeyPair::generate().expect("key");
    let der = cert_with_key((2024, 1, 1), (2025, 1, 1), &key);
    let other = KeyPair::generate().expect("key");
    assert_eq!(
        public_key_info(&der),
        Some(&key.subject_public_key_info()[..])
    );
    assert_ne!(
        public_key_info(&der),
        Some(&other.subject_public_key_info()[..])
    );
}

#[test]
fn garbage_is_not_a_certificate() {
    assert_eq!(validity(b""), None);
    assert_eq!(validity(b"\x30\x03\x02\x01\x00"), None);
    assert_eq!(validity(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]), None);
    let der = cert_between((2024, 1, 1), (2025, 1, 1));
    assert_eq!(validity(&der[..der.len() / 3]), None);
}
