//! Extra networks as users attach them: a NetworkAttachmentDefinition, and pods that name it in
//! `k8s.v1.cni.cncf.io/networks`. Multus, deployed by the operator (`multus: {}`) from its
//! source-built thick image, reads the annotation, calls our plugins with the NAD's config (the
//! annotation's `ips` and `mac` as `runtimeConfig`), names the pod's first extra interface
//! `net1`, and writes what our plugins returned in the pod's `k8s.v1.cni.cncf.io/network-status`.

use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::{json, Value};

use kube_tier::daemon::wait_for;
use kube_tier::image::BUSYBOX_IMAGE;

use crate::{check, Ctx};

pub use kube_tier::operator::{MULTUS_CONF, MULTUS_DS};
/// The interface Multus gives a pod's first extra network.
pub const NET1: &str = "net1";
const NETWORKS: &str = "k8s.v1.cni.cncf.io/networks";
const NETWORK_STATUS: &str = "k8s.v1.cni.cncf.io/network-status";

/// Waits until Multus' daemon is rolled out and its config is every node's first, so that the
/// next pod on any node goes through it.
pub fn wait_multus(ctx: &Ctx) -> Result<()> {
    ctx.cluster.wait_multus()
}

/// A conflist named `name`: `plugin` with `ipam`, then our tuning (which takes the
/// annotation's `mac`, as the walkthrough's KubeMacPool gives it).
pub fn attachment_config(name: &str, plugin: Value, ipam: Value) -> Value {
    let mut first = plugin;
    first["ipam"] = ipam;
    json!({
        "cniVersion": "0.3.1",
        "name": name,
        "plugins": [first, {"type": "tuning", "capabilities": {"mac": true}}],
    })
}

/// IPAM by the addresses the pod's annotation asks for (`ips`), Debian's `static` plugin:
/// one NAD serves both nodes without two of them handing out one address.
pub fn static_ipam() -> Value {
    json!({"type": "static"})
}

/// The capability that lets the annotation's `ips` reach `plugin`'s IPAM.
pub fn with_ips(mut plugin: Value) -> Value {
    plugin["capabilities"] = json!({"ips": true});
    plugin
}

/// A NetworkAttachmentDefinition `name` in `default` carrying `config`, for `kubectl apply`.
pub fn nad(name: &str, config: &Value) -> String {
    nad_in("default", name, config)
}

/// A NetworkAttachmentDefinition `namespace/name` carrying `config`.
pub fn nad_in(namespace: &str, name: &str, config: &Value) -> String {
    json!({
        "apiVersion": "k8s.cni.cncf.io/v1",
        "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"config": config.to_string()},
    })
    .to_string()
}

/// Pod `name` of `default` pinned to `node`, asking for `networks` (the annotation's JSON form).
pub fn attached_pod_manifest(name: &str, node: &str, networks: &Value) -> String {
    attached_pod_manifest_in("default", name, node, networks)
}

/// Pod `namespace/name` pinned to `node`, asking for `networks`.
pub fn attached_pod_manifest_in(
    namespace: &str,
    name: &str,
    node: &str,
    networks: &Value,
) -> String {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"kube-tier": "net"},
            "annotations": {NETWORKS: networks.to_string()},
        },
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "main",
                "image": BUSYBOX_IMAGE,
                "imagePullPolicy": "IfNotPresent",
                "command": ["/bin/sleep", "3600"],
            }],
        },
    })
    .to_string()
}

/// A pod's extra interface as Multus reported it and as the pod sees it.
#[derive(Debug, Clone)]
pub struct Attachment {
    /// The first IPv4 address, without its prefix length.
    pub ip: String,
    pub mac: String,
}

/// Creates pod `name` on `node` asking for `networks` and waits until it runs; its `net1` as
/// `network-status` reports it, checked against the interface in the pod.
pub fn attached_pod(ctx: &Ctx, name: &str, node: &str, networks: &Value) -> Result<Attachment> {
    ctx.apply(&attached_pod_manifest(name, node, networks))?;
    wait_attached(ctx, name)
}

/// Waits until pod `name` of `default` runs with a `network-status`; its `net1` as reported
/// there, checked against the interface in the pod.
pub fn wait_attached(ctx: &Ctx, name: &str) -> Result<Attachment> {
    wait_attached_in(ctx, "default", name)
}

/// [`wait_attached`] for pod `namespace/name`. What the pod shows is compared until it agrees
/// with `network-status`: after a node's reboot the pod reads Running with its old status
/// before its new sandbox is up.
pub fn wait_attached_in(ctx: &Ctx, namespace: &str, name: &str) -> Result<Attachment> {
    wait_for(
        &format!("pod {namespace}/{name} running with the {NET1} its network-status names"),
        Duration::from_secs(120),
        || {
            let pod = ctx.get(&["get", "pod", name, "-n", namespace])?;
            if pod["status"]["phase"] != "Running" {
                return Ok(None);
            }
            let Some(status) = network_status(&pod) else {
                return Ok(None);
            };
            let net1 = status
                .iter()
                .find(|s| s["interface"] == NET1)
                .with_context(|| format!("{name}'s network-status names no {NET1}: {status:?}"))?;
            let attachment = Attachment {
                ip: net1["ips"][0]
                    .as_str()
                    .with_context(|| format!("{name}'s {NET1} has no address: {net1}"))?
                    .to_string(),
                mac: net1["mac"].as_str().unwrap_or_default().to_string(),
            };
            let seen = ctx.kubectl(&[
                "exec",
                "-n",
                namespace,
                name,
                "--",
                "sh",
                "-c",
                &format!("ip -o link show {NET1}; ip -o addr show {NET1}"),
            ])?;
            check(
                seen.contains(&format!(" {}/", attachment.ip))
                    && seen.contains(&format!("link/ether {}", attachment.mac)),
                || format!("{name}'s {NET1} is not what network-status says ({net1}):\n{seen}"),
            )?;
            Ok(Some(attachment))
        },
    )
    .with_context(|| format!("pod {name}'s events: {}", events_of(ctx, namespace, name)))
}

/// The pod's `k8s.v1.cni.cncf.io/network-status`, once Multus has written it.
pub fn network_status(pod: &Value) -> Option<Vec<Value>> {
    let text = pod["metadata"]["annotations"][NETWORK_STATUS].as_str()?;
    serde_json::from_str(text).ok()
}

/// The reasons and messages of the events about pod `namespace/name`, one a line.
pub fn events_of(ctx: &Ctx, namespace: &str, name: &str) -> String {
    ctx.kubectl(&[
        "get",
        "events",
        "-n",
        namespace,
        "--field-selector",
        &format!("involvedObject.name={name}"),
        "-o",
        "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}",
    ])
    .unwrap_or_else(|e| format!("{e:#}"))
}

/// Deletes the NetworkAttachmentDefinitions `names` of `default`.
pub fn delete_nads(ctx: &Ctx, names: &[&str]) -> Result<()> {
    for name in names {
        ctx.kubectl(&[
            "delete",
            "network-attachment-definitions",
            "-n",
            "default",
            name,
            "--ignore-not-found",
        ])?;
    }
    Ok(())
}

/// `ping -c 2` from pod `namespace/pod` to `ip`: whether both answers came.
pub fn pings(ctx: &Ctx, namespace: &str, pod: &str, ip: &str) -> bool {
    ctx.kubectl(&[
        "exec", "-n", namespace, pod, "--", "ping", "-c", "2", "-W", "2", ip,
    ])
    .is_ok_and(|out| out.contains(" 0% packet loss"))
}

/// The part of `text` around `words`, for a line that quotes a long event: what comes before
/// the words in the message names the sandbox and the shim, which says little.
pub fn around(text: &str, words: &str) -> String {
    let Some(at) = text.find(words) else {
        return text.to_string();
    };
    let start = text[..at]
        .char_indices()
        .rev()
        .nth(80)
        .map_or(0, |(i, _)| i);
    let end = text[at..]
        .char_indices()
        .nth(words.len() + 120)
        .map_or(text.len(), |(i, _)| at + i);
    format!("…{}…", &text[start..end])
}
