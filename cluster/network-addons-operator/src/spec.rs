//! The NetworkAddonsConfig custom resource: the same group, kind, fields and JSON names as the
//! cluster-network-addons-operator's, so a CR written for it applies unchanged.
//!
//! A component is on when its key is present (`linuxBridge: {}`), off when the key is absent.
//! Every field is optional in the schema: like upstream, the API server accepts any spec and the
//! reconciler reports what is wrong in the status (Degraded), which is also what a CR written for
//! upstream expects.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Affinity, Toleration};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cluster::ClusterInfo;

pub const GROUP: &str = "networkaddonsoperator.network.kubevirt.io";
/// The only object reconciled; others are ignored, as upstream does.
pub const CONFIG_NAME: &str = "cluster";

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "networkaddonsoperator.network.kubevirt.io",
    version = "v1",
    kind = "NetworkAddonsConfig",
    plural = "networkaddonsconfigs",
    status = "NetworkAddonsConfigStatus",
    doc = "Which secondary-network components run in the cluster; only the object named `cluster` is reconciled.",
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct NetworkAddonsConfigSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multus: Option<Multus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multus_dynamic_networks: Option<MultusDynamicNetworks>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linux_bridge: Option<LinuxBridge>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_mac_pool: Option<KubeMacPool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ovs: Option<Ovs>,
    /// kubernetes-nmstate's API (its three `nmstate.io` CRDs) served by our handler on every
    /// node, unless kubernetes-nmstate is already installed by other means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nmstate: Option<NMState>,
    #[serde(
        default,
        rename = "kubeSecondaryDNS",
        skip_serializing_if = "Option::is_none"
    )]
    pub kube_secondary_dns: Option<KubeSecondaryDns>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub macvtap: Option<Macvtap>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubevirt_ipam_controller: Option<KubevirtIpamController>,
    /// `Always`, `Never` or `IfNotPresent` (checked by the reconciler, not the schema, so a wrong
    /// value shows up as a Degraded condition with the reason, as upstream).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_sign_configuration: Option<SelfSignConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement_configuration: Option<PlacementConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_security_profile: Option<TlsSecurityProfile>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct Multus {}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MultusDynamicNetworks {
    #[serde(
        default,
        rename = "hostCRISocketPath",
        skip_serializing_if = "String::is_empty"
    )]
    pub host_cri_socket_path: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct LinuxBridge {}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubeMacPool {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub range_start: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub range_end: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct Ovs {}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename = "NMState")]
pub struct NMState {}

/// The upstream API names these `domain` and `nameServerIP`; its README writes `DOMAIN` and
/// `NAME_SERVER_IP`. Both spellings are in the schema so neither is pruned or refused by a
/// strict `kubectl apply`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubeSecondaryDns {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
    #[serde(
        default,
        rename = "nameServerIP",
        skip_serializing_if = "String::is_empty"
    )]
    pub name_server_ip: String,
    #[serde(default, rename = "DOMAIN", skip_serializing_if = "String::is_empty")]
    pub domain_readme: String,
    #[serde(
        default,
        rename = "NAME_SERVER_IP",
        skip_serializing_if = "String::is_empty"
    )]
    pub name_server_ip_readme: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Macvtap {
    /// Name of the ConfigMap holding the macvtap device plugin's `DP_MACVTAP_CONF`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub device_plugin_config: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubevirtIpamController {
    #[serde(
        default,
        rename = "defaultNetworkNADNamespace",
        skip_serializing_if = "String::is_empty"
    )]
    pub default_network_nad_namespace: String,
}

/// Go duration strings (`168h`, `1h30m`); all four or none.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SelfSignConfiguration {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ca_rotate_interval: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ca_overlap_interval: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cert_rotate_interval: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cert_overlap_interval: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementConfiguration {
    /// Cluster-wide controllers (kubemacpool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infra: Option<Placement>,
    /// Node agents (the plugin installers, multus, the macvtap device plugin).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workloads: Option<Placement>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
}

/// OpenShift's TLSSecurityProfile shape: the webhook servers (kubemacpool's, the IPAM
/// controller's) follow it; none means Modern.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TlsSecurityProfile {
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub profile_type: Option<TlsProfileType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old: Option<EmptyObject>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intermediate: Option<EmptyObject>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modern: Option<EmptyObject>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<CustomTlsProfile>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum TlsProfileType {
    Old,
    Intermediate,
    Modern,
    Custom,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct EmptyObject {}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomTlsProfile {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ciphers: Vec<String>,
    #[serde(
        default,
        rename = "minTLSVersion",
        skip_serializing_if = "String::is_empty"
    )]
    pub min_tls_version: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkAddonsConfigStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_version: Option<String>,
    /// Set when every deployed component is available at this operator's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_version: Option<String>,
    /// The `metadata.generation` of the spec the conditions describe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Every container of every DaemonSet and Deployment deployed, with its image.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub containers: Vec<ContainerImage>,
    /// Components the spec turns on that this operator does not deploy, each with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_deployed: Vec<NotDeployed>,
}

/// openshift/custom-resource-status' condition, as upstream reports them.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_heartbeat_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerImage {
    pub parent_kind: String,
    pub parent_name: String,
    pub name: String,
    pub image: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotDeployed {
    /// The spec key, e.g. `kubeSecondaryDNS`.
    pub component: String,
    pub reason: String,
}

/// The components this operator deploys, in render order (upstream's order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Component {
    Multus,
    MultusDynamicNetworks,
    LinuxBridge,
    KubeMacPool,
    Ovs,
    Nmstate,
    Macvtap,
    KubeSecondaryDns,
    KubevirtIpamController,
}

impl Component {
    pub const ALL: [Component; 9] = [
        Component::Multus,
        Component::MultusDynamicNetworks,
        Component::LinuxBridge,
        Component::KubeMacPool,
        Component::Ovs,
        Component::Nmstate,
        Component::Macvtap,
        Component::KubeSecondaryDns,
        Component::KubevirtIpamController,
    ];

    /// The spec key, also the `app.kubernetes.io/component` label value on every object.
    pub fn key(self) -> &'static str {
        match self {
            Component::Multus => "multus",
            Component::MultusDynamicNetworks => "multusDynamicNetworks",
            Component::LinuxBridge => "linuxBridge",
            Component::KubeMacPool => "kubeMacPool",
            Component::Ovs => "ovs",
            Component::Nmstate => "nmstate",
            Component::Macvtap => "macvtap",
            Component::KubeSecondaryDns => "kubeSecondaryDNS",
            Component::KubevirtIpamController => "kubevirtIpamController",
        }
    }

    pub fn from_key(key: &str) -> Option<Component> {
        Component::ALL.into_iter().find(|c| c.key() == key)
    }
}

impl NetworkAddonsConfigSpec {
    /// The components this spec turns on, in render order.
    pub fn components(&self) -> Vec<Component> {
        Component::ALL
            .into_iter()
            .filter(|c| match c {
                Component::Multus => self.multus.is_some(),
                Component::MultusDynamicNetworks => self.multus_dynamic_networks.is_some(),
                Component::LinuxBridge => self.linux_bridge.is_some(),
                Component::KubeMacPool => self.kube_mac_pool.is_some(),
                Component::Ovs => self.ovs.is_some(),
                Component::Nmstate => self.nmstate.is_some(),
                Component::Macvtap => self.macvtap.is_some(),
                Component::KubeSecondaryDns => self.kube_secondary_dns.is_some(),
                Component::KubevirtIpamController => self.kubevirt_ipam_controller.is_some(),
            })
            .collect()
    }

    /// The components this spec turns on that can run on `cluster`, in render order.
    pub fn deployed_components(&self, cluster: &ClusterInfo) -> Vec<Component> {
        self.components()
            .into_iter()
            .filter(|c| match c {
                Component::KubevirtIpamController => cluster.issues_serving_certificates(),
                Component::Multus | Component::MultusDynamicNetworks | Component::Macvtap => {
                    !cluster.openshift
                }
                // Two handlers would apply the same policies to a node at once.
                Component::Nmstate => cluster.foreign_nmstate.is_none(),
                _ => true,
            })
            .collect()
    }

    /// What the spec asks for that this operator does not deploy on `cluster`, and why: the
    /// status's `notDeployed` list.
    pub fn not_deployed(&self, cluster: &ClusterInfo) -> Vec<NotDeployed> {
        self.withheld(cluster)
            .into_iter()
            .map(|w| NotDeployed {
                component: w.component.key().to_string(),
                reason: w.message,
            })
            .collect()
    }

    /// Each component the spec turns on that is not deployed on `cluster`, with the reason its
    /// own condition gives and the explanation.
    pub fn withheld(&self, cluster: &ClusterInfo) -> Vec<Withheld> {
        let on = self.components();
        let mut out = Vec::new();
        let mut note = |component: Component, when: bool, reason: &'static str, message: &str| {
            if when && on.contains(&component) {
                out.push(Withheld {
                    component,
                    reason,
                    message: message.to_string(),
                });
            }
        };
        // Upstream refuses these on OpenShift (its network operator runs multus itself); here
        // the rest of the configuration still applies.
        note(
            Component::Multus,
            cluster.openshift,
            NOT_DEPLOYED,
            "not deployed on OpenShift: its cluster network operator runs multus",
        );
        note(
            Component::MultusDynamicNetworks,
            cluster.openshift,
            NOT_DEPLOYED,
            "not supported on OpenShift",
        );
        note(
            Component::Macvtap,
            cluster.openshift,
            NOT_DEPLOYED,
            "not supported on OpenShift",
        );
        note(
            Component::KubevirtIpamController,
            !cluster.issues_serving_certificates(),
            NOT_DEPLOYED,
            "its webhook needs a serving certificate, which cert-manager issues on clusters without OpenShift's service CA: install cert-manager (no certificates.cert-manager.io and issuers.cert-manager.io here) and it is deployed",
        );
        if let Some(foreign) = cluster.foreign_nmstate {
            note(
                Component::Nmstate,
                true,
                UPSTREAM_INSTALLED,
                &format!(
                    "kubernetes-nmstate is already installed ({}); it keeps serving the policies, and ours is deployed once it is removed",
                    foreign.describe()
                ),
            );
        }
        out
    }
}

/// The reason of a component's condition when it cannot be deployed on this cluster.
pub const NOT_DEPLOYED: &str = "NotDeployed";
/// The reason of a component's condition when another installation of it already runs.
pub const UPSTREAM_INSTALLED: &str = "UpstreamInstalled";

/// A component the spec turns on and this operator does not deploy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Withheld {
    pub component: Component,
    /// The reason of its condition: [`NOT_DEPLOYED`] or [`UPSTREAM_INSTALLED`].
    pub reason: &'static str,
    /// Why, for people: the condition's message and the `notDeployed` entry.
    pub message: String,
}
