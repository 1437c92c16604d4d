//! Making the CA and the serving certificate, and checking that a serving certificate is one
//! the API server will accept under a given CA.

use std::sync::Arc;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PublicKeyData,
};
use tokio_rustls::rustls::client::danger::ServerCertVerifier;
use tokio_rustls::rustls::client::WebPkiServerVerifier;
use tokio_rustls::rustls::crypto::ring;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use tokio_rustls::rustls::RootCertStore;

use super::x509::{self, UnixSeconds, Validity};
use super::{CertError, SERVICE, WEBHOOK_CONFIGURATION};

/// Certificates start a little in the past so an API server whose clock lags ours does not
/// find them not yet valid.
const BACKDATE: i64 = 5 * 60;

/// The names the serving certificate carries: the Service's short and namespaced forms and its
/// in-cluster DNS names. The API server dials the `.svc` one.
pub fn service_dns_names(namespace: &str) -> Vec<String> {
    vec![
        SERVICE.to_string(),
        format!("{SERVICE}.{namespace}"),
        format!("{SERVICE}.{namespace}.svc"),
        format!("{SERVICE}.{namespace}.svc.cluster.local"),
    ]
}

/// The host name the API server uses to call the webhook, and so checks the certificate for.
pub fn service_host(namespace: &str) -> String {
    format!("{SERVICE}.{namespace}.svc")
}

/// rcgen takes its own date type and re-exports no constructor from Unix time, so the instants
/// are built from its epoch.
fn set_validity(params: &mut CertificateParams, from: UnixSeconds, until: UnixSeconds) {
    let epoch = rcgen::date_time_ymd(1970, 1, 1);
    params.not_before = epoch + Duration::from_secs(from.max(0) as u64);
    params.not_after = epoch + Duration::from_secs(until.max(0) as u64);
}

fn seconds(d: Duration) -> i64 {
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX / 2)
}

/// The subject and usages of every CA made here. Signing rebuilds them for the issuer, so they
/// must not depend on anything but this function.
fn ca_params() -> CertificateParams {
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, WEBHOOK_CONFIGURATION);
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params
}

/// A CA: its certificate and the key it signs with.
pub struct Ca {
    key: KeyPair,
    cert_der: CertificateDer<'static>,
    validity: Validity,
}

impl std::fmt::Debug for Ca {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ca")
            .field("validity", &self.validity)
            .finish_non_exhaustive()
    }
}

/// A serving certificate and its key, as PEM for the Secret.
#[derive(Debug, Clone)]
pub struct ServingPair {
    pub cert_pem: String,
    pub key_pem: String,
    pub cert_der: CertificateDer<'static>,
    pub validity: Validity,
}

impl Ca {
    /// A new self-signed CA (an RSA-2048 key, as upstream's) valid for `lifetime` from `now`.
    pub fn generate(now: UnixSeconds, lifetime: Duration) -> Result<Ca, CertError> {
        let key = rsa_key()?;
        let mut params = ca_params();
        set_validity(&mut params, now - BACKDATE, now + seconds(lifetime));
        let cert_der = params.self_signed(&key)?.der().clone();
        let validity = x509::validity(&cert_der).ok_or(CertError::BadCertificate)?;
        Ok(Ca {
            key,
            cert_der,
            validity,
        })
    }

    /// The CA kept in a Secret: its first PEM certificate and a key that belongs to it, PKCS#8
    /// or (as upstream writes it) PKCS#1 RSA.
    pub fn from_pem(cert_pem: &[u8], key_pem: &[u8]) -> Result<Ca, CertError> {
        let cert_der = first_certificate(cert_pem)?;
        let key_text = std::str::from_utf8(key_pem).map_err(|_| CertError::NoKey)?;
        let key = read_key(key_text)?;
        let validity = x509::validity(&cert_der).ok_or(CertError::BadCertificate)?;
        let spki = x509::public_key_info(&cert_der).ok_or(CertError::BadCertificate)?;
        if spki != key.subject_public_key_info().as_slice() {
            return Err(CertError::KeyMismatch);
        }
        Ok(Ca {
            key,
            cert_der,
            validity,
        })
    }

    pub fn cert_der(&self) -> &CertificateDer<'static> {
        &self.cert_der
    }

    pub fn cert_pem(&self) -> String {
        pem("CERTIFICATE", &self.cert_der)
    }

    pub fn key_pem(&self) -> String {
        self.key.serialize_pem()
    }

    pub fn validity(&self) -> Validity {
        self.validity
    }

    /// A serving certificate for the Service in `namespace`, valid for `lifetime` from `now`.
    pub fn issue_serving(
        &self,
        namespace: &str,
        now: UnixSeconds,
        lifetime: Duration,
    ) -> Result<ServingPair, CertError> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(service_dns_names(namespace))?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, service_host(namespace));
        params.distinguished_name = dn;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        let from = (now - BACKDATE).max(self.validity.not_before);
        set_validity(&mut params, from, now + seconds(lifetime));
        let issuer = Issuer::new(ca_params(), &self.key);
        let cert_der = params.signed_by(&key, &issuer)?.der().clone();
        let validity = x509::validity(&cert_der).ok_or(CertError::BadCertificate)?;
        Ok(ServingPair {
            cert_pem: pem("CERTIFICATE", &cert_der),
            key_pem: key.serialize_pem(),
            cert_der,
            validity,
        })
    }
}

/// A new RSA-2048 key, the CA key upstream's cert manager makes and the only kind it reads.
fn rsa_key() -> Result<KeyPair, CertError> {
    use rsa::pkcs8::EncodePrivateKey;
    let key = rsa::RsaPrivateKey::new(&mut rand_core::OsRng, 2048).map_err(CertError::bad_key)?;
    let der = key.to_pkcs8_der().map_err(CertError::bad_key)?;
    KeyPair::try_from(der.as_bytes()).map_err(CertError::bad_key)
}

/// A PEM private key: PKCS#8, or PKCS#1 RSA (`RSA PRIVATE KEY`, upstream's encoding), turned
/// into PKCS#8 for the signer.
fn read_key(pem_text: &str) -> Result<KeyPair, CertError> {
    use rsa::pkcs1::DecodeRsaPrivateKey;
    use rsa::pkcs8::EncodePrivateKey;
    if pem_text.contains("-----BEGIN RSA PRIVATE KEY-----") {
        let key = rsa::RsaPrivateKey::from_pkcs1_pem(pem_text).map_err(CertError::bad_key)?;
        let der = key.to_pkcs8_der().map_err(CertError::bad_key)?;
        return KeyPair::try_from(der.as_bytes()).map_err(CertError::bad_key);
    }
    KeyPair::from_pem(pem_text).map_err(CertError::bad_key)
}

pub(crate) fn first_certificate(cert_pem: &[u8]) -> Result<CertificateDer<'static>, CertError> {
    CertificateDer::pem_slice_iter(cert_pem)
        .next()
        .ok_or(CertError::NoCertificate)?
        .map_err(|_| CertError::NoCertificate)
}

/// Every certificate of a PEM bundle; unreadable blocks are skipped.
pub(crate) fn all_certificates(bundle_pem: &[u8]) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_slice_iter(bundle_pem)
        .filter_map(Result::ok)
        .collect()
}

pub(crate) fn pem(label: &str, der: &[u8]) -> String {
    use base64::Engine;
    let text = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in text.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// What the API server checks when it calls the webhook: the certificate chains to the CA, is
/// valid at `now` and names the Service's `.svc` host.
pub fn verify_serving(
    cert: &CertificateDer<'_>,
    ca: &CertificateDer<'_>,
    namespace: &str,
    now: UnixSeconds,
) -> Result<(), CertError> {
    let host = service_host(namespace);
    let mut roots = RootCertStore::empty();
    roots
        .add(ca.clone().into_owned())
        .map_err(CertError::NotAnAnchor)
        .map_err(CertError::not_trusted(&host))?;
    let verifier = WebPkiServerVerifier::builder_with_provider(
        Arc::new(roots),
        Arc::new(ring::default_provider()),
    )
    .build()
    .map_err(CertError::not_trusted(&host))?;
    let name = ServerName::try_from(host.clone()).map_err(CertError::not_trusted(&host))?;
    let at = UnixTime::since_unix_epoch(Duration::from_secs(now.max(0) as u64));
    verifier
        .verify_server_cert(cert, &[], &name, &[], at)
        .map(|_| ())
        .map_err(CertError::not_trusted(&host))
}

#[cfg(test)]
mod tests;
