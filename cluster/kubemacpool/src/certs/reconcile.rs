//! One pass of the cert manager: read the two Secrets and the webhook configuration, decide,
//! and make at most one change (a rotation is one change in three writes).
//!
//! A new CA goes into the caBundles first, then into its Secret, then the serving certificate
//! it signed: the API server trusts the new CA before anything presents a certificate from it,
//! and a second cert manager reading half way sees a consistent (if reordered) state rather
//! than a reason to start its own rotation.

use std::collections::BTreeMap;

use error_context::report;
use k8s_openapi::api::core::v1::Secret;
use tracing::info;

use super::cluster::{Cluster, Written};
use super::intervals::Intervals;
use super::issue::{verify_serving, Ca};
use super::objects::{self, bundle_pem, bundles, read_ca, serving_pem, with_bundle};
use super::plan::{ca_bundle, decide, Action, Known, Snapshot};
use super::serving::certified_key;
use super::x509::{self, UnixSeconds, Validity};
use super::{CertError, CA_SECRET, SERVING_SECRET, WEBHOOK_CONFIGURATION};
use crate::error::Result;

/// What the cert manager is told about its cluster.
pub struct Settings {
    pub namespace: String,
    pub intervals: Intervals,
    pub labels: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing to do until `next_check` (or until something changes).
    Settled { next_check: Option<UnixSeconds> },
    /// A change was made; the next pass checks it.
    Changed(Action),
    /// A write found the object changed since it was read: read again.
    Conflict,
    /// The webhook configuration does not exist (yet): nothing is written without it.
    NoWebhookConfiguration,
}

/// The serving certificate's validity when its Secret holds one the API server accepts under
/// `ca` at `now`, with the key that belongs to it.
fn check_serving(
    ca: &Ca,
    cert_pem: &[u8],
    key_pem: &[u8],
    namespace: &str,
    now: UnixSeconds,
) -> Result<Validity, CertError> {
    let key = certified_key(cert_pem, key_pem)?;
    let leaf = key.end_entity_cert()?;
    verify_serving(leaf, ca.cert_der(), namespace, now)?;
    x509::validity(leaf).ok_or(CertError::BadCertificate)
}

async fn put_secret<C: Cluster>(
    cluster: &C,
    previous: Option<&Secret>,
    next: &Secret,
) -> Result<Written> {
    match previous {
        Some(_) => cluster.replace_secret(next).await,
        None => cluster.create_secret(next).await,
    }
}

pub async fn reconcile<C: Cluster>(
    cluster: &C,
    settings: &Settings,
    now: UnixSeconds,
) -> Result<Outcome> {
    let Some(config) = cluster.webhook_configuration().await? else {
        return Ok(Outcome::NoWebhookConfiguration);
    };
    let ns = settings.namespace.as_str();
    let intervals = &settings.intervals;
    let ca_secret = cluster.secret(CA_SECRET).await?;
    let serving_secret = cluster.secret(SERVING_SECRET).await?;

    // Why a Secret was not usable, for the log line of the change it leads to.
    let mut problems = Vec::new();
    let ca = ca_secret.as_ref().and_then(|s| {
        read_ca(s)
            .inspect_err(|e| problems.push(format!("{CA_SECRET}: {}", report(e))))
            .ok()
    });
    let serving = match (&ca, serving_secret.as_ref().and_then(serving_pem)) {
        (Some(ca), Some((cert, key))) => check_serving(ca, cert, key, ns, now)
            .inspect_err(|e| problems.push(format!("{SERVING_SECRET}: {}", report(e))))
            .ok(),
        _ => None,
    };
    let snapshot = Snapshot {
        ca: ca.as_ref().map(|c| Known {
            der: c.cert_der().to_vec(),
            validity: c.validity(),
        }),
        serving,
        bundles: bundles(&config),
    };
    let plan = decide(&snapshot, intervals, now);
    if plan.action != Action::Nothing {
        info!(
            action = ?plan.action,
            reason = plan.reason,
            ?problems,
            "updating the webhook's certificates"
        );
    }

    match (plan.action, &ca, &snapshot.ca) {
        (Action::Nothing, _, _) => Ok(Outcome::Settled {
            next_check: plan.next_check,
        }),
        (Action::FixBundle, _, Some(current)) => {
            let wanted = ca_bundle(current, &snapshot.bundles, now);
            match with_bundle(&config, &bundle_pem(&wanted)) {
                Some(updated) => written(
                    cluster.replace_webhook_configuration(&updated).await?,
                    plan.action,
                ),
                None => Ok(Outcome::Changed(plan.action)),
            }
        }
        (Action::NewServingCert, Some(ca), _) => {
            let pair = ca.issue_serving(ns, now, intervals.cert_rotate)?;
            let next =
                objects::serving_secret(serving_secret.as_ref(), ns, &settings.labels, &pair);
            written(
                put_secret(cluster, serving_secret.as_ref(), &next).await?,
                plan.action,
            )
        }
        (Action::NewCaAndCert, _, _) => {
            let new_ca = Ca::generate(now, intervals.ca_rotate)?;
            let pair = new_ca.issue_serving(ns, now, intervals.cert_rotate)?;
            let new_known = Known {
                der: new_ca.cert_der().to_vec(),
                validity: new_ca.validity(),
            };
            let wanted = ca_bundle(&new_known, &snapshot.bundles, now);
            if let Some(updated) = with_bundle(&config, &bundle_pem(&wanted)) {
                if cluster.replace_webhook_configuration(&updated).await? == Written::Conflict {
                    return Ok(Outcome::Conflict);
                }
            }
            let next_ca = objects::ca_secret(ca_secret.as_ref(), ns, &settings.labels, &new_ca);
            if put_secret(cluster, ca_secret.as_ref(), &next_ca).await? == Written::Conflict {
                return Ok(Outcome::Conflict);
            }
            let next =
                objects::serving_secret(serving_secret.as_ref(), ns, &settings.labels, &pair);
            let result = put_secret(cluster, serving_secret.as_ref(), &next).await?;
            if result == Written::Done {
                info!(
                    configuration = WEBHOOK_CONFIGURATION,
                    ca_not_after = new_ca.validity().not_after,
                    cert_not_after = pair.validity.not_after,
                    "new CA and serving certificate written"
                );
            }
            written(result, plan.action)
        }
        // A plan needing a CA always comes with one; should it not, starting over is right.
        (action, _, _) => Ok(Outcome::Changed(action)),
    }
}

fn written(result: Written, action: Action) -> Result<Outcome> {
    Ok(match result {
        Written::Done => Outcome::Changed(action),
        Written::Conflict => Outcome::Conflict,
    })
}

#[cfg(test)]
mod tests;
