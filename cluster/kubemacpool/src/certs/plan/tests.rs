use super::*;
use std::time::Duration;

const H: i64 = 3600;
const T0: i64 = 1_800_000_000;

fn intervals() -> Intervals {
    Intervals {
        ca_rotate: Duration::from_secs(100 * H as u64),
        ca_overlap: Duration::from_secs(10 * H as u64),
        cert_rotate: Duration::from_secs(50 * H as u64),
        cert_overlap: Duration::from_secs(5 * H as u64),
    }
}

fn cert(tag: u8, from: i64, until: i64) -> Known {
    Known {
        der: vec![tag],
        validity: Validity {
            not_before: from,
            not_after: until,
        },
    }
}

/// A settled state at T0: CA 1 for 100 h, a 50 h certificate, two webhooks.
fn settled() -> Snapshot {
    let ca = cert(1, T0, T0 + 100 * H);
    Snapshot {
        ca: Some(ca.clone()),
        serving: Some(Validity {
            not_before: T0,
            not_after: T0 + 50 * H,
        }),
        bundles: vec![vec![ca.clone()], vec![ca]],
    }
}

#[test]
fn a_fresh_namespace_gets_a_ca_and_a_cert() {
    let plan = decide(&Snapshot::default(), &intervals(), T0);
    assert_eq!(plan.action, Action::NewCaAndCert);
}

#[test]
fn a_settled_state_waits_for_the_first_rotation_point() {
    let plan = decide(&settled(), &intervals(), T0 + H);
    assert_eq!(plan.action, Action::Nothing);
    assert_eq!(plan.next_check, Some(T0 + 45 * H));
}

#[test]
fn a_cert_past_its_rotation_point_is_renewed() {
    assert_eq!(
        decide(&settled(), &intervals(), T0 + 45 * H - 1).action,
        Action::Nothing
    );
    assert_eq!(
        decide(&settled(), &intervals(), T0 + 45 * H).action,
        Action::NewServingCert
    );
}

#[test]
fn a_ca_past_its_rotation_point_is_replaced_with_its_cert() {
    let mut s = settled();
    s.serving = Some(Validity {
        not_before: T0 + 80 * H,
        not_after: T0 + 130 * H,
    });
    assert_eq!(
        decide(&s, &intervals(), T0 + 90 * H - 1).action,
        Action::Nothing
    );
    assert_eq!(
        decide(&s, &intervals(), T0 + 90 * H).action,
        Action::NewCaAndCert
    );
}

#[test]
fn a_deleted_serving_secret_is_made_again() {
    let mut s = settled();
    s.serving = None;
    assert_eq!(
        decide(&s, &intervals(), T0 + H).action,
        Action::NewCaAndCert
    );
}

#[test]
fn a_blanked_ca_bundle_renews_the_ca_and_the_cert() {
    let mut s = settled();
    s.bundles[1].clear();
    assert_eq!(
        decide(&s, &intervals(), T0 + H).action,
        Action::NewCaAndCert
    );
}

#[test]
fn the_ca_bundle_keeps_the_old_ca_during_the_overlap() {
    let old = cert(1, T0, T0 + 100 * H);
    let new = cert(2, T0 + 90 * H, T0 + 190 * H);
    let current = vec![new.clone(), old.clone()];
    assert_eq!(
        ca_bundle(&new, std::slice::from_ref(&current), T0 + 95 * H),
        current
    );
    assert_eq!(ca_bundle(&new, &[current], T0 + 100 * H), vec![new]);
}

#[test]
fn an_old_ca_leaves_the_bundle_when_it_expires() {
    let old = cert(1, T0 - 90 * H, T0 + 10 * H);
    let ca = cert(2, T0, T0 + 100 * H);
    let mut s = settled();
    s.ca = Some(ca.clone());
    s.bundles = vec![vec![ca.clone(), old.clone()]; 2];
    let plan = decide(&s, &intervals(), T0 + H);
    assert_eq!(plan.action, Action::Nothing);
    assert_eq!(plan.next_check, Some(T0 + 10 * H));
    let plan = decide(&s, &intervals(), T0 + 10 * H);
    assert_eq!(plan.action, Action::FixBundle);
    assert_eq!(ca_bundle(&ca, &s.bundles, T0 + 10 * H), vec![ca]);
}

#[test]
fn webhooks_with_different_bundles_are_made_to_agree() {
    let old = cert(1, T0 - 50 * H, T0 + 50 * H);
    let ca = cert(2, T0, T0 + 100 * H);
    let mut s = settled();
    s.ca = Some(ca.clone());
    s.bundles = vec![vec![ca.clone(), old.clone()], vec![ca.clone()]];
    assert_eq!(decide(&s, &intervals(), T0 + H).action, Action::FixBundle);
    assert_eq!(ca_bundle(&ca, &s.bundles, T0 + H), vec![ca, old]);
}

#[test]
fn the_ca_goes_first_in_the_bundle() {
    let old = cert(1, T0 - 50 * H, T0 + 50 * H);
    let ca = cert(2, T0, T0 + 100 * H);
    let mut s = settled();
    s.ca = Some(ca.clone());
    s.bundles = vec![vec![old.clone(), ca.clone()]];
    assert_eq!(decide(&s, &intervals(), T0 + H).action, Action::FixBundle);
    assert_eq!(ca_bundle(&ca, &s.bundles, T0 + H), vec![ca, old]);
}

#[test]
fn the_bundle_is_capped_keeping_the_newest() {
    let ca = cert(9, T0, T0 + 100 * H);
    let olds: Vec<Known> = (1..=7)
        .map(|i| cert(i, T0 - i64::from(i) * H, T0 + 50 * H))
        .collect();
    let bundle = ca_bundle(&ca, std::slice::from_ref(&olds), T0);
    assert_eq!(bundle.len(), BUNDLE_LIMIT);
    assert_eq!(bundle[0], ca);
    assert_eq!(bundle[1..], olds[..BUNDLE_LIMIT - 1]);
}

#[test]
fn a_configuration_without_webhooks_needs_only_the_secrets() {
    let mut s = settled();
    s.bundles.clear();
    assert_eq!(decide(&s, &intervals(), T0 + H).action, Action::Nothing);
}
