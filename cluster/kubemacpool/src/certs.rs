//! The webhook's certificates: a self-signed CA, a serving certificate for the Service it
//! signs, the caBundle the API server trusts, and their rotation.
//!
//! Two sides use this module:
//! - the cert manager ([`run_cert_manager`]) keeps the CA Secret, the serving Secret and the
//!   `caBundle` of every webhook in the `kubemacpool-mutator` configuration in agreement, and
//!   replaces the CA and the certificate before they end;
//! - the webhook server ([`ServingCerts`], [`follow_serving_secret`], [`server_config`]) serves
//!   whatever the serving Secret holds, picking up each new version without a restart.
//!
//! The files, by what they do:
//! - `intervals`: the rotation intervals (Go durations, read by `net_types::go_duration`) as the Deployment's variables give them;
//! - `x509`: the validity and public key of a certificate, read from its DER;
//! - `issue`: making a CA and a serving certificate, and checking one against the other;
//! - `plan`: from what the cluster holds and the time, what to do (pure);
//! - `objects`: the Secrets' and the webhook configuration's contents;
//! - `cluster`: reading and writing them with optimistic concurrency; `reconcile`: one pass;
//! - `cert_manager`: the loop, woken by watches and by the next rotation point;
//! - `serving`, `tls`: the webhook server's side.

mod cert_manager;
mod cluster;
mod intervals;
mod issue;
mod objects;
mod plan;
mod reconcile;
mod serving;
mod tls;
mod x509;

pub use crate::error::{CertError, IntervalsError};
pub use cert_manager::run_cert_manager;
pub use intervals::Intervals;
pub use issue::{service_dns_names, service_host, Ca, ServingPair};
pub use plan::{ca_bundle, decide, Action, Known, Plan, Snapshot};
pub use serving::{follow_serving_secret, ServingCerts};
pub use tls::{server_config, tls12_cipher_suites, TlsVersions};
pub use x509::{UnixSeconds, Validity};

/// The MutatingWebhookConfiguration whose webhooks get the caBundle (and the CA's name).
pub const WEBHOOK_CONFIGURATION: &str = "kubemacpool-mutator";
/// The Service the webhooks call; its serving Secret has the same name.
pub const SERVICE: &str = "kubemacpool-service";
pub const SERVING_SECRET: &str = SERVICE;
/// The CA's certificate and key; only the cert manager reads it.
pub const CA_SECRET: &str = "kubemacpool-mutator-ca";
