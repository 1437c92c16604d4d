//! The webhook server's certificate: whatever the serving Secret holds, swapped in as each new
//! version arrives so rotation needs no restart.

use std::sync::{Arc, RwLock};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Secret;
use kube::runtime::watcher::{self, watcher, Event};
use kube::runtime::WatchStreamExt;
use kube::{Api, Client};
use tokio_rustls::rustls::crypto::ring;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::PrivateKeyDer;
use tokio_rustls::rustls::server::{ClientHello, ResolvesServerCert};
use tokio_rustls::rustls::sign::CertifiedKey;
use tracing::{info, warn};

use super::issue::first_certificate;
use super::objects::serving_pem;
use super::{CertError, SERVING_SECRET};
use crate::error::{Error, Result};

/// The certificate the webhook server presents; shared with the TLS config as its resolver.
#[derive(Default)]
pub struct ServingCerts {
    current: RwLock<Option<Arc<CertifiedKey>>>,
}

impl std::fmt::Debug for ServingCerts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServingCerts")
            .field("loaded", &self.is_loaded())
            .finish()
    }
}

/// A certificate and the key that belongs to it. Only the first certificate of the PEM is
/// kept: the chain ends at the CA the API server already has, and further certificates in a
/// `tls.crt` (a former certificate kept during an overlap) would be no use to a client.
pub(crate) fn certified_key(cert_pem: &[u8], key_pem: &[u8]) -> Result<CertifiedKey, CertError> {
    let leaf = first_certificate(cert_pem)?;
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|_| CertError::NoKey)?;
    CertifiedKey::from_der(vec![leaf], key, &ring::default_provider()).map_err(|e| match e {
        tokio_rustls::rustls::Error::InconsistentKeys(_) => CertError::KeyMismatch,
        other => CertError::bad_key(other),
    })
}

impl ServingCerts {
    pub fn new() -> ServingCerts {
        ServingCerts::default()
    }

    /// Serves this certificate from the next handshake on. On error the one served so far stays.
    pub fn set_from_pem(&self, cert_pem: &[u8], key_pem: &[u8]) -> Result<(), CertError> {
        let key = Arc::new(certified_key(cert_pem, key_pem)?);
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Some(key);
        Ok(())
    }

    pub fn is_loaded(&self) -> bool {
        self.current().is_some()
    }

    pub fn current(&self) -> Option<Arc<CertifiedKey>> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl ResolvesServerCert for ServingCerts {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current()
    }
}

/// Loads a version of the serving Secret unless its certificate is the one already served.
fn load(certs: &ServingCerts, secret: &Secret, last: &mut Option<Vec<u8>>) {
    let Some((cert, key)) = serving_pem(secret) else {
        warn!(
            secret = SERVING_SECRET,
            "the serving Secret has no tls.crt and tls.key yet"
        );
        return;
    };
    if last.as_deref() == Some(cert) {
        return;
    }
    match certs.set_from_pem(cert, key) {
        Ok(()) => {
            info!(
                secret = SERVING_SECRET,
                "serving the certificate from the Secret"
            );
            *last = Some(cert.to_vec());
        }
        Err(e) => warn!(
            secret = SERVING_SECRET,
            error = %e,
            "the serving Secret cannot be used; keeping the certificate served so far"
        ),
    }
}

/// Watches the serving Secret and serves each new version. A deleted Secret changes nothing
/// until the cert manager writes the next one: dropping the certificate would only fail every
/// admission meanwhile.
pub async fn follow_serving_secret(
    client: Client,
    namespace: String,
    certs: Arc<ServingCerts>,
) -> Result<()> {
    let api: Api<Secret> = Api::namespaced(client, &namespace);
    let config = watcher::Config::default().fields(&format!("metadata.name={SERVING_SECRET}"));
    let mut events = watcher(api, config).default_backoff().boxed();
    let mut last = None;
    loop {
        match events.try_next().await {
            Ok(Some(Event::Apply(secret) | Event::InitApply(secret))) => {
                load(&certs, &secret, &mut last)
            }
            Ok(Some(Event::Delete(_))) => info!(
                secret = SERVING_SECRET,
                "the serving Secret was deleted; serving the last certificate until a new one"
            ),
            Ok(Some(Event::Init | Event::InitDone)) => {}
            Ok(None) => {
                return Err(Error::WatchEnded(format!(
                    "watch of Secret {SERVING_SECRET}"
                )))
            }
            Err(e) => warn!(secret = SERVING_SECRET, error = %e, "watching the serving Secret"),
        }
    }
}

#[cfg(test)]
mod tests;
