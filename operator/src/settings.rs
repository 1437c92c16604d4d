//! What the operator's own Deployment sets through its environment: the namespace components go
//! to, the images, the node's CNI directories, the version stamped on every object and the pod's
//! own name.

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

    /// The defaults, overridden by whichever variables are set and non-empty.
    pub fn from_env() -> Settings {
        let mut s = Settings::defaults();
        let set = |target: &mut String, var: &str| {
            if let Ok(v) = env::var(var) {
                if !v.is_empty() {
                    *target = v;
                }
            }
        };
        set(&mut s.namespace, "OPERAND_NAMESPACE");
        set(&mut s.operator_version, "OPERATOR_VERSION");
        set(&mut s.plugins_image, "PLUGINS_IMAGE");
        set(&mut s.multus_image, "MULTUS_IMAGE");
        set(&mut s.kubemacpool_image, "KUBEMACPOOL_IMAGE");
        set(&mut s.macvtap_cni_image, "MACVTAP_CNI_IMAGE");
        set(&mut s.cni_bin_dir, "CNI_BIN_DIR");
        set(&mut s.cni_conf_dir, "CNI_CONF_DIR");
        set(&mut s.pod_name, "HOSTNAME");
        set(&mut s.pod_name, "POD_NAME");
        s
    }

    fn with_upstream_image_defaults(mut self) -> Settings {
        self.multus_image = crate::render::images::MULTUS.to_string();
        self.kubemacpool_image = crate::render::images::KUBEMACPOOL.to_string();
        self.macvtap_cni_image = crate::render::images::MACVTAP_CNI.to_string();
        self
    }

    /// The environment variables of the operator's Deployment, with their defaults (deploy/).
    pub fn env_vars(&self) -> Vec<(&'static str, String)> {
        vec![
            ("OPERAND_NAMESPACE", self.namespace.clone()),
            ("OPERATOR_VERSION", self.operator_version.clone()),
            ("PLUGINS_IMAGE", self.plugins_image.clone()),
            ("MULTUS_IMAGE", self.multus_image.clone()),
            ("KUBEMACPOOL_IMAGE", self.kubemacpool_image.clone()),
            ("MACVTAP_CNI_IMAGE", self.macvtap_cni_image.clone()),
            ("CNI_BIN_DIR", self.cni_bin_dir.clone()),
            ("CNI_CONF_DIR", self.cni_conf_dir.clone()),
        ]
    }
}
