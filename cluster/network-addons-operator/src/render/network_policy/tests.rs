#![allow(clippy::unwrap_used)]
use super::*;
use crate::cluster::ClusterInfo;
use crate::settings::Settings;
use crate::spec::NetworkAddonsConfigSpec;

fn dns_policy(cluster: ClusterInfo) -> serde_json::Value {
    let spec = NetworkAddonsConfigSpec::default();
    let settings = Settings::defaults();
    render(&Ctx::new(&spec, &settings, &cluster)).unwrap()[1]
        .object
        .clone()
}

#[test]
fn dns_egress_goes_to_kube_dns_or_to_openshift_dns() {
    let kube = dns_policy(ClusterInfo::default());
    let peer = &kube["spec"]["egress"][0]["to"][0];
    assert_eq!(
        peer["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"],
        "kube-system"
    );
    assert_eq!(peer["podSelector"]["matchLabels"]["k8s-app"], "kube-dns");
    assert_eq!(kube["spec"]["egress"][0]["ports"][1]["port"], 53);
    let openshift = dns_policy(ClusterInfo {
        openshift: true,
        ..ClusterInfo::default()
    });
    assert_eq!(openshift["spec"]["egress"][0]["ports"][0]["port"], 5353);
}
