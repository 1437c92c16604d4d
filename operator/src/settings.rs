//! What the operator's own Deployment sets through its environment: the namespace components go
//! to, the images, the node's CNI directories, the version stamped on every object and the pod's
//! own name.
//!
//! As upstream's Deployment does, `OPERAND_NAMESPACE` (and `OPERATOR_NAMESPACE`) and `POD_NAME`
//! come from the downward API: the components go to the namespace the operator runs in.

use std::env;

pub const DEFAULT_NAMESPACE: &str = "cluster-network-addons";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// `OPERAND_NAMESPACE`: where every namespaced object goes.
    pub namespace: String,
    /// `OPERATOR_VERSION`: stamped on every object and reported in the status.
    pub operator_version: String,
    /// `PLUGINS_IMAGE`: the image with `/cni-installer` and the plugins in `/plugins/`.
    pub plugins_image: String,
    /// `MULTUS_IMAGE`: upstream multus (thick plugin).
    pub multus_image: String,
    /// `KUBEMACPOOL_IMAGE`: upstream kubemacpool.
    pub kubemacpool_image: String,
    /// `MACVTAP_CNI_IMAGE`: upstream macvtap-cni, for its device plugin.
    pub macvtap_cni_image: String,
    /// `CNI_BIN_DIR`: the node's plugin directory (`/var/lib/cni/bin` on OpenShift).
    pub cni_bin_dir: String,
    /// `CNI_CONF_DIR`: the node's network config directory.
    pub cni_conf_dir: String,
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
            cni_bin_dir: "/opt/cni/bin".to_string(),
            cni_conf_dir: "/etc/cni/net.d".to_string(),
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
        set(&mut s.cni_bin_dir, "CNI_BIN_DIR");
        set(&mut s.cni_conf_dir, "CNI_CONF_DIR");
        s
    }

    fn with_upstream_image_defaults(mut self) -> Settings {
        self.multus_image = crate::render::images::MULTUS.to_string();
        self.kubemacpool_image = crate::render::images::KUBEMACPOOL.to_string();
        self.macvtap_cni_image = crate::render::images::MACVTAP_CNI.to_string();
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
            ("CNI_BIN_DIR", literal(&self.cni_bin_dir)),
            ("CNI_CONF_DIR", literal(&self.cni_conf_dir)),
        ]
    }
}
