//! NetworkPolicies, as the upstream operator renders them, so its components keep working in a
//! namespace with a default-deny policy (the hyperconverged operator can deploy one):
//! - for every pod labelled `allow-access-cluster-services`, egress to the API server (TCP 6443)
//!   and to the cluster's DNS (kube-system's `k8s-app: kube-dns` on 53; OpenShift's
//!   `openshift-dns` on 5353);
//! - with their components, ingress to what they serve: kubemacpool's and the IPAM controller's
//!   webhooks, and kube-secondary-dns's DNS port.
//!
//! Pods that talk to the API server carry the label ([`ACCESS_LABEL`]); our node agents run in
//! the host's network namespace, where NetworkPolicies do not apply.

use k8s_openapi::api::networking::v1::{
    NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyIngressRule, NetworkPolicyPeer,
    NetworkPolicyPort, NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::common::{self, Ctx};
use super::Rendered;
use crate::error::Result;
use crate::spec::Component;

/// The label (any value) of pods allowed to reach the API server and the cluster's DNS.
pub const ACCESS_LABEL: &str = "allow-access-cluster-services";
pub const EGRESS_API: &str = "cnao-allow-egress-to-cluster-api";
pub const EGRESS_DNS: &str = "cnao-allow-egress-to-cluster-dns";

/// The policies every configuration has.
pub fn render(ctx: &Ctx) -> Result<Vec<Rendered>> {
    Ok(vec![
        common::to_rendered(None, &egress_to_api(ctx))?,
        common::to_rendered(None, &egress_to_dns(ctx))?,
    ])
}

fn port(protocol: &str, port: IntOrString) -> NetworkPolicyPort {
    NetworkPolicyPort {
        port: Some(port),
        protocol: Some(protocol.to_string()),
        end_port: None,
    }
}

fn with_access_label() -> LabelSelector {
    LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: ACCESS_LABEL.to_string(),
            operator: "Exists".to_string(),
            values: None,
        }]),
        match_labels: None,
    }
}

fn egress_to_api(ctx: &Ctx) -> NetworkPolicy {
    NetworkPolicy {
        metadata: common::meta(ctx, EGRESS_API, None),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(with_access_label()),
            policy_types: Some(common::strings(&["Egress"])),
            egress: Some(vec![NetworkPolicyEgressRule {
                ports: Some(vec![port("TCP", IntOrString::Int(6443))]),
                to: None,
            }]),
            ingress: None,
        }),
    }
}

fn egress_to_dns(ctx: &Ctx) -> NetworkPolicy {
    let (namespace, key, value, dns_port) = if ctx.cluster.openshift {
        (
            "openshift-dns",
            "dns.operator.openshift.io/daemonset-dns",
            "default",
            5353,
        )
    } else {
        ("kube-system", "k8s-app", "kube-dns", 53)
    };
    NetworkPolicy {
        metadata: common::meta(ctx, EGRESS_DNS, None),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(with_access_label()),
            policy_types: Some(common::strings(&["Egress"])),
            egress: Some(vec![NetworkPolicyEgressRule {
                to: Some(vec![NetworkPolicyPeer {
                    namespace_selector: Some(common::selector(&[(
                        "kubernetes.io/metadata.name",
                        namespace,
                    )])),
                    pod_selector: Some(common::selector(&[(key, value)])),
                    ip_block: None,
                }]),
                ports: Some(vec![
                    port("TCP", IntOrString::Int(dns_port)),
                    port("UDP", IntOrString::Int(dns_port)),
                ]),
            }]),
            ingress: None,
        }),
    }
}

/// Ingress from anywhere to `port` of the pods `selector` picks: what a component serves.
pub fn allow_ingress(
    ctx: &Ctx,
    component: Component,
    name: &str,
    selector: &[(&str, &str)],
    protocol: &str,
    to_port: IntOrString,
) -> NetworkPolicy {
    NetworkPolicy {
        metadata: common::meta(ctx, name, Some(component)),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(common::selector(selector)),
            policy_types: Some(common::strings(&["Ingress"])),
            ingress: Some(vec![NetworkPolicyIngressRule {
                from: None,
                ports: Some(vec![port(protocol, to_port)]),
            }]),
            egress: None,
        }),
    }
}

#[cfg(test)]
mod tests;
