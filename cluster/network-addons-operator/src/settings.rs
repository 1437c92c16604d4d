//! What the operator's own Deployment sets through its environment: the namespace components go
//! to, the images, the node's CNI directories, the version stamped on every object and the pod's
//! own name.
//!
//! As upstream's Deployment does, `OPERAND_NAMESPACE` (and `OPERATOR_NAMESPACE`) and `POD_NAME`
//! come from the downward API: the components go to the namespace the operator runs in.

use std::env;
use std::time::Duration;

use net_types::{format_go_duration, parse_go_duration};

pub const DEFAULT_NAMESPACE: &str = "cluster-network-addons";
pub const DEFAULT_CNI_BIN_DIR: &str = "/opt/cni/bin";
pub const DEFAULT_CNI_CONF_DIR: &str = "/etc/cni/net.d";
/// OpenShift 4's CNI directories, used there unless `CNI_BIN_DIR`/`CNI_CONF_DIR` name others.
pub const OPENSHIFT_CNI_BIN_DIR: &str = "/var/lib/cni/bin";
pub const OPENSHIFT_CNI_CONF_DIR: &str = "/etc/kubernetes/cni/net.d";
/// How often the node agents collect what lost DELs left: often enough that a node rebooted
/// or a runtime restarted is clean within minutes, rarely enough to cost nothing.
pub const DEFAULT_GC_INTERVAL: Duration = Duration::from_secs(10 * 60);
/// Upstream kubernetes-nmstate's probe timeout.
pub const DEFAULT_NMSTATE_PROBE_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a rollout may go without any change of its status before it counts as hung.
pub const DEFAULT_PROGRESS_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// The upstream operator's variables for the images of linux-bridge, its marker and ovs-cni:
/// here `PLUGINS_IMAGE` carries our plugins, installer and marker instead, so these are not
/// used; the operator says so when it starts.
pub const SUPERSEDED: [&str; 4] = [
    "LINUX_BRIDGE_IMAGE",
    "LINUX_BRIDGE_MARKER_IMAGE",
    "OVS_CNI_IMAGE",
    "OVS_MARKER_IMAGE",
];

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// `OPERAND_NAMESPACE`: where every namespaced object goes.
    pub namespace: String,
    /// `OPERATOR_VERSION`: stamped on every object and reported in the status.
    pub operator_version: String,
    /// `PLUGINS_IMAGE`: the image with `/node-agent` and the plugins in `/plugins/`.
    pub plugins_image: String,
    /// `MULTUS_IMAGE`: upstream multus (thick plugin).
    pub multus_image: String,
    /// `KUBEMACPOOL_IMAGE`: empty (the default) runs our allocator, `/kubemacpool` of the
    /// plugins image; an image (upstream's is [`crate::images::KUBEMACPOOL`]) runs
    /// upstream KubeMacPool from it.
    pub kubemacpool_image: String,
    /// `MACVTAP_CNI_IMAGE`: upstream macvtap-cni, for its device plugin.
    pub macvtap_cni_image: String,
    /// `MULTUS_DYNAMIC_NETWORKS_CONTROLLER_IMAGE`: upstream multus-dynamic-networks-controller.
    pub multus_dynamic_networks_image: String,
    /// `KUBE_SECONDARY_DNS_IMAGE`: upstream kube-secondary-dns's status monitor.
    pub kube_secondary_dns_image: String,
    /// `CORE_DNS_IMAGE`: the CoreDNS serving kube-secondary-dns's zone.
    pub core_dns_image: String,
    /// `KUBEVIRT_IPAM_CONTROLLER_IMAGE`: upstream kubevirt-ipam-controller.
    pub kubevirt_ipam_controller_image: String,
    /// Variables of the upstream operator that name images our plugins image replaces
    /// ([`SUPERSEDED`]), as found set: accepted so its operator.yaml still works, and logged.
    pub superseded: Vec<(String, String)>,
    /// `MONITORING_NAMESPACE`: where the monitoring stack's service account lives.
    pub monitoring_namespace: String,
    /// `MONITORING_SERVICE_ACCOUNT`: the service account Prometheus scrapes with.
    pub monitoring_service_account: String,
    /// `RUNBOOK_URL_TEMPLATE`: the alerts' runbook links, `%s` replaced by the alert's name.
    pub runbook_url_template: String,
    /// `CNI_BIN_DIR`: the node's plugin directory (`/var/lib/cni/bin` on OpenShift).
    pub cni_bin_dir: String,
    /// `CNI_CONF_DIR`: the node's network config directory.
    pub cni_conf_dir: String,
    /// `CRI_SOCKET`: the node's container runtime socket, for the agents' garbage collection;
    /// empty: containerd's, else CRI-O's.
    pub cri_socket: String,
    /// `GC_INTERVAL` (a duration: `10m`, `90s`; `0` turns collection off): how often the node
    /// agents collect what lost DELs left.
    pub gc_interval: Duration,
    /// `GC_METRICS_PORT`: where the node agents serve their garbage collection's metrics on
    /// their node (the `linuxBridge` agents on this port, the `ovs` agents on the next); none
    /// when unset, as a port of the node may be taken.
    pub gc_metrics_port: Option<u16>,
    /// `PROGRESS_TIMEOUT` (a duration): how long a DaemonSet or Deployment may roll out without
    /// any change of its status before the configuration is Degraded (`RolloutHung`). Rollouts
    /// waiting for images that cannot be pulled, or for nodes that are down, never count.
    pub progress_timeout: Duration,
    /// `NMSTATE_PROBE_TIMEOUT` (a duration): how long the nmstate handler's probes may take to
    /// pass after an apply before it is rolled back (upstream's fixed 120 s by default).
    pub nmstate_probe_timeout: Duration,
    /// `POD_NAME` (else `HOSTNAME`): names this operator in its events (`reportingInstance`).
    pub pod_name: String,
}

/// The value of one variable of the operator's Deployment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EnvValue {
    Literal(String),
    /// A field of the pod, through the downward API (`metadata.namespace`).
    Field(&'static str),
}

impl Settings {
    /// Every value at its default, independent of the environment (for `render` and tests).
    pub fn defaults() -> Settings {
        let version = env!("CARGO_PKG_VERSION").to_string();
        Settings {
            namespace: DEFAULT_NAMESPACE.to_string(),
            plugins_image: format!("localhost/secondary-cni/plugins:v{version}"),
            operator_version: version,
            multus_image: String::new(),
            kubemacpool_image: String::new(),
            macvtap_cni_image: String::new(),
            multus_dynamic_networks_image: String::new(),
            kube_secondary_dns_image: String::new(),
            core_dns_image: String::new(),
            kubevirt_ipam_controller_image: String::new(),
            superseded: Vec::new(),
            monitoring_namespace: "monitoring".to_string(),
            monitoring_service_account: "prometheus-k8s".to_string(),
            runbook_url_template: "https://kubevirt.io/monitoring/runbooks/%s".to_string(),
            cni_bin_dir: DEFAULT_CNI_BIN_DIR.to_string(),
            cni_conf_dir: DEFAULT_CNI_CONF_DIR.to_string(),
            cri_socket: String::new(),
            gc_interval: DEFAULT_GC_INTERVAL,
            gc_metrics_port: None,
            progress_timeout: DEFAULT_PROGRESS_TIMEOUT,
            nmstate_probe_timeout: DEFAULT_NMSTATE_PROBE_TIMEOUT,
            pod_name: String::new(),
        }
        .with_upstream_image_defaults()
    }

    /// The defaults, overridden by whichever variables are set and non-empty. The namespace is
    /// `OPERAND_NAMESPACE`, else `OPERATOR_NAMESPACE`, else the default.
    pub fn from_env() -> Settings {
        let mut s = Settings::defaults();
        let set = |target: &mut String, var: &str| {
            if let Ok(v) = env::var(var) {
                if !v.is_empty() {
                    *target = v;
                }
            }
        };
        set(&mut s.namespace, "OPERATOR_NAMESPACE");
        set(&mut s.namespace, "OPERAND_NAMESPACE");
        set(&mut s.pod_name, "HOSTNAME");
        set(&mut s.pod_name, "POD_NAME");
        set(&mut s.operator_version, "OPERATOR_VERSION");
        set(&mut s.plugins_image, "PLUGINS_IMAGE");
        set(&mut s.multus_image, "MULTUS_IMAGE");
        set(&mut s.kubemacpool_image, "KUBEMACPOOL_IMAGE");
        set(&mut s.macvtap_cni_image, "MACVTAP_CNI_IMAGE");
        set(
            &mut s.multus_dynamic_networks_image,
            "MULTUS_DYNAMIC_NETWORKS_CONTROLLER_IMAGE",
        );
        set(&mut s.kube_secondary_dns_image, "KUBE_SECONDARY_DNS_IMAGE");
        set(&mut s.core_dns_image, "CORE_DNS_IMAGE");
        set(
            &mut s.kubevirt_ipam_controller_image,
            "KUBEVIRT_IPAM_CONTROLLER_IMAGE",
        );
        s.superseded = SUPERSEDED
            .iter()
            .filter_map(|var| {
                env::var(var)
                    .ok()
                    .filter(|v| !v.is_empty())
                    .map(|v| (var.to_string(), v))
            })
            .collect();
        set(&mut s.monitoring_namespace, "MONITORING_NAMESPACE");
        set(
            &mut s.monitoring_service_account,
            "MONITORING_SERVICE_ACCOUNT",
        );
        set(&mut s.runbook_url_template, "RUNBOOK_URL_TEMPLATE");
        set(&mut s.cni_bin_dir, "CNI_BIN_DIR");
        set(&mut s.cni_conf_dir, "CNI_CONF_DIR");
        set(&mut s.cri_socket, "CRI_SOCKET");
        if let Ok(v) = env::var("GC_INTERVAL") {
            match parse_go_duration(&v) {
                Ok(interval) => s.gc_interval = interval,
                // Not fatal: the agents still collect, at the default interval.
                Err(e) if !v.is_empty() => {
                    tracing::warn!("GC_INTERVAL: {e}; the default {DEFAULT_GC_INTERVAL:?} is used")
                }
                Err(_) => {}
            }
        }
        if let Ok(v) = env::var("GC_METRICS_PORT") {
            match v.parse::<u16>() {
                // The ovs agents take the next port.
                Ok(port) if (1..u16::MAX).contains(&port) => s.gc_metrics_port = Some(port),
                _ if v.is_empty() => {}
                _ => tracing::warn!(
                    "GC_METRICS_PORT={v:?} is not a port from 1 to 65534; the agents serve no metrics"
                ),
            }
        }
        if let Ok(v) = env::var("NMSTATE_PROBE_TIMEOUT") {
            match parse_go_duration(&v) {
                Ok(timeout) if !timeout.is_zero() => s.nmstate_probe_timeout = timeout,
                _ if v.is_empty() => {}
                _ => tracing::warn!(
                    "NMSTATE_PROBE_TIMEOUT={v:?} is not a positive duration; the default \
                     {DEFAULT_NMSTATE_PROBE_TIMEOUT:?} is used"
                ),
            }
        }
        if let Ok(v) = env::var("PROGRESS_TIMEOUT") {
            match parse_go_duration(&v) {
                Ok(timeout) if !timeout.is_zero() => s.progress_timeout = timeout,
                _ if v.is_empty() => {}
                _ => tracing::warn!(
                    "PROGRESS_TIMEOUT={v:?} is not a positive duration; the default \
                     {DEFAULT_PROGRESS_TIMEOUT:?} is used"
                ),
            }
        }
        s
    }

    fn with_upstream_image_defaults(mut self) -> Settings {
        self.multus_image = crate::images::MULTUS.to_string();
        self.macvtap_cni_image = crate::images::MACVTAP_CNI.to_string();
        self.multus_dynamic_networks_image =
            crate::images::MULTUS_DYNAMIC_NETWORKS_CONTROLLER.to_string();
        self.kube_secondary_dns_image = crate::images::KUBE_SECONDARY_DNS.to_string();
        self.core_dns_image = crate::images::CORE_DNS.to_string();
        self.kubevirt_ipam_controller_image = crate::images::KUBEVIRT_IPAM_CONTROLLER.to_string();
        self
    }

    /// The environment variables of the operator's Deployment, with their defaults (deploy/):
    /// the namespaces and the pod name from the downward API, as upstream sets them.
    pub fn env_vars(&self) -> Vec<(&'static str, EnvValue)> {
        let literal = |v: &String| EnvValue::Literal(v.clone());
        vec![
            ("OPERATOR_NAMESPACE", EnvValue::Field("metadata.namespace")),
            ("OPERAND_NAMESPACE", EnvValue::Field("metadata.namespace")),
            ("POD_NAME", EnvValue::Field("metadata.name")),
            ("OPERATOR_VERSION", literal(&self.operator_version)),
            ("PLUGINS_IMAGE", literal(&self.plugins_image)),
            ("MULTUS_IMAGE", literal(&self.multus_image)),
            ("KUBEMACPOOL_IMAGE", literal(&self.kubemacpool_image)),
            ("MACVTAP_CNI_IMAGE", literal(&self.macvtap_cni_image)),
            (
                "MULTUS_DYNAMIC_NETWORKS_CONTROLLER_IMAGE",
                literal(&self.multus_dynamic_networks_image),
            ),
            (
                "KUBE_SECONDARY_DNS_IMAGE",
                literal(&self.kube_secondary_dns_image),
            ),
            ("CORE_DNS_IMAGE", literal(&self.core_dns_image)),
            (
                "KUBEVIRT_IPAM_CONTROLLER_IMAGE",
                literal(&self.kubevirt_ipam_controller_image),
            ),
            ("MONITORING_NAMESPACE", literal(&self.monitoring_namespace)),
            (
                "MONITORING_SERVICE_ACCOUNT",
                literal(&self.monitoring_service_account),
            ),
            ("RUNBOOK_URL_TEMPLATE", literal(&self.runbook_url_template)),
            ("CNI_BIN_DIR", literal(&self.cni_bin_dir)),
            ("CNI_CONF_DIR", literal(&self.cni_conf_dir)),
            ("CRI_SOCKET", literal(&self.cri_socket)),
            (
                "GC_INTERVAL",
                EnvValue::Literal(format_go_duration(self.gc_interval)),
            ),
            (
                "GC_METRICS_PORT",
                EnvValue::Literal(
                    self.gc_metrics_port
                        .map(|p| p.to_string())
                        .unwrap_or_default(),
                ),
            ),
            (
                "PROGRESS_TIMEOUT",
                EnvValue::Literal(format_go_duration(self.progress_timeout)),
            ),
            (
                "NMSTATE_PROBE_TIMEOUT",
                EnvValue::Literal(format_go_duration(self.nmstate_probe_timeout)),
            ),
        ]
    }
}
