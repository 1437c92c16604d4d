//! Changes of the NetworkAddonsConfig on the real server: what converges, what is refused, how
//! the operator shares objects with other field managers and takes over the upstream operator's,
//! and what deleting the config takes with it.

use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::json;

use kube_tier::daemon::wait_for;

use super::cnao::identity;
use super::operator::{owned_objects, LINUX_BRIDGE_DS, OVS_DS, OWN_SPEC};
use crate::{check, fail, nac_condition, Ctx, NAMESPACE};

fn wait_gone(ctx: &Ctx, kind: &str, name: &str, namespace: Option<&str>) -> Result<()> {
    wait_for(
        &format!("{kind} {name} to be deleted"),
        Duration::from_secs(90),
        || Ok((!ctx.exists(kind, name, namespace)?).then_some(())),
    )
}

pub fn component_removed(ctx: &mut Ctx) -> Result<()> {
    ctx.apply_nac(OWN_SPEC)?;
    ctx.kubectl_wait("Available", "240s")?;
    ctx.apply_nac("linuxBridge: {}\n")?;
    wait_gone(ctx, "daemonset", OVS_DS, Some(NAMESPACE))?;
    check(
        ctx.exists("daemonset", LINUX_BRIDGE_DS, Some(NAMESPACE))?,
        || "the linux-bridge DaemonSet went too".into(),
    )?;
    ctx.wait_nac("Available", "True", Duration::from_secs(180))
        .map(drop)
}

/// The nodes `daemonset`'s pods run on, once it has rolled out.
fn daemonset_nodes(ctx: &Ctx, daemonset: &str) -> Result<Vec<String>> {
    ctx.wait_rollout("daemonset", daemonset)?;
    let mut nodes: Vec<String> = ctx
        .daemonset_pods(daemonset)?
        .iter()
        .filter_map(|p| p["spec"]["nodeName"].as_str().map(str::to_string))
        .collect();
    nodes.sort();
    Ok(nodes)
}

/// `placementConfiguration.workloads.nodeSelector` matching no node puts the node agents
/// nowhere; labelling node01 puts them there only; moving the label to the last node moves them.
pub fn placement_change(ctx: &mut Ctx) -> Result<()> {
    let label = "kube-tier/workloads";
    let first = ctx.cluster.node(0).name().to_string();
    let last = ctx
        .cluster
        .nodes()
        .last()
        .map(|n| n.name().to_string())
        .unwrap_or_default();
    let result = place(ctx, label, &first, &last);
    for node in [&first, &last] {
        ctx.kubectl(&["label", "node", node, &format!("{label}-")])?;
    }
    ctx.apply_nac("linuxBridge: {}\n")?;
    result
}

fn place(ctx: &Ctx, label: &str, first: &str, last: &str) -> Result<()> {
    ctx.apply_nac(&format!(
        "linuxBridge: {{}}\nplacementConfiguration:\n  workloads:\n    nodeSelector:\n      {label}: \"yes\"\n"
    ))?;
    wait_for(
        "the DaemonSet to select labelled nodes only",
        Duration::from_secs(90),
        || {
            let ds = ctx.get(&["get", "daemonset", LINUX_BRIDGE_DS, "-n", NAMESPACE])?;
            let selector = &ds["spec"]["template"]["spec"]["nodeSelector"][label];
            let desired = ds["status"]["desiredNumberScheduled"].as_i64();
            Ok((selector == "yes" && desired == Some(0)).then_some(()))
        },
    )?;
    let label_node = |node: &str, value: &str| {
        ctx.kubectl(&[
            "label",
            "node",
            node,
            &format!("{label}{value}"),
            "--overwrite",
        ])
    };
    label_node(first, "=yes")?;
    let on = daemonset_nodes(ctx, LINUX_BRIDGE_DS)?;
    check(on == [first], || {
        format!("with {first} labelled, the node agents run on {on:?}")
    })?;
    ctx.wait_nac("Available", "True", Duration::from_secs(180))?;
    if last != first {
        label_node(last, "=yes")?;
        label_node(first, "-")?;
        let on = wait_for("the node agents to move", Duration::from_secs(120), || {
            let on = daemonset_nodes(ctx, LINUX_BRIDGE_DS)?;
            Ok((on == [last]).then_some(on))
        })?;
        println!("    node agents on {first} only, then moved to {on:?} with the label");
        ctx.wait_nac("Available", "True", Duration::from_secs(180))?;
    }
    Ok(())
}

/// The range both allocators read: the ConfigMap `kubemacpool-mac-range-config`.
fn kubemacpool_env(ctx: &Ctx) -> Result<String> {
    let cm = ctx.get(&[
        "get",
        "configmap",
        "kubemacpool-mac-range-config",
        "-n",
        NAMESPACE,
    ])?;
    Ok(cm["data"].to_string())
}

/// `kubeMacPool: {}` on a cluster that never had a range gets the cluster's own: its prefix
/// derived from the `kube-system` Namespace's UID, the same on every install.
pub fn a_new_mac_range_is_the_clusters_own(ctx: &mut Ctx) -> Result<()> {
    super::operator::reset(ctx)?;
    ctx.apply_nac("linuxBridge: {}\nkubeMacPool: {}\n")?;
    let uid = ctx.get(&["get", "namespace", "kube-system"])?["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let [a, b] = network_addons_operator::defaults::cluster_prefix(&uid);
    let (start, end) = (
        format!("02:{a:02x}:{b:02x}:00:00:00"),
        format!("02:{a:02x}:{b:02x}:ff:ff:ff"),
    );
    wait_for(
        "kubemacpool with the cluster's range",
        Duration::from_secs(90),
        || {
            Ok(kubemacpool_env(ctx)
                .ok()
                .filter(|e| e.contains(&start) && e.contains(&end))
                .map(drop))
        },
    )
    .with_context(|| {
        format!(
            "kube-system {uid}: not {start}-{end} in {}",
            kubemacpool_env(ctx).unwrap_or_default()
        )
    })?;
    println!("    kube-system's uid {uid}: the range {start}-{end}");
    Ok(())
}

pub fn mac_range_change(ctx: &mut Ctx) -> Result<()> {
    let spec = |end: &str| {
        format!("linuxBridge: {{}}\nkubeMacPool:\n  rangeStart: \"02:10:00:00:00:00\"\n  rangeEnd: \"{end}\"\n")
    };
    ctx.apply_nac(&spec("02:10:00:00:ff:ff"))?;
    wait_for(
        "kubemacpool with the first range",
        Duration::from_secs(90),
        || {
            Ok(kubemacpool_env(ctx)
                .ok()
                .filter(|e| e.contains("02:10:00:00:ff:ff"))
                .map(drop))
        },
    )?;
    ctx.apply_nac(&spec("02:10:00:ff:ff:ff"))?;
    wait_for(
        "kubemacpool with the changed range",
        Duration::from_secs(90),
        || {
            Ok(kubemacpool_env(ctx)
                .ok()
                .filter(|e| e.contains("02:10:00:ff:ff:ff"))
                .map(drop))
        },
    )
    .with_context(|| format!("containers: {}", kubemacpool_env(ctx).unwrap_or_default()))?;
    ctx.apply_nac("linuxBridge: {}\n")?;
    wait_gone(
        ctx,
        "deployment",
        "kubemacpool-mac-controller-manager",
        Some(NAMESPACE),
    )
}

/// Degraded=True with `reason` and a message containing `words`; the running components stay.
fn expect_refused(ctx: &Ctx, reason: &str, words: &str) -> Result<()> {
    let nac = wait_for(
        &format!("Degraded with {reason}"),
        Duration::from_secs(90),
        || {
            let nac = ctx.nac()?;
            let c = nac_condition(&nac, "Degraded");
            Ok(c.filter(|c| c["status"] == "True" && c["reason"] == reason)
                .map(|_| nac))
        },
    )
    .with_context(|| {
        format!(
            "status: {}",
            ctx.nac()
                .map(|n| n["status"].to_string())
                .unwrap_or_default()
        )
    })?;
    let c = nac_condition(&nac, "Degraded").unwrap_or_default();
    let message = c["message"].as_str().unwrap_or_default();
    check(message.contains(words), || {
        format!("the message does not say {words:?}: {message}")
    })?;
    check(
        !message.contains("Some(") && !message.contains(" { "),
        || format!("a debug dump in the message: {message}"),
    )?;
    check(
        ctx.exists("daemonset", LINUX_BRIDGE_DS, Some(NAMESPACE))?,
        || "the running component was removed".into(),
    )
}

pub fn invalid_refused(ctx: &mut Ctx) -> Result<()> {
    // the order of the range is the reconciler's to check (the schema cannot compare values)
    ctx.apply_nac(
        "linuxBridge: {}\nkubeMacPool:\n  rangeStart: \"02:10:00:00:00:00\"\n  rangeEnd: \"02:00:00:00:00:00\"\n",
    )?;
    expect_refused(ctx, "FailedToValidate", "must be below rangeEnd")?;
    ctx.apply_nac("linuxBridge: {}\n")?;
    ctx.wait_nac("Available", "True", Duration::from_secs(180))
        .map(drop)
}

/// A malformed field is refused at `kubectl apply` (by kubectl's validation against the CRD's
/// published schema, else by the API server), with the field named, and the running
/// configuration is untouched.
pub fn malformed_refused_at_apply(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    ctx.apply_nac("linuxBridge: {}\n")?;
    ctx.wait_nac("Available", "True", Duration::from_secs(180))?;
    let generation = ctx.nac()?["metadata"]["generation"].clone();
    for (spec, field) in [
        (
            "linuxBridge: {}\nkubeMacPool:\n  rangeStart: this:aint:right\n  rangeEnd: \"02:10:00:00:00:00\"\n",
            "rangeStart",
        ),
        ("linuxBridge: {}\nimagePullPolicy: Sometimes\n", "imagePullPolicy"),
        (
            "linuxBridge: {}\nkubeMacPool:\n  rangeStart: \"02:10:00:00:00:00\"\n",
            "kubeMacPool",
        ),
        ("linuxBridge: {}\nmultusDynamicNetworks: {}\n", "spec"),
        (
            "linuxBridge: {}\nselfSignConfiguration:\n  caRotateInterval: 48h\n",
            "caOverlapInterval",
        ),
        (
            "linuxBridge: {}\nselfSignConfiguration:\n  caRotateInterval: 2 days\n  caOverlapInterval: 24h\n  \
             certRotateInterval: 24h\n  certOverlapInterval: 12h\n",
            "caRotateInterval",
        ),
    ] {
        let refused = ctx.apply_nac(spec);
        let message = match refused {
            Ok(()) => return fail(format!("the API server accepted {field} in:\n{spec}")),
            Err(e) => format!("{e:#}"),
        };
        check(message.contains(field), || {
            format!("the refusal does not name {field}: {message}")
        })?;
        let said = message.split("failed (exit status: 1): ").last().unwrap_or_default();
        println!("    refused: {}", said.lines().next().unwrap_or_default());
    }
    let nac = ctx.nac()?;
    check(nac["metadata"]["generation"] == generation, || {
        "a refused apply changed the config".into()
    })?;
    check(
        nac_condition(&nac, "Degraded").is_some_and(|c| c["status"] == "False"),
        || "refused applies made the config Degraded".into(),
    )
}

pub fn unsafe_refused(ctx: &mut Ctx) -> Result<()> {
    ctx.apply_nac("linuxBridge: {}\nimagePullPolicy: Never\n")?;
    expect_refused(ctx, "UnsafeChange", "imagePullPolicy")?;
    ctx.apply_nac("linuxBridge: {}\n")?;
    ctx.wait_nac("Available", "True", Duration::from_secs(180))
        .map(drop)
}

pub fn second_field_manager(ctx: &mut Ctx) -> Result<()> {
    // Another controller owns an annotation on our DaemonSet through server-side apply.
    let patch = format!(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: {LINUX_BRIDGE_DS}\n  namespace: {NAMESPACE}\n  \
         annotations:\n    example.com/owner: other-controller\n"
    );
    ctx.cluster.kubectl_stdin(
        &[
            "apply",
            "--server-side",
            "--field-manager=other-controller",
            "-f",
            "-",
        ],
        &patch,
    )?;
    // A change of the config makes the operator apply the DaemonSet again.
    ctx.apply_nac("linuxBridge: {}\nplacementConfiguration:\n  workloads:\n    tolerations:\n    - operator: Exists\n")?;
    ctx.wait_toleration(LINUX_BRIDGE_DS, &json!({"operator": "Exists"}), true)
        .and_then(|ds| {
            let kept = ds["metadata"]["annotations"]["example.com/owner"] == "other-controller";
            let managers: Vec<String> = ds["metadata"]["managedFields"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|m| m["manager"].as_str().map(str::to_string))
                .collect();
            check(kept, || "the other manager's annotation is gone".into())?;
            check(managers.iter().any(|m| m == "other-controller"), || {
                format!("managers: {managers:?}")
            })
        })?;
    ctx.apply_nac("linuxBridge: {}\n")?;
    ctx.wait_nac("Available", "True", Duration::from_secs(180))
        .map(drop)
}

/// The linux-bridge DaemonSet as the cluster-network-addons-operator creates it: its labels, its
/// container running a copy script and `sleep infinity`, no label of ours. Its pods stop within a
/// second (CNAO's shell ignores SIGTERM and waits out 30 s of grace on each node, which is not
/// what this takeover measures).
fn cnao_daemon_set(image: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: {LINUX_BRIDGE_DS}\n  namespace: {NAMESPACE}\n  \
         labels:\n    tier: node\n    app: cni-plugins\n    app.kubernetes.io/managed-by: cnao-operator\n\
         spec:\n  selector:\n    matchLabels:\n      name: {LINUX_BRIDGE_DS}\n  template:\n    metadata:\n      \
         labels:\n        name: {LINUX_BRIDGE_DS}\n        tier: node\n        app: cni-plugins\n    spec:\n      \
         terminationGracePeriodSeconds: 1\n      containers:\n      - name: cni-plugins\n        image: {image}\n        \
         command: [\"/bin/sh\", \"-c\", \"sleep infinity\"]\n"
    )
}

pub fn takeover(ctx: &mut Ctx) -> Result<()> {
    super::operator::reset(ctx)?;
    ctx.cluster.kubectl_stdin(
        &[
            "create",
            "--field-manager=cluster-network-addons-operator",
            "-f",
            "-",
        ],
        &cnao_daemon_set(kube_tier::image::BUSYBOX_IMAGE),
    )?;
    let (created, _) = identity(ctx, "daemonset", LINUX_BRIDGE_DS)?;
    ctx.apply_nac("linuxBridge: {}\n")?;
    ctx.kubectl_wait("Available", "240s")?;
    let (kept, _) = identity(ctx, "daemonset", LINUX_BRIDGE_DS)?;
    check(!created.is_empty() && kept == created, || {
        format!("the DaemonSet was re-created, not taken over: uid {created} -> {kept}")
    })?;
    let ds = ctx.get(&["get", "daemonset", LINUX_BRIDGE_DS, "-n", NAMESPACE])?;
    let text = ds.to_string();
    check(
        !text.contains("sleep infinity") && !text.contains("cnao-operator"),
        || format!("fields of the upstream operator stayed: {text}"),
    )?;
    check(
        ds["metadata"]["ownerReferences"][0]["kind"] == "NetworkAddonsConfig",
        || {
            format!(
                "not owned by the config: {}",
                ds["metadata"]["ownerReferences"]
            )
        },
    )
}

pub fn delete_gc(ctx: &mut Ctx) -> Result<()> {
    ctx.apply_nac(OWN_SPEC)?;
    ctx.kubectl_wait("Available", "240s")?;
    check(!owned_objects(ctx)?.is_empty(), || {
        "nothing deployed".into()
    })?;
    ctx.kubectl(&["delete", "networkaddonsconfig", "cluster", "--timeout=60s"])?;
    wait_for(
        "the garbage collector to delete the config's objects",
        Duration::from_secs(120),
        || Ok(owned_objects(ctx)?.is_empty().then_some(())),
    )
    .with_context(|| format!("left: {:?}", owned_objects(ctx).unwrap_or_default()))?;
    check(ctx.exists("namespace", NAMESPACE, None)?, || {
        "the namespace was deleted".into()
    })
}
