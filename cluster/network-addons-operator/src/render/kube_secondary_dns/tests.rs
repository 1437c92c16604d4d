#![allow(clippy::unwrap_used)]
use super::*;
use crate::cluster::ClusterInfo;
use crate::settings::Settings;
use crate::spec::{KubeSecondaryDns, NetworkAddonsConfigSpec};

fn rendered(dns: KubeSecondaryDns) -> Vec<Rendered> {
    let spec = NetworkAddonsConfigSpec {
        kube_secondary_dns: Some(dns),
        ..NetworkAddonsConfigSpec::default()
    };
    let settings = Settings::defaults();
    render(&Ctx::new(&spec, &settings, &ClusterInfo::default())).unwrap()
}

#[test]
fn domain_and_name_server_of_the_spec_go_into_the_config_map() {
    let out = rendered(KubeSecondaryDns {
        domain: "example.com".to_string(),
        name_server_ip: "192.0.2.1".to_string(),
        ..KubeSecondaryDns::default()
    });
    let cm = &out[3].object;
    assert_eq!(cm["data"]["DOMAIN"], "example.com");
    assert_eq!(cm["data"]["NAME_SERVER_IP"], "192.0.2.1");
}

#[test]
fn the_readme_spelling_of_the_fields_is_taken_too() {
    let out = rendered(KubeSecondaryDns {
        domain_readme: "vms.example.org".to_string(),
        name_server_ip_readme: "198.51.100.7".to_string(),
        ..KubeSecondaryDns::default()
    });
    let cm = &out[3].object;
    assert_eq!(cm["data"]["DOMAIN"], "vms.example.org");
    assert_eq!(cm["data"]["NAME_SERVER_IP"], "198.51.100.7");
}

#[test]
fn the_node_port_service_reaches_the_dns_port_of_the_pods() {
    let out = rendered(KubeSecondaryDns::default());
    let svc = &out[4].object;
    assert_eq!(svc["spec"]["type"], "NodePort");
    assert_eq!(svc["spec"]["ports"][0]["protocol"], "UDP");
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], "dns");
    let d = &out[5].object;
    assert_eq!(
        svc["spec"]["selector"],
        d["spec"]["selector"]["matchLabels"]
    );
}
