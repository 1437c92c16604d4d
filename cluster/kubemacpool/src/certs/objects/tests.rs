use super::*;
use serde_json::json;

const NOW: i64 = 1_800_000_000;

fn config(bundles: &[&[u8]]) -> DynamicObject {
    let webhooks: Vec<Value> = bundles
        .iter()
        .map(|b| {
            let mut client_config = json!({"service": {"name": "kubemacpool-service"}});
            if !b.is_empty() {
                client_config["caBundle"] = json!(STANDARD.encode(b));
            }
            json!({"name": "w.kubemacpool.io", "clientConfig": client_config, "futureField": 1})
        })
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "kubemacpool-mutator", "resourceVersion": "3"},
        "webhooks": webhooks,
    }))
    .expect("object")
}

#[test]
fn the_secrets_are_labelled_for_kubemacpool() {
    let labels = secret_labels(|v| (v == "PART_OF").then(|| "network-addons".to_string()));
    assert_eq!(labels.get("app").map(String::as_str), Some("kubemacpool"));
    assert_eq!(
        labels.get("app.kubernetes.io/part-of").map(String::as_str),
        Some("network-addons")
    );
    assert!(!labels.contains_key("app.kubernetes.io/version"));
}

#[test]
fn a_new_ca_secret_is_opaque_with_ca_keys_and_reads_back() {
    let ca = Ca::generate(NOW, std::time::Duration::from_secs(3600)).expect("ca");
    let s = ca_secret(None, "ns", &secret_labels(|_| None), &ca);
    assert_eq!(s.type_.as_deref(), Some("Opaque"));
    assert_eq!(s.metadata.namespace.as_deref(), Some("ns"));
    assert_eq!(s.metadata.name.as_deref(), Some(super::super::CA_SECRET));
    let back = read_ca(&s).expect("readable");
    assert_eq!(back.cert_der(), ca.cert_der());
}

#[test]
fn a_replaced_secret_keeps_its_metadata_and_resource_version() {
    let ca = Ca::generate(NOW, std::time::Duration::from_secs(3600)).expect("ca");
    let pair = ca
        .issue_serving("ns", NOW, std::time::Duration::from_secs(60))
        .expect("cert");
    let mut before = serving_secret(None, "ns", &BTreeMap::new(), &pair);
    before.metadata.resource_version = Some("42".into());
    before.metadata.labels = Some(BTreeMap::from([("keep".into(), "me".into())]));
    before.type_ = Some("Opaque".into());
    let after = serving_secret(Some(&before), "ns", &secret_labels(|_| None), &pair);
    assert_eq!(after.metadata.resource_version.as_deref(), Some("42"));
    assert_eq!(after.type_.as_deref(), Some("Opaque"));
    let labels = after.metadata.labels.clone().expect("labels");
    assert_eq!(labels.get("keep").map(String::as_str), Some("me"));
    assert_eq!(labels.get("app").map(String::as_str), Some("kubemacpool"));
    assert_eq!(
        serving_pem(&after).map(|(c, _)| c),
        Some(pair.cert_pem.as_bytes())
    );
}

#[test]
fn every_webhook_gets_the_bundle() {
    let ca = Ca::generate(NOW, std::time::Duration::from_secs(3600)).expect("ca");
    let pem = ca.cert_pem();
    let c = config(&[b"", pem.as_bytes()]);
    assert_eq!(bundles(&c)[0], vec![]);
    assert_eq!(bundles(&c)[1].len(), 1);
    let updated = with_bundle(&c, &pem).expect("changed");
    assert!(bundles(&updated)
        .iter()
        .all(|b| b[0].der == ca.cert_der().to_vec()));
    assert!(with_bundle(&updated, &pem).is_none());
}

#[test]
fn fields_unknown_here_survive_a_bundle_update() {
    let c = config(&[b""]);
    let updated = with_bundle(&c, "x").expect("changed");
    assert_eq!(updated.data["webhooks"][0]["futureField"], json!(1));
    assert_eq!(
        updated.data["webhooks"][0]["clientConfig"]["service"]["name"],
        json!("kubemacpool-service")
    );
    assert_eq!(updated.metadata.resource_version.as_deref(), Some("3"));
}

#[test]
fn the_ca_secret_also_carries_the_tls_layout() {
    let ca = Ca::generate(NOW, std::time::Duration::from_secs(3600)).expect("ca");
    let s = ca_secret(None, "ns", &BTreeMap::new(), &ca);
    let data = s.data.expect("data");
    assert_eq!(data[TLS_CERT_KEY], data[CA_CERT_KEY]);
    assert_eq!(data[TLS_KEY_KEY], data[CA_KEY_KEY]);
}

#[test]
fn garbage_in_a_bundle_reads_as_no_certificate() {
    assert_eq!(bundles(&config(&[b"not pem at all"])), vec![vec![]]);
}
