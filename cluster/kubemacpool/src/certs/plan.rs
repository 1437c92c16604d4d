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
mod tests;
