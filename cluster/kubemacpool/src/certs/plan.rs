//! From what the cluster holds and the time, what the cert manager does next. Pure: the
//! snapshot is parsed and checked beforehand, so every rule here is testable with plain data.
//!
//! The rules follow what a compatible cert manager is observed to do:
//! - a CA is replaced `ca_overlap` before it ends, the serving certificate `cert_overlap` before
//!   it ends;
//! - any broken link (no usable CA, a webhook whose caBundle lacks the CA, a serving Secret that
//!   is missing or not valid under the CA) replaces both the CA and the certificate, so deleting
//!   the serving Secret or blanking a caBundle renews both;
//! - a replaced CA stays in the caBundle (after the new one) until it expires, so a webhook
//!   server still presenting a certificate from the old CA keeps being trusted meanwhile.

use super::intervals::Intervals;
use super::x509::{UnixSeconds, Validity};

/// At most this many certificates in a caBundle: the current CA and the newest predecessors
/// still valid. Only an unusual run of forced rotations comes near it.
pub const BUNDLE_LIMIT: usize = 5;

/// A certificate as read: its DER and when it is valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Known {
    pub der: Vec<u8>,
    pub validity: Validity,
}

/// What the cluster holds, already checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// The CA, when its Secret holds a readable certificate and the key that belongs to it.
    pub ca: Option<Known>,
    /// The serving certificate's validity, when its Secret holds a certificate with the key that
    /// belongs to it, valid now under the CA for the Service's name.
    pub serving: Option<Validity>,
    /// The caBundle of each webhook of the configuration, as the readable certificates in it.
    pub bundles: Vec<Vec<Known>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Nothing,
    /// A new serving certificate from the current CA.
    NewServingCert,
    /// A new CA put first in every caBundle, then a serving certificate from it.
    NewCaAndCert,
    /// Every caBundle rewritten to [`ca_bundle`] (order, expired CAs, disagreeing webhooks).
    FixBundle,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub action: Action,
    pub reason: &'static str,
    /// When nothing is to be done: the next instant something will be (a rotation point or an
    /// old CA's expiry).
    pub next_check: Option<UnixSeconds>,
}

fn seconds(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX / 2)
}

pub fn ca_rotation_point(ca: &Validity, intervals: &Intervals) -> UnixSeconds {
    ca.not_after - seconds(intervals.ca_overlap)
}

pub fn cert_rotation_point(cert: &Validity, intervals: &Intervals) -> UnixSeconds {
    cert.not_after - seconds(intervals.cert_overlap)
}

fn act(action: Action, reason: &'static str) -> Plan {
    Plan {
        action,
        reason,
        next_check: None,
    }
}

pub fn decide(snapshot: &Snapshot, intervals: &Intervals, now: UnixSeconds) -> Plan {
    let Some(ca) = &snapshot.ca else {
        return act(Action::NewCaAndCert, "there is no usable CA");
    };
    let ca_due = ca_rotation_point(&ca.validity, intervals);
    if now >= ca_due {
        return act(Action::NewCaAndCert, "the CA reached its rotation point");
    }
    if snapshot
        .bundles
        .iter()
        .any(|b| !b.iter().any(|k| k.der == ca.der))
    {
        return act(Action::NewCaAndCert, "a webhook's caBundle lacks the CA");
    }
    let Some(serving) = &snapshot.serving else {
        return act(
            Action::NewCaAndCert,
            "the serving Secret holds no valid certificate from the CA",
        );
    };
    let cert_due = cert_rotation_point(serving, intervals);
    if now >= cert_due {
        return act(
            Action::NewServingCert,
            "the serving certificate reached its rotation point",
        );
    }
    let wanted = ca_bundle(ca, &snapshot.bundles, now);
    if snapshot.bundles.iter().any(|b| *b != wanted) {
        return act(
            Action::FixBundle,
            "a caBundle differs from the CAs in force",
        );
    }
    let old_ca_expiry = wanted.iter().skip(1).map(|k| k.validity.not_after).min();
    let next = [Some(ca_due), Some(cert_due), old_ca_expiry]
        .into_iter()
        .flatten()
        .min();
    Plan {
        action: Action::Nothing,
        reason: "the CA, the serving certificate and every caBundle agree",
        next_check: next,
    }
}

/// The caBundle to serve: `ca` first, then every other certificate found in the current
/// bundles that has not expired (newest first, no duplicates), at most [`BUNDLE_LIMIT`] in all.
pub fn ca_bundle(ca: &Known, bundles: &[Vec<Known>], now: UnixSeconds) -> Vec<Known> {
    let mut older: Vec<&Known> = Vec::new();
    for k in bundles.iter().flatten() {
        if k.der != ca.der && k.validity.not_after > now && !older.iter().any(|o| o.der == k.der) {
            older.push(k);
        }
    }
    older.sort_by(|a, b| {
        (b.validity.not_before, b.validity.not_after, &b.der).cmp(&(
            a.validity.not_before,
            a.validity.not_after,
            &a.der,
        ))
    });
    std::iter::once(ca)
        .chain(older)
        .take(BUNDLE_LIMIT)
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
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
}
