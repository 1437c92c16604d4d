//! The operator on a tier cluster, deployed as cluster/network-addons-operator/README.md tells users to, and the
//! Multus it runs: what the cluster tests and the benchmarks both start from.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::daemon::wait_for;
use crate::Cluster;

/// The namespace deploy/ puts the operator and its components in.
pub const NAMESPACE: &str = "cluster-network-addons";
/// The operator's Deployment.
pub const OPERATOR: &str = "network-addons-operator";
/// The DaemonSet of Multus' thick daemon.
pub const MULTUS_DS: &str = "multus";
/// The config Multus' daemon writes in front of the node's pod network, in the node's view.
pub const MULTUS_CONF: &str = "/etc/cni/net.d/00-multus.conf";

impl Cluster {
    /// deploy/ applied as cluster/network-addons-operator/README.md says, then the operator's Deployment given `env`
    /// (`NAME=value`, as `kubectl set env` takes them) and rolled out. A Deployment already
    /// there is only waited for.
    pub fn deploy_operator(&self, repo: &Path, env: &[String]) -> Result<()> {
        if self
            .kubectl(&["get", "deployment", OPERATOR, "-n", NAMESPACE])
            .is_ok()
        {
            return self.wait_rollout("deployment", OPERATOR);
        }
        for file in [
            "namespace.yaml",
            "network-addons-config.crd.yaml",
            "operator.yaml",
        ] {
            let path = repo.join("deploy").join(file);
            let path = path.to_string_lossy();
            // Kubernetes 1.20 has no CEL: its kubectl refuses the CRD's rules unless told not to
            // validate, and its API server drops them (cluster/network-addons-operator/README.md).
            let mut args = vec!["apply", "-f", &path];
            if file.ends_with(".crd.yaml") {
                args.push("--validate=false");
            }
            self.kubectl(&args)
                .with_context(|| format!("kubectl {} (deploy/{file})", args.join(" ")))?;
        }
        let deployment = format!("deployment/{OPERATOR}");
        let mut args = vec!["set", "env", &deployment, "-n", NAMESPACE];
        args.extend(env.iter().map(String::as_str));
        self.kubectl(&args)?;
        self.wait_rollout("deployment", OPERATOR)
    }

    /// Waits for the object in the operator's namespace to exist, then `kubectl rollout
    /// status`.
    pub fn wait_rollout(&self, kind: &str, name: &str) -> Result<()> {
        wait_for(
            &format!("{kind} {name} to exist"),
            Duration::from_secs(90),
            || {
                let found = self.kubectl(&[
                    "get",
                    kind,
                    name,
                    "-n",
                    NAMESPACE,
                    "--ignore-not-found",
                    "-o",
                    "name",
                ])?;
                Ok((!found.trim().is_empty()).then_some(()))
            },
        )?;
        self.kubectl(&[
            "rollout",
            "status",
            &format!("{kind}/{name}"),
            "-n",
            NAMESPACE,
            "--timeout=180s",
        ])
        .map(drop)
        .with_context(|| format!("{kind} {name} did not roll out"))
    }

    /// Waits until Multus' daemon is rolled out and its config is every node's first, so that
    /// the next pod on any node goes through it.
    pub fn wait_multus(&self) -> Result<()> {
        self.wait_rollout("daemonset", MULTUS_DS)?;
        wait_for(
            "Multus' config in front of every node's pod network",
            Duration::from_secs(60),
            || {
                Ok(self
                    .nodes()
                    .iter()
                    .all(|n| n.host_path(MULTUS_CONF).exists())
                    .then_some(()))
            },
        )
    }
}
