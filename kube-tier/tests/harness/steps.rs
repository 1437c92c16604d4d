//! The steps the scenarios share: the operator deployed and scaled, its DaemonSets' pods and
//! rollouts, pods left Terminating, and what the nodes' network is.

use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::Value;

use kube_tier::cluster::{plugins_image_default, CONTAINERD_SOCK};
use kube_tier::daemon::wait_for;
use kube_tier::image::MULTUS_IMAGE;

use super::ctx::Ctx;
use crate::scenarios;

pub const NAMESPACE: &str = "cluster-network-addons";
pub const OPERATOR: &str = "network-addons-operator";

impl Ctx {
    /// deploy/ applied as operator/README.md says, the operator told the nodes' CRI socket and
    /// a short GC interval, and its Deployment available.
    pub fn ensure_operator(&self) -> Result<()> {
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
            let path = self.repo.join("deploy").join(file);
            let path = path.to_string_lossy();
            // Kubernetes 1.20 has no CEL: its kubectl refuses the CRD's rules unless told not to
            // validate, and its API server drops them (operator/README.md).
            let mut args = vec!["apply", "-f", &path];
            if file.ends_with(".crd.yaml") {
                args.push("--validate=false");
            }
            self.kubectl(&args)
                .with_context(|| format!("kubectl {} (deploy/{file})", args.join(" ")))?;
        }
        // The nodes' CNI directories are the defaults; their CRI socket is named, the GC runs
        // sooner than by default, and its metrics are served. Multus is the thick image built
        // from its source (upstream's cannot be pulled here), named as users name a mirror.
        let cri = format!("CRI_SOCKET={CONTAINERD_SOCK}");
        let multus = format!("MULTUS_IMAGE={MULTUS_IMAGE}");
        let gc = format!("GC_INTERVAL={}", scenarios::gc::AGENT_GC_INTERVAL);
        let metrics = format!("GC_METRICS_PORT={}", scenarios::gc::AGENT_METRICS_PORT);
        self.kubectl(&[
            "set",
            "env",
            &format!("deployment/{OPERATOR}"),
            "-n",
            NAMESPACE,
            &cri,
            &gc,
            &metrics,
            &multus,
        ])?;
        self.wait_rollout("deployment", OPERATOR)
    }

    /// Scales the operator's Deployment to `replicas` (deploy/ runs two).
    pub fn scale_operator(&self, replicas: u32) -> Result<()> {
        self.kubectl(&[
            "scale",
            &format!("deployment/{OPERATOR}"),
            "-n",
            NAMESPACE,
            &format!("--replicas={replicas}"),
        ])
        .map(drop)
    }

    /// The pods of `daemonset` that are not being deleted.
    pub fn daemonset_pods(&self, daemonset: &str) -> Result<Vec<Value>> {
        let pods = self.get(&["get", "pods", "-n", NAMESPACE])?;
        Ok(pods["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| {
                p["metadata"]["ownerReferences"][0]["name"] == daemonset
                    && p["metadata"]["deletionTimestamp"].is_null()
            })
            .cloned()
            .collect())
    }

    /// The name of `daemonset`'s pod on `node`.
    pub fn daemonset_pod(&self, daemonset: &str, node: &str) -> Result<String> {
        self.daemonset_pods(daemonset)?
            .iter()
            .filter(|p| p["spec"]["nodeName"] == node)
            .find_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
            .with_context(|| format!("no pod of daemonset {daemonset} on {node}"))
    }

    /// Waits until the pod template of DaemonSet `daemonset` lists `toleration` (`listed`) or
    /// no longer lists it, as the operator applies a placement change; returns the DaemonSet.
    /// The toleration is compared whole: the node agents' default one has `operator: Exists`
    /// too.
    pub fn wait_toleration(
        &self,
        daemonset: &str,
        toleration: &Value,
        listed: bool,
    ) -> Result<Value> {
        let what = if listed {
            "to tolerate"
        } else {
            "no longer to tolerate"
        };
        wait_for(
            &format!("daemonset {daemonset} {what} {toleration}"),
            Duration::from_secs(90),
            || {
                let ds = self.get(&["get", "daemonset", daemonset, "-n", NAMESPACE])?;
                let now = ds["spec"]["template"]["spec"]["tolerations"]
                    .as_array()
                    .is_some_and(|t| t.contains(toleration));
                Ok((now == listed).then_some(ds))
            },
        )
    }

    /// Waits for the object to exist, then `kubectl rollout status`.
    pub fn wait_rollout(&self, kind: &str, name: &str) -> Result<()> {
        wait_for(
            &format!("{kind} {name} to exist"),
            Duration::from_secs(90),
            || Ok(self.exists(kind, name, Some(NAMESPACE))?.then_some(())),
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
    /// Deletes for good each of `pods` that is being deleted while its node's containerd runs
    /// none of its containers any more: kubelet 1.20.2 can leave such a pod Terminating until
    /// its next collection of sandboxes, a minute later (kubernetes/kubernetes#97288).
    pub fn delete_stopped_pods(&self, pods: &[Value]) -> Result<()> {
        for pod in pods {
            if pod["metadata"]["deletionTimestamp"].is_null() {
                continue;
            }
            let node = pod["spec"]["nodeName"].as_str().unwrap_or_default();
            let Some(index) = self.cluster.nodes().iter().position(|n| n.name() == node) else {
                continue;
            };
            let namespace = pod["metadata"]["namespace"].as_str().unwrap_or_default();
            let name = pod["metadata"]["name"].as_str().unwrap_or_default();
            if self.cluster.running_containers(index, namespace, name)? == 0 {
                self.kubectl(&[
                    "delete",
                    "pod",
                    name,
                    "-n",
                    namespace,
                    "--force",
                    "--grace-period=0",
                    "--ignore-not-found",
                ])?;
            }
        }
        Ok(())
    }
}

/// Every node's pod subnet starts so.
pub const POD_NETWORK_PREFIX: &str = "10.244.";
/// The nodes' CNI plugin directory, in their own view (containerd's `bin_dir`).
pub const NODE_CNI_BIN_DIR: &str = "/opt/cni/bin";

/// The first three octets (and the dot) of node01's pod subnet.
pub fn pod_subnet_prefix(ctx: &Ctx) -> String {
    ctx.node01()
        .pod_subnet()
        .trim_end_matches("0/24")
        .to_string()
}

pub fn plugins_image(ctx: &Ctx) -> Result<String> {
    plugins_image_default(&ctx.repo)
}
