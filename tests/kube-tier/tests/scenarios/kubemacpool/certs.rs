//! The webhook's certificates as upstream's cert manager reads them, and their recovery.

use kube_tier::daemon::run_with_stdin;

use super::*;

/// One key of a Secret in the operand namespace, decoded.
fn secret_data(ctx: &Ctx, secret: &str, key: &str) -> Result<Vec<u8>> {
    use base64::Engine;
    let s = ctx.get(&["get", "secret", secret, "-n", NAMESPACE])?;
    let text = s["data"][key]
        .as_str()
        .with_context(|| format!("Secret {secret} has no {key}"))?;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .with_context(|| format!("Secret {secret}'s {key} is not base64"))
}

/// `openssl <args>` with `input` on stdin: what it printed.
fn openssl(args: &[&str], input: &[u8]) -> Result<String> {
    run_with_stdin(std::process::Command::new("openssl").args(args), input)
}

/// The first PEM certificate of `pem`, as openssl prints its fingerprint.
fn fingerprint(pem: &[u8]) -> Result<String> {
    openssl(&["x509", "-noout", "-fingerprint", "-sha256"], pem)
}

/// What upstream's cert manager requires of the Secrets and the webhooks' caBundle before it
/// keeps them (it reads the CA key as RSA and nothing else), checked after ours made them; then
/// the serving Secret deleted is made again and the webhook serves with it.
pub fn the_certificates_are_what_upstream_reads_and_come_back_when_deleted(
    ctx: &mut Ctx,
) -> Result<()> {
    deploy(ctx)?;
    let ca_secret = ctx.get(&["get", "secret", "kubemacpool-mutator-ca", "-n", NAMESPACE])?;
    let serving = ctx.get(&["get", "secret", "kubemacpool-service", "-n", NAMESPACE])?;
    check(
        ca_secret["type"] == "Opaque" && serving["type"] == "kubernetes.io/tls",
        || {
            format!(
                "Secret types: {} and {}",
                ca_secret["type"], serving["type"]
            )
        },
    )?;
    let ca_cert = secret_data(ctx, "kubemacpool-mutator-ca", "ca.crt")?;
    let ca_key = secret_data(ctx, "kubemacpool-mutator-ca", "ca.key")?;
    let rsa = openssl(&["rsa", "-check", "-noout", "-text"], &ca_key)?;
    check(
        rsa.contains("RSA key ok") && rsa.contains("2048 bit"),
        || format!("the CA key is not the RSA key upstream reads: {rsa}"),
    )?;
    println!("    kubemacpool-mutator-ca: ca.crt, ca.key (RSA 2048, RSA key ok)");
    let webhooks = ctx.get(&["get", "mutatingwebhookconfiguration", "kubemacpool-mutator"])?;
    let ca_print = fingerprint(&ca_cert)?;
    for hook in webhooks["webhooks"].as_array().into_iter().flatten() {
        let bundle = hook["clientConfig"]["caBundle"]
            .as_str()
            .unwrap_or_default();
        let bundle = {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD.decode(bundle)?
        };
        let text = String::from_utf8_lossy(&bundle).to_string();
        let last = text
            .rfind("-----BEGIN CERTIFICATE-----")
            .map(|i| text[i..].to_string())
            .unwrap_or_default();
        check(fingerprint(last.as_bytes())? == ca_print, || {
            format!(
                "{}: the caBundle's last certificate is not the CA's",
                hook["name"]
            )
        })?;
    }
    let dir = scratch_dir()?;
    let bundle_path = dir.join("ca.pem");
    std::fs::write(&bundle_path, &ca_cert)?;
    let host = format!("kubemacpool-service.{NAMESPACE}.svc");
    let verified = openssl(
        &[
            "verify",
            "-CAfile",
            &bundle_path.to_string_lossy(),
            "-verify_hostname",
            &host,
        ],
        &secret_data(ctx, "kubemacpool-service", "tls.crt")?,
    );
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "    kubemacpool-service: tls.crt for {host}: {}",
        verified?.trim()
    );
    println!("    both webhooks' caBundle ends with the CA's certificate");

    // Recovery: the serving Secret deleted, made again and served.
    let uid = serving["metadata"]["uid"].clone();
    ctx.kubectl(&["delete", "secret", "kubemacpool-service", "-n", NAMESPACE])?;
    let deleted = std::time::Instant::now();
    wait_for(
        "the serving Secret to be made again",
        Duration::from_secs(60),
        || {
            let again = ctx.get(&["get", "secret", "kubemacpool-service", "-n", NAMESPACE]);
            Ok(again
                .ok()
                .filter(|s| s["metadata"]["uid"] != uid && s["data"]["tls.crt"].is_string())
                .map(drop))
        },
    )?;
    let remade = deleted.elapsed();
    opted_in_namespace(ctx, CERT_NAMESPACE)?;
    let outcome = wait_for(
        "a pod create through the webhook with the new certificate",
        Duration::from_secs(60),
        || {
            let _ = ctx.kubectl(&["delete", "pod", "-n", CERT_NAMESPACE, "kmp-after-certs"]);
            Ok(ctx
                .apply(&parked_pod_yaml("kmp-after-certs", CERT_NAMESPACE))
                .ok()
                .map(drop))
        },
    );
    println!(
        "    serving Secret deleted: made again {:.1}s later; a pod created through the webhook {:.1}s after the delete",
        remade.as_secs_f64(),
        deleted.elapsed().as_secs_f64()
    );
    ctx.kubectl(&["delete", "namespace", CERT_NAMESPACE, "--wait=false"])?;
    outcome
}

fn scratch_dir() -> Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("kmp-certs-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
