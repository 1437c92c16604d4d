use super::*;
use crate::spec::{CustomTlsProfile, EmptyObject};

fn of_type(t: TlsProfileType) -> TlsSecurityProfile {
    TlsSecurityProfile {
        profile_type: Some(t),
        ..TlsSecurityProfile::default()
    }
}

#[test]
fn no_profile_is_modern_tls_1_3_without_suites() {
    assert_eq!(go_server_flags(None), ["--tls-min-version=VersionTLS13"]);
    assert_eq!(
        go_server_flags(Some(&of_type(TlsProfileType::Modern))),
        ["--tls-min-version=VersionTLS13"]
    );
}

#[test]
fn intermediate_is_tls_1_2_with_the_ecdhe_aead_suites() {
    assert_eq!(
            go_server_flags(Some(&of_type(TlsProfileType::Intermediate))),
            [
                "--tls-min-version=VersionTLS12",
                "--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"
            ]
        );
}

#[test]
fn old_keeps_every_suite_go_has_in_the_profiles_order() {
    let flags = go_server_flags(Some(&of_type(TlsProfileType::Old)));
    assert_eq!(flags[0], "--tls-min-version=VersionTLS10");
    let suites: Vec<&str> = flags[1]
        .trim_start_matches("--tls-cipher-suites=")
        .split(',')
        .collect();
    assert_eq!(suites.len(), 18);
    assert_eq!(suites[0], "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256");
    assert_eq!(suites[17], "TLS_RSA_WITH_3DES_EDE_CBC_SHA");
}

#[test]
fn custom_wins_and_drops_the_suites_at_tls_1_3() {
    let custom = |min: &str, ciphers: &[&str]| TlsSecurityProfile {
        profile_type: Some(TlsProfileType::Custom),
        custom: Some(CustomTlsProfile {
            ciphers: ciphers.iter().map(|c| c.to_string()).collect(),
            min_tls_version: min.to_string(),
        }),
        modern: Some(EmptyObject {}),
        ..TlsSecurityProfile::default()
    };
    assert_eq!(
        go_server_flags(Some(&custom("VersionTLS12", &["AES128-SHA", "AES256-SHA"]))),
        [
            "--tls-min-version=VersionTLS12",
            "--tls-cipher-suites=TLS_RSA_WITH_AES_128_CBC_SHA,TLS_RSA_WITH_AES_256_CBC_SHA"
        ]
    );
    assert_eq!(
        go_server_flags(Some(&custom("VersionTLS13", &["AES128-SHA"]))),
        ["--tls-min-version=VersionTLS13"]
    );
}
