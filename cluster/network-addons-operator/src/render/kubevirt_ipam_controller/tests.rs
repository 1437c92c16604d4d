#![allow(clippy::unwrap_used)]
use super::*;
use crate::cluster::ClusterInfo;
use crate::settings::Settings;
use crate::spec::{KubevirtIpamController, NetworkAddonsConfigSpec};

fn rendered(cluster: ClusterInfo, nad_namespace: &str) -> Vec<Value> {
    let spec = NetworkAddonsConfigSpec {
        kubevirt_ipam_controller: Some(KubevirtIpamController {
            default_network_nad_namespace: nad_namespace.to_string(),
        }),
        ..NetworkAddonsConfigSpec::default()
    };
    let settings = Settings::defaults();
    render(&Ctx::new(&spec, &settings, &cluster))
        .unwrap()
        .into_iter()
        .map(|r| r.object)
        .collect()
}

fn find<'a>(out: &'a [Value], kind: &str) -> Option<&'a Value> {
    out.iter().find(|o| o["kind"] == kind)
}

const CERT_MANAGER: ClusterInfo = ClusterInfo::WITH_CERT_MANAGER;

#[test]
fn with_cert_manager_a_certificate_serves_the_webhook_and_its_ca_is_injected() {
    let out = rendered(CERT_MANAGER, "");
    let cert = find(&out, "Certificate").unwrap();
    assert_eq!(cert["spec"]["secretName"], CERT_MANAGER_SECRET);
    assert_eq!(
        cert["spec"]["dnsNames"][0],
        format!("{SERVICE}.cluster-network-addons.svc")
    );
    assert!(find(&out, "Issuer").is_some());
    let hook = find(&out, "MutatingWebhookConfiguration").unwrap();
    assert_eq!(
        hook["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
        format!("cluster-network-addons/{CERTIFICATE}")
    );
    let d = find(&out, "Deployment").unwrap();
    let pod = &d["spec"]["template"]["spec"];
    assert_eq!(
        pod["volumes"][0]["secret"]["secretName"],
        CERT_MANAGER_SECRET
    );
    assert_eq!(
        pod["containers"][0]["volumeMounts"][0]["mountPath"],
        CERT_MANAGER_MOUNT
    );
}

#[test]
fn on_openshift_the_service_ca_serves_the_webhook() {
    let out = rendered(
        ClusterInfo {
            openshift: true,
            ..ClusterInfo::default()
        },
        "",
    );
    assert!(find(&out, "Certificate").is_none());
    assert!(find(&out, "CustomResourceDefinition").is_none());
    let svc = find(&out, "Service").unwrap();
    assert_eq!(
        svc["metadata"]["annotations"]["service.beta.openshift.io/serving-cert-secret-name"],
        SERVICE
    );
    let hook = find(&out, "MutatingWebhookConfiguration").unwrap();
    assert_eq!(
        hook["metadata"]["annotations"]["service.beta.openshift.io/inject-cabundle"],
        "true"
    );
}

#[test]
fn the_default_network_nad_namespace_becomes_an_argument() {
    let with = rendered(CERT_MANAGER, "openshift-ovn-kubernetes");
    let args =
        &find(&with, "Deployment").unwrap()["spec"]["template"]["spec"]["containers"][0]["args"];
    assert!(args.as_array().unwrap().contains(&json!(
        "--default-network-nad-namespace=openshift-ovn-kubernetes"
    )));
    let without = rendered(CERT_MANAGER, "");
    let args =
        &find(&without, "Deployment").unwrap()["spec"]["template"]["spec"]["containers"][0]["args"];
    assert_eq!(
        args,
        &json!(["--leader-elect", "--tls-min-version=VersionTLS13"])
    );
}

#[test]
fn the_webhook_comes_after_the_deployment_serving_it() {
    let out = rendered(CERT_MANAGER, "");
    let at = |kind: &str| out.iter().position(|o| o["kind"] == kind).unwrap();
    assert!(at("Deployment") < at("MutatingWebhookConfiguration"));
    assert!(at("Certificate") < at("Deployment"));
}
