use super::*;
use std::collections::HashMap;

fn lookup(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| map.get(k).cloned()
}

#[test]
fn unset_variables_give_a_year_a_half_year_and_a_day() {
    let i = Intervals::from_lookup(lookup(&[])).expect("defaults");
    assert_eq!(i, Intervals::default());
    assert_eq!(i.ca_rotate, Duration::from_secs(365 * 24 * HOUR));
    assert_eq!(i.cert_rotate, Duration::from_secs(4380 * HOUR));
    assert_eq!(i.ca_overlap, Duration::from_secs(24 * HOUR));
    assert_eq!(i.cert_overlap, Duration::from_secs(24 * HOUR));
}

#[test]
fn the_operator_values_are_read() {
    let i = Intervals::from_lookup(lookup(&[
        (CA_ROTATE_INTERVAL, "2h"),
        (CA_OVERLAP_INTERVAL, "30m"),
        (CERT_ROTATE_INTERVAL, "1h0m0s"),
        (CERT_OVERLAP_INTERVAL, "15m"),
    ]))
    .expect("valid");
    assert_eq!(i.ca_rotate, Duration::from_secs(2 * HOUR));
    assert_eq!(i.ca_overlap, Duration::from_secs(1800));
    assert_eq!(i.cert_rotate, Duration::from_secs(HOUR));
    assert_eq!(i.cert_overlap, Duration::from_secs(900));
}

#[test]
fn an_empty_variable_keeps_its_default() {
    let i = Intervals::from_lookup(lookup(&[(CA_OVERLAP_INTERVAL, " ")])).expect("valid");
    assert_eq!(i.ca_overlap, Intervals::default().ca_overlap);
}

#[test]
fn an_unparsable_variable_is_named_in_the_error() {
    let e = Intervals::from_lookup(lookup(&[(CERT_ROTATE_INTERVAL, "six months")]))
        .expect_err("refused");
    assert!(e.to_string().starts_with(CERT_ROTATE_INTERVAL), "{e}");
}

#[test]
fn an_overlap_as_long_as_the_lifetime_is_refused() {
    let e = Intervals::from_lookup(lookup(&[
        (CERT_ROTATE_INTERVAL, "24h"),
        (CERT_OVERLAP_INTERVAL, "24h"),
    ]))
    .expect_err("refused");
    assert!(matches!(e, IntervalsError::OverlapTooLong { .. }), "{e}");
}

#[test]
fn a_cert_outliving_its_ca_is_refused() {
    let e = Intervals::from_lookup(lookup(&[
        (CA_ROTATE_INTERVAL, "48h"),
        (CERT_ROTATE_INTERVAL, "72h"),
    ]))
    .expect_err("refused");
    assert!(matches!(e, IntervalsError::CertOutlivesCa(..)), "{e}");
}

#[test]
fn a_zero_lifetime_is_refused() {
    let e = Intervals::from_lookup(lookup(&[(CA_ROTATE_INTERVAL, "0s")])).expect_err("zero");
    assert_eq!(e, IntervalsError::Zero(CA_ROTATE_INTERVAL));
}
