//! `tlsSecurityProfile` as a component's TLS flags. The profiles are OpenShift's
//! (openshift/api `TLSProfiles`): a minimum version and ciphers by their OpenSSL names. Go
//! servers take Go's names, so each OpenSSL name is translated; TLS 1.3 suites (Go picks those
//! itself) and DHE suites (Go has none) are left out, as upstream does. No profile means Modern.

use crate::spec::{TlsProfileType, TlsSecurityProfile};

/// OpenShift's Old profile: TLS 1.0 and every cipher below.
const OLD_CIPHERS: &[&str] = &[
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
    "ECDHE-ECDSA-AES128-GCM-SHA256",
    "ECDHE-RSA-AES128-GCM-SHA256",
    "ECDHE-ECDSA-AES256-GCM-SHA384",
    "ECDHE-RSA-AES256-GCM-SHA384",
    "ECDHE-ECDSA-CHACHA20-POLY1305",
    "ECDHE-RSA-CHACHA20-POLY1305",
    "DHE-RSA-AES128-GCM-SHA256",
    "DHE-RSA-AES256-GCM-SHA384",
    "DHE-RSA-CHACHA20-POLY1305",
    "ECDHE-ECDSA-AES128-SHA256",
    "ECDHE-RSA-AES128-SHA256",
    "ECDHE-ECDSA-AES128-SHA",
    "ECDHE-RSA-AES128-SHA",
    "ECDHE-ECDSA-AES256-SHA384",
    "ECDHE-RSA-AES256-SHA384",
    "ECDHE-ECDSA-AES256-SHA",
    "ECDHE-RSA-AES256-SHA",
    "DHE-RSA-AES128-SHA256",
    "DHE-RSA-AES256-SHA256",
    "AES128-GCM-SHA256",
    "AES256-GCM-SHA384",
    "AES128-SHA256",
    "AES256-SHA256",
    "AES128-SHA",
    "AES256-SHA",
    "DES-CBC3-SHA",
];

/// OpenShift's Intermediate profile: TLS 1.2 and the first eleven of Old's, the AEAD suites.
const INTERMEDIATE_CIPHERS: &[&str] = OLD_CIPHERS.split_at(11).0;

/// Go's name of an OpenSSL cipher name, where Go implements the suite (TLS 1.2 and below).
fn go_cipher(openssl: &str) -> Option<&'static str> {
    Some(match openssl {
        "ECDHE-ECDSA-AES128-GCM-SHA256" => "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "ECDHE-RSA-AES128-GCM-SHA256" => "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "ECDHE-ECDSA-AES256-GCM-SHA384" => "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384" => "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        "ECDHE-ECDSA-CHACHA20-POLY1305" => "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        "ECDHE-RSA-CHACHA20-POLY1305" => "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        "ECDHE-ECDSA-AES128-SHA256" => "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
        "ECDHE-RSA-AES128-SHA256" => "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
        "ECDHE-ECDSA-AES128-SHA" => "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
        "ECDHE-RSA-AES128-SHA" => "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
        "ECDHE-ECDSA-AES256-SHA" => "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
        "ECDHE-RSA-AES256-SHA" => "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
        "AES128-GCM-SHA256" => "TLS_RSA_WITH_AES_128_GCM_SHA256",
        "AES256-GCM-SHA384" => "TLS_RSA_WITH_AES_256_GCM_SHA384",
        "AES128-SHA256" => "TLS_RSA_WITH_AES_128_CBC_SHA256",
        "AES128-SHA" => "TLS_RSA_WITH_AES_128_CBC_SHA",
        "AES256-SHA" => "TLS_RSA_WITH_AES_256_CBC_SHA",
        "DES-CBC3-SHA" => "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
        _ => return None,
    })
}

/// The minimum version (`VersionTLS12`) and the OpenSSL cipher names of `profile`. A Custom
/// section wins whatever `type` says, as upstream reads it.
fn settings(profile: Option<&TlsSecurityProfile>) -> (String, Vec<String>) {
    let named = |min: &str, ciphers: &[&str]| {
        (
            min.to_string(),
            ciphers.iter().map(|c| c.to_string()).collect(),
        )
    };
    let Some(profile) = profile else {
        return named("VersionTLS13", &[]);
    };
    if let Some(custom) = &profile.custom {
        return (custom.min_tls_version.clone(), custom.ciphers.clone());
    }
    match profile.profile_type {
        Some(TlsProfileType::Old) => named("VersionTLS10", OLD_CIPHERS),
        Some(TlsProfileType::Intermediate) => named("VersionTLS12", INTERMEDIATE_CIPHERS),
        _ => named("VersionTLS13", &[]),
    }
}

/// `--tls-min-version=...` and, below TLS 1.3 (where Go chooses the suites itself),
/// `--tls-cipher-suites=...` in Go's names: the flags of controller-runtime webhook servers
/// such as the IPAM controller's.
pub fn go_server_flags(profile: Option<&TlsSecurityProfile>) -> Vec<String> {
    let (min, ciphers) = settings(profile);
    let min = if min.is_empty() {
        "VersionTLS13".to_string()
    } else {
        min
    };
    let mut flags = vec![format!("--tls-min-version={min}")];
    let go: Vec<&str> = ciphers.iter().filter_map(|c| go_cipher(c)).collect();
    if min != "VersionTLS13" && !go.is_empty() {
        flags.push(format!("--tls-cipher-suites={}", go.join(",")));
    }
    flags
}

#[cfg(test)]
mod tests;
