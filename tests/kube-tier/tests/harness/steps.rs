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

pub use kube_tier::operator::{NAMESPACE, OPERATOR};

impl Ctx {
    /// deploy/ applied as cluster/network-addons-operator/README.md says, the operator told the nodes' CRI socket and
    /// a short GC interval, and its Deployment available.
    pub fn ensure_operator(&self) -> Result<()> {
        // The nodes' CNI directories are the defaults; their CRI socket is named, the GC runs
        // sooner than by default, and its metrics are served. Multus is the thick image built
        // from its source (upstream's cannot be pulled here), named as users name a mirror.
        self.cluster.deploy_operator(
            &self.repo,
            &[
                format!("CRI_SOCKET={CONTAINERD_SOCK}"),
                format!("GC_INTERVAL={}", scenarios::gc::AGENT_GC_INTERVAL),
                format!("GC_METRICS_PORT={}", scenarios::gc::AGENT_METRICS_PORT),
                format!("MULTUS_IMAGE={MULTUS_IMAGE}"),
            ],
        )
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
        self.cluster.wait_rollout(kind, name)
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
                self.force_delete_pod(namespace, name)?;
            }
        }
        Ok(())
    }

    /// Removes pod `name` from the API at once (`--force --grace-period=0`), without waiting
    /// for its kubelet, which cleans up after it; a pod already gone is no error.
    pub fn force_delete_pod(&self, namespace: &str, name: &str) -> Result<()> {
        self.kubectl(&[
            "delete",
            "pod",
            name,
            "-n",
            namespace,
            "--force",
            "--grace-period=0",
            "--ignore-not-found",
        ])
        .map(drop)
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
