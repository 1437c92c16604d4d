//! The Kubernetes objects' contents: what the two Secrets and the webhook configuration hold,
//! and the new versions to write (built on the object read, so others' metadata is kept).
//!
//! The CA Secret is created with the layout a KubeMacPool cert manager has always written (type
//! Opaque, keys `ca.crt` and `ca.key`), so one written before is read and replaced in place (a
//! Secret's type cannot change). The same PEMs also go under `tls.crt` and `tls.key`: readers
//! expecting the TLS layout find them, and a CA Secret someone created as `kubernetes.io/tls`
//! (which requires those keys) can still be replaced. The serving Secret is a
//! `kubernetes.io/tls` Secret with `tls.crt` and `tls.key`, as the manager's volume expects.
//!
//! The webhook configuration is handled as untyped JSON: it is replaced whole, and a field
//! newer than the API types compiled in here must survive the round trip.

use std::collections::BTreeMap;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::ByteString;
use kube::core::DynamicObject;
use serde_json::Value;

use super::issue::{all_certificates, Ca, ServingPair};
use super::plan::Known;
use super::x509;
use super::CertError;

pub const CA_CERT_KEY: &str = "ca.crt";
pub const CA_KEY_KEY: &str = "ca.key";
pub const TLS_CERT_KEY: &str = "tls.crt";
pub const TLS_KEY_KEY: &str = "tls.key";
/// Marks the Secrets as managed by a cert manager, as KubeMacPool's own does.
pub const MANAGED_ANNOTATION: &str = "kubevirt.io/kube-admission-webhook";

/// The labels put on both Secrets: `app=kubemacpool`, plus the operator's
/// `app.kubernetes.io/*` labels passed to the Deployment as COMPONENT, PART_OF, VERSION and
/// MANAGED_BY (each only when set).
pub fn secret_labels(env: impl Fn(&str) -> Option<String>) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::from([("app".to_string(), "kubemacpool".to_string())]);
    for (var, key) in [
        ("COMPONENT", "app.kubernetes.io/component"),
        ("PART_OF", "app.kubernetes.io/part-of"),
        ("VERSION", "app.kubernetes.io/version"),
        ("MANAGED_BY", "app.kubernetes.io/managed-by"),
    ] {
        if let Some(value) = env(var).filter(|v| !v.is_empty()) {
            labels.insert(key.to_string(), value);
        }
    }
    labels
}

fn data<'a>(secret: &'a Secret, key: &str) -> Option<&'a [u8]> {
    secret
        .data
        .as_ref()?
        .get(key)
        .map(|b| b.0.as_slice())
        .filter(|b| !b.is_empty())
}

/// The serving Secret's certificate and key PEM, when both are there.
pub fn serving_pem(secret: &Secret) -> Option<(&[u8], &[u8])> {
    Some((data(secret, TLS_CERT_KEY)?, data(secret, TLS_KEY_KEY)?))
}

/// The CA kept in its Secret.
pub fn read_ca(secret: &Secret) -> Result<Ca, CertError> {
    let cert = data(secret, CA_CERT_KEY).or_else(|| data(secret, TLS_CERT_KEY));
    let key = data(secret, CA_KEY_KEY).or_else(|| data(secret, TLS_KEY_KEY));
    Ca::from_pem(
        cert.ok_or(CertError::NoCertificate)?,
        key.ok_or(CertError::NoKey)?,
    )
}

pub fn known(der: &[u8]) -> Option<Known> {
    Some(Known {
        der: der.to_vec(),
        validity: x509::validity(der)?,
    })
}

fn webhooks(config: &DynamicObject) -> &[Value] {
    config
        .data
        .get("webhooks")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// Each webhook's caBundle as the certificates it holds (unreadable ones left out).
pub fn bundles(config: &DynamicObject) -> Vec<Vec<Known>> {
    webhooks(config)
        .iter()
        .map(|w| {
            let pem = w
                .pointer("/clientConfig/caBundle")
                .and_then(Value::as_str)
                .and_then(|b| STANDARD.decode(b).ok())
                .unwrap_or_default();
            all_certificates(&pem)
                .iter()
                .filter_map(|der| known(der))
                .collect()
        })
        .collect()
}

pub fn bundle_pem(certs: &[Known]) -> String {
    certs
        .iter()
        .map(|k| super::issue::pem("CERTIFICATE", &k.der))
        .collect()
}

/// The configuration with `bundle` as every webhook's caBundle; None when that changes nothing.
pub fn with_bundle(config: &DynamicObject, bundle: &str) -> Option<DynamicObject> {
    let encoded = STANDARD.encode(bundle);
    let mut out = config.clone();
    let mut changed = false;
    let list = out.data.get_mut("webhooks").and_then(Value::as_array_mut)?;
    for webhook in list.iter_mut().filter_map(Value::as_object_mut) {
        let client_config = webhook
            .entry("clientConfig")
            .or_insert_with(|| Value::Object(Default::default()));
        let Some(client_config) = client_config.as_object_mut() else {
            continue;
        };
        if client_config.get("caBundle").and_then(Value::as_str) != Some(encoded.as_str()) {
            client_config.insert("caBundle".into(), Value::String(encoded.clone()));
            changed = true;
        }
    }
    changed.then_some(out)
}

/// The next version of a Secret: `previous` (with its resourceVersion, so a concurrent writer
/// makes this one fail) or a new one, with `contents` as its whole data.
fn next_secret(
    previous: Option<&Secret>,
    name: &str,
    namespace: &str,
    type_: &str,
    labels: &BTreeMap<String, String>,
    contents: &[(&str, &str)],
) -> Secret {
    let mut secret = previous.cloned().unwrap_or_else(|| Secret {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            ..ObjectMeta::default()
        },
        // The type is immutable: a Secret already there keeps its own.
        type_: Some(type_.to_string()),
        ..Secret::default()
    });
    let meta = &mut secret.metadata;
    meta.labels
        .get_or_insert_with(BTreeMap::new)
        .extend(labels.clone());
    meta.annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(MANAGED_ANNOTATION.to_string(), String::new());
    secret.string_data = None;
    secret.data = Some(
        contents
            .iter()
            .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
            .collect(),
    );
    secret
}

pub fn ca_secret(
    previous: Option<&Secret>,
    namespace: &str,
    labels: &BTreeMap<String, String>,
    ca: &Ca,
) -> Secret {
    let (cert, key) = (ca.cert_pem(), ca.key_pem());
    next_secret(
        previous,
        super::CA_SECRET,
        namespace,
        "Opaque",
        labels,
        &[
            (CA_CERT_KEY, &cert),
            (CA_KEY_KEY, &key),
            (TLS_CERT_KEY, &cert),
            (TLS_KEY_KEY, &key),
        ],
    )
}

pub fn serving_secret(
    previous: Option<&Secret>,
    namespace: &str,
    labels: &BTreeMap<String, String>,
    pair: &ServingPair,
) -> Secret {
    next_secret(
        previous,
        super::SERVING_SECRET,
        namespace,
        "kubernetes.io/tls",
        labels,
        &[(TLS_CERT_KEY, &pair.cert_pem), (TLS_KEY_KEY, &pair.key_pem)],
    )
}

#[cfg(test)]
mod tests;
