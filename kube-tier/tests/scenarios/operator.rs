//! The operator in the cluster: deploy/ applied as the README says, the seed's
//! NetworkAddonsConfigs, what lands on the node, the status and the events.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::Value;

use kube_tier::daemon::wait_for;

use crate::{check, nac_condition, plugins_image, Ctx, NAMESPACE, OPERATOR};

/// The seed's first example: every component, `imagePullPolicy: Always`.
pub const FULL_SPEC: &str =
    "multus: {}\nmultusDynamicNetworks: {}\nlinuxBridge: {}\nkubeMacPool: {}\n\
ovs: {}\nmacvtap: {}\nkubeSecondaryDNS: {}\nkubevirtIpamController: {}\nimagePullPolicy: Always\n";
/// Our own components only.
pub const OWN_SPEC: &str = "linuxBridge: {}\novs: {}\n";

pub const LINUX_BRIDGE_DS: &str = "kube-cni-linux-bridge-plugin";
pub const OVS_DS: &str = "ovs-cni-amd64";

pub fn deploy_applies(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    let pods = ctx.get(&[
        "get",
        "pods",
        "-n",
        NAMESPACE,
        "-l",
        &format!("name={OPERATOR}"),
    ])?;
    let pod = pods["items"]
        .as_array()
        .and_then(|a| a.first())
        .context("no operator pod")?;
    check(pod["spec"]["serviceAccountName"] == OPERATOR, || {
        format!("the operator runs as {}", pod["spec"]["serviceAccountName"])
    })?;
    let image = pod["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap_or_default();
    check(image == plugins_image(ctx)?, || {
        format!("the operator runs image {image}")
    })?;
    check(
        pod["status"]["podIP"]
            .as_str()
            .is_some_and(|ip| ip.starts_with(crate::pod_subnet_prefix())),
        || {
            format!(
                "the operator pod's IP {} is not from our bridge's range",
                pod["status"]["podIP"]
            )
        },
    )
}

/// Deletes the NetworkAddonsConfig, if any, and waits until the garbage collector took its
/// objects (the applied record included), so the next test starts from a clean cluster.
pub fn reset(ctx: &Ctx) -> Result<()> {
    ctx.kubectl(&[
        "delete",
        "networkaddonsconfig",
        "cluster",
        "--ignore-not-found",
        "--timeout=60s",
    ])?;
    wait_for(
        "the previous config's objects to be collected",
        Duration::from_secs(120),
        || {
            let left = owned_objects(ctx)?;
            Ok(left.is_empty().then_some(()))
        },
    )
    .with_context(|| format!("left: {:?}", owned_objects(ctx).unwrap_or_default()))
}

/// Objects in the operand namespace or cluster-wide that carry the operator's component label.
pub fn owned_objects(ctx: &Ctx) -> Result<Vec<String>> {
    let out = ctx.kubectl(&[
        "get",
        "daemonsets,deployments,configmaps,services,serviceaccounts,clusterroles,clusterrolebindings",
        "-A", "-l", "networkaddonsoperator.network.kubevirt.io/version", "-o", "name",
    ])?;
    Ok(out.lines().map(str::to_string).collect())
}

pub fn full_cr_progressing(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    reset(ctx)?;
    ctx.apply_nac(FULL_SPEC)?;
    // Our DaemonSets run (their image pulled from the registry, `Always`); the upstream images
    // cannot be pulled here, so the config stays Progressing and says which.
    ctx.wait_rollout("daemonset", LINUX_BRIDGE_DS)?;
    ctx.wait_rollout("daemonset", OVS_DS)?;
    let nac = ctx.wait_nac("Progressing", "True", Duration::from_secs(120))?;
    let degraded = nac_condition(&nac, "Degraded");
    check(
        degraded.as_ref().is_none_or(|c| c["status"] != "True"),
        || format!("Degraded: {degraded:?}"),
    )?;
    let message = nac_condition(&nac, "Progressing")
        .map(|c| c["message"].to_string())
        .unwrap_or_default();
    wait_for(
        "the status to name the images that cannot be pulled",
        Duration::from_secs(120),
        || {
            let nac = ctx.nac()?;
            let msg = nac_condition(&nac, "Progressing")
                .map(|c| c["message"].to_string())
                .unwrap_or_default();
            Ok((msg.contains("multus")
                && msg.contains("kubemacpool")
                && msg.to_lowercase().contains("pull"))
            .then_some(()))
        },
    )
    .with_context(|| format!("Progressing said: {message}"))?;
    for ds in [LINUX_BRIDGE_DS, OVS_DS] {
        let d = ctx.get(&["get", "daemonset", ds, "-n", NAMESPACE])?;
        let images: BTreeSet<&str> = d["spec"]["template"]["spec"]["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["image"].as_str())
            .collect();
        check(
            images
                .iter()
                .all(|i| *i == plugins_image(ctx).unwrap_or_default()),
            || format!("{ds} runs {images:?}"),
        )?;
    }
    Ok(())
}

/// The bridge walkthrough's config (seed 004): multus, linuxBridge, nmstate, `Always`.
pub fn walkthrough_config(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    reset(ctx)?;
    ctx.apply_nac("multus: {}\nlinuxBridge: {}\nnmstate: {}\nimagePullPolicy: Always\n")?;
    ctx.wait_rollout("daemonset", LINUX_BRIDGE_DS)?;
    let nac = wait_for(
        "the status to say nmstate is not deployed",
        Duration::from_secs(90),
        || {
            let nac = ctx.nac()?;
            Ok(nac["status"]["notDeployed"]
                .to_string()
                .contains("nmstate")
                .then_some(nac))
        },
    )?;
    let degraded = nac_condition(&nac, "Degraded");
    check(
        degraded.as_ref().is_none_or(|c| c["status"] != "True"),
        || format!("Degraded: {degraded:?}"),
    )?;
    let multus = ctx.get(&["get", "daemonset", "multus", "-n", NAMESPACE])?;
    check(
        multus["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "Always",
        || "multus does not pull Always".into(),
    )
}

pub fn own_components_reach_available(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    reset(ctx)?;
    ctx.apply_nac(OWN_SPEC)?;
    ctx.kubectl_wait("Available", "240s")?;
    let nac = ctx.nac()?;
    for t in ["Progressing", "Degraded"] {
        let c = nac_condition(&nac, t);
        check(c.as_ref().is_none_or(|c| c["status"] == "False"), || {
            format!("{t}: {c:?}")
        })?;
    }
    check(
        nac["status"]["observedVersion"]
            .as_str()
            .is_some_and(|v| !v.is_empty()),
        || format!("no observedVersion: {}", nac["status"]),
    )
}

fn sha256(path: &std::path::Path) -> Result<String> {
    let out = kube_tier::daemon::run(std::process::Command::new("sha256sum").arg(path))?;
    Ok(out
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string())
}

pub fn plugins_land_on_the_node(ctx: &mut Ctx) -> Result<()> {
    let dir = ctx.cluster.cni_bin_dir().to_path_buf();
    let record: Value = serde_json::from_slice(&std::fs::read(dir.join(".cni-installer.json"))?)?;
    // `cnv-bridge` and `cnv-tuning`: the names configs written for the upstream operator use.
    for (plugin, source) in [
        ("bridge", "bridge"),
        ("tuning", "tuning"),
        ("cnv-bridge", "bridge"),
        ("cnv-tuning", "tuning"),
        ("ovs", "ovs"),
    ] {
        let installed = sha256(&dir.join(plugin))?;
        let built = sha256(&ctx.repo.join("target/cni-bin").join(source))?;
        check(installed == built, || {
            format!("{plugin} on the node is not the one in our image")
        })?;
        let recorded = record.to_string().contains(&installed);
        check(recorded, || {
            format!("{plugin} is not in the installer's record: {record}")
        })?;
    }
    Ok(())
}

fn capacity(ctx: &Ctx) -> Result<Value> {
    Ok(ctx.node()?["status"]["capacity"].clone())
}

pub fn marker_follows_bridges(ctx: &mut Ctx) -> Result<()> {
    let linux = "bridge.network.kubevirt.io/br-kt1";
    let ovs = "ovs-cni.network.kubevirt.io/br-kt-ovs";
    ctx.sh("ip link add br-kt1 type bridge")?;
    ctx.cluster.ovs().add_br("br-kt-ovs")?;
    // The marker lists bridges once a minute (its default interval).
    let wait = Duration::from_secs(150);
    wait_for("both bridges in the node's capacity", wait, || {
        let cap = capacity(ctx)?;
        Ok((cap[linux] == "1k" && cap[ovs] == "1k").then_some(()))
    })
    .with_context(|| format!("capacity: {}", capacity(ctx).unwrap_or_default()))?;
    ctx.sh("ip link del br-kt1")?;
    ctx.cluster.ovs().del_br("br-kt-ovs")?;
    wait_for("both bridges gone from the node's capacity", wait, || {
        let cap = capacity(ctx)?;
        Ok((cap.get(linux).is_none() && cap.get(ovs).is_none()).then_some(()))
    })
    .with_context(|| format!("capacity: {}", capacity(ctx).unwrap_or_default()))
}

pub fn events_in_default(ctx: &mut Ctx) -> Result<()> {
    let events = ctx.get(&[
        "get",
        "events",
        "-n",
        "default",
        "--field-selector",
        "involvedObject.kind=NetworkAddonsConfig",
    ])?;
    let reasons: BTreeSet<String> = events["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["reason"].as_str().map(str::to_string))
        .collect();
    for wanted in ["Modified", "Progressing", "Available"] {
        check(reasons.contains(wanted), || {
            format!("no {wanted} event in default; reasons: {reasons:?}")
        })?;
    }
    Ok(())
}

/// The relationship labels the hyperconverged operator puts on the NetworkAddonsConfig it
/// creates, and reads back from every object to track its upgrade.
const HCO_LABELS: [(&str, &str); 4] = [
    ("app.kubernetes.io/component", "network"),
    ("app.kubernetes.io/managed-by", "hco-operator"),
    ("app.kubernetes.io/part-of", "hyperconverged-cluster"),
    ("app.kubernetes.io/version", "1.14.0"),
];

fn apply_labelled_nac(ctx: &Ctx, spec: &str) -> Result<()> {
    let labels: String = HCO_LABELS
        .iter()
        .map(|(k, v)| format!("    {k}: {v:?}\n"))
        .collect();
    let indented: String = spec.lines().map(|l| format!("  {l}\n")).collect();
    ctx.apply(&format!(
        "apiVersion: networkaddonsoperator.network.kubevirt.io/v1\nkind: NetworkAddonsConfig\n\
         metadata:\n  name: cluster\n  labels:\n{labels}spec:\n{indented}"
    ))
    .map(drop)
}

/// Each component has a condition of its own that `kubectl wait` waits for; the config's
/// relationship labels are on its objects and their pods; a component removed under those
/// labels is still found and deleted.
pub fn component_conditions_and_config_labels(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    reset(ctx)?;
    apply_labelled_nac(ctx, &format!("multus: {{}}\n{OWN_SPEC}"))?;
    ctx.kubectl_wait("LinuxBridgeAvailable", "240s")?;
    ctx.kubectl_wait("OvsAvailable", "240s")?;
    // Multus's upstream image cannot be pulled here: it alone is not available.
    let nac = ctx.wait_nac("Progressing", "True", Duration::from_secs(60))?;
    let multus = nac_condition(&nac, "MultusAvailable").context("no MultusAvailable condition")?;
    check(
        multus["status"] == "False" && multus["reason"] == "Deploying",
        || format!("MultusAvailable: {multus}"),
    )?;
    check(
        nac_condition(&nac, "Available").is_some_and(|c| c["status"] == "False"),
        || "Available while multus is not".into(),
    )?;
    let ds = ctx.get(&["get", "daemonset", LINUX_BRIDGE_DS, "-n", NAMESPACE])?;
    for (place, labels) in [
        ("the DaemonSet", &ds["metadata"]["labels"]),
        ("its pods", &ds["spec"]["template"]["metadata"]["labels"]),
    ] {
        for (k, v) in HCO_LABELS {
            // managed-by stays the operator's own, as upstream's does
            let want = if k.ends_with("managed-by") {
                "network-addons-operator"
            } else {
                v
            };
            check(labels[k] == want, || {
                format!("{place}: {k}={} not {want}", labels[k])
            })?;
        }
        check(
            labels["networkaddonsoperator.network.kubevirt.io/component"] == "linuxBridge",
            || format!("{place}: no component label of ours: {labels}"),
        )?;
    }
    apply_labelled_nac(ctx, OWN_SPEC)?;
    let nac = ctx.wait_nac("Available", "True", Duration::from_secs(120))?;
    check(nac_condition(&nac, "MultusAvailable").is_none(), || {
        "multus was removed but its condition stayed".into()
    })?;
    wait_for(
        "multus's DaemonSet to be deleted",
        Duration::from_secs(60),
        || Ok((!ctx.exists("daemonset", "multus", Some(NAMESPACE))?).then_some(())),
    )
}
