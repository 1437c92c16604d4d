//! The operator in the cluster: deploy/ applied as the README says, the seed's
//! NetworkAddonsConfigs, what lands on the node, the status and the events.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use kube_tier::daemon::wait_for;
use kube_tier::stand_in::{crds, crds_scoped};

use crate::{check, nac_condition, plugins_image, Ctx, NAMESPACE, OPERATOR};

/// The seed's first example: every component, `imagePullPolicy: Always`.
pub const FULL_SPEC: &str =
    "multus: {}\nmultusDynamicNetworks: {}\nlinuxBridge: {}\nkubeMacPool: {}\n\
ovs: {}\nmacvtap: {}\nkubeSecondaryDNS: {}\nkubevirtIpamController: {}\nimagePullPolicy: Always\n";
/// Our own components only.
pub const OWN_SPEC: &str = "linuxBridge: {}\novs: {}\n";

pub const LINUX_BRIDGE_DS: &str = "kube-cni-linux-bridge-plugin";
pub const OVS_DS: &str = "ovs-cni-amd64";
/// The ConfigMap in which the operator records the spec it applied (upstream's name).
pub const APPLIED_RECORD: &str = "cluster-networks-addons-operator-applied-cluster";

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
            .is_some_and(|ip| ip.starts_with(crate::POD_NETWORK_PREFIX)),
        || {
            format!(
                "the operator pod's IP {} is not from our bridge's range",
                pod["status"]["podIP"]
            )
        },
    )
}

/// The operator's ServiceAccount, as `kubectl --as` names it.
fn as_operator() -> String {
    format!("--as=system:serviceaccount:{NAMESPACE}:{OPERATOR}")
}

/// Whether the operator's ServiceAccount may `verb` `resource` in `namespace`, as the API
/// server decides. `kubectl auth can-i` answers `yes` (exit 0) or `no` (exit 1, which
/// [`Ctx::kubectl`] reports as a failure), so it runs here with its exit code read; anything
/// else is an error. A `resource/subresource` is passed as `--subresource`: can-i reads
/// `pods/exec` as the pod named `exec`.
fn operator_may(ctx: &Ctx, verb: &str, resource: &str, namespace: &str) -> Result<bool> {
    let (kind, subresource) = match resource.split_once('/') {
        Some((k, s)) => (k, Some(s)),
        None => (resource, None),
    };
    let mut cmd = std::process::Command::new(ctx.cluster.kubectl_path());
    cmd.arg("--kubeconfig")
        .arg(ctx.cluster.kubeconfig())
        // The tier's kubectl cache, not the user's ~/.kube/cache.
        .arg("--cache-dir")
        .arg(ctx.cluster.base().join("kubectl-cache"))
        .args(["auth", "can-i", verb, kind, "-n", namespace, &as_operator()]);
    if let Some(s) = subresource {
        cmd.arg(format!("--subresource={s}"));
    }
    let out = cmd.output().context("run kubectl auth can-i")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    match (out.status.code(), stdout.split_whitespace().next()) {
        (Some(0), Some("yes")) => Ok(true),
        (Some(1), Some("no")) => Ok(false),
        _ => bail!(
            "kubectl auth can-i {verb} {resource} -n {namespace} ({}): {} {}",
            out.status,
            stdout.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    }
}

/// What the operator must not write outside its namespace: other workloads' code, credentials,
/// configuration, traffic, leader elections and access rights.
const GUARDED: [&str; 10] = [
    "leases.coordination.k8s.io",
    "secrets",
    "pods",
    "configmaps",
    "services",
    "serviceaccounts",
    "roles.rbac.authorization.k8s.io",
    "rolebindings.rbac.authorization.k8s.io",
    "daemonsets.apps",
    "deployments.apps",
];
const WRITES: [&str; 5] = ["create", "update", "patch", "delete", "deletecollection"];

/// With the seed's full config applied (its ClusterRoles and bindings written through the
/// operator's `escalate` and `bind` on them by name): the API server lets the operator write
/// none of [`GUARDED`] nor exec into pods in kube-system and default, and lets it update its
/// Lease in its own namespace. Its rules as `kubectl auth can-i --list` shows them are printed.
pub fn least_privilege(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    ctx.apply_nac(FULL_SPEC)?;
    // Progressing=True for this generation is written only once a converge of it applied
    // every object (a failed one writes Progressing=False); the upstream images cannot be
    // pulled here, so the config stays Progressing.
    ctx.wait_nac("Progressing", "True", Duration::from_secs(120))?;
    let mut allowed = Vec::new();
    let mut asked = 0;
    for namespace in ["kube-system", "default"] {
        let list = ctx.kubectl(&["auth", "can-i", "--list", "-n", namespace, &as_operator()])?;
        println!(
            "    as the operator in {namespace}:\n      {}",
            list.trim_end().replace('\n', "\n      ")
        );
        let asks = GUARDED
            .iter()
            .flat_map(|r| WRITES.iter().map(move |v| (*v, *r)))
            .chain([("create", "pods/exec")]);
        for (verb, resource) in asks {
            asked += 1;
            if operator_may(ctx, verb, resource, namespace)? {
                allowed.push(format!("{verb} {resource} in {namespace}"));
            }
        }
    }
    println!(
        "    {asked} writes asked of the API server, {} allowed",
        allowed.len()
    );
    check(allowed.is_empty(), || {
        format!("the operator may {}", allowed.join(", "))
    })?;
    check(
        operator_may(ctx, "update", "leases.coordination.k8s.io", NAMESPACE)?,
        || format!("the operator may not update its Lease in {NAMESPACE}"),
    )
}

/// Deletes the NetworkAddonsConfig, if any, and waits until the garbage collector took its
/// objects (the applied record included) and its node agents' pods are gone, so the next test
/// starts from a clean cluster. (A node agent's pod left Terminating would hold its host port,
/// and keep the next config's pod on that node from being scheduled.)
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
    .with_context(|| format!("left: {:?}", owned_objects(ctx).unwrap_or_default()))?;
    wait_for(
        "the previous config's node agents to be gone",
        Duration::from_secs(120),
        || {
            let pods = ctx.get(&["get", "pods", "-n", NAMESPACE])?;
            let agents: Vec<Value> = pods["items"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|p| p["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet")
                .cloned()
                .collect();
            ctx.delete_stopped_pods(&agents)?;
            Ok(agents.is_empty().then_some(()))
        },
    )
}

/// Objects in the operand namespace or cluster-wide that carry the operator's component label.
pub fn owned_objects(ctx: &Ctx) -> Result<Vec<String>> {
    let out = ctx.kubectl(&[
        "get",
        "daemonsets,deployments,configmaps,services,serviceaccounts,clusterroles,clusterrolebindings,\
         roles,rolebindings,mutatingwebhookconfigurations,networkpolicies",
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
            Ok((msg.contains("multus") && msg.to_lowercase().contains("pull")).then_some(()))
        },
    )
    .with_context(|| format!("Progressing said: {message}"))?;
    // Every component's own condition: ours (KubeMacPool's allocator among them) available,
    // the upstream ones rolling out, the IPAM
    // controller not deployed for want of a certificate issuer.
    ctx.kubectl_wait("LinuxBridgeAvailable", "120s")?;
    ctx.kubectl_wait("OvsAvailable", "120s")?;
    ctx.kubectl_wait("KubeMacPoolAvailable", "120s")?;
    let nac = ctx.nac()?;
    for (type_, status, reason) in [
        ("LinuxBridgeAvailable", "True", "AsExpected"),
        ("OvsAvailable", "True", "AsExpected"),
        ("MultusAvailable", "False", "Deploying"),
        ("MultusDynamicNetworksAvailable", "False", "Deploying"),
        ("KubeMacPoolAvailable", "True", "AsExpected"),
        ("MacvtapAvailable", "False", "Deploying"),
        ("KubeSecondaryDNSAvailable", "False", "Deploying"),
        ("KubevirtIpamControllerAvailable", "False", "NotDeployed"),
    ] {
        let c = nac_condition(&nac, type_).with_context(|| format!("no {type_} condition"))?;
        check(c["status"] == status && c["reason"] == reason, || {
            format!("{type_}: {c}")
        })?;
    }
    let ipam = nac_condition(&nac, "KubevirtIpamControllerAvailable").unwrap_or_default();
    check(ipam["message"].to_string().contains("cert-manager"), || {
        format!("the IPAM controller's condition does not say what it needs: {ipam}")
    })?;
    for (kind, name) in COMPONENT_OBJECTS {
        check(ctx.exists(kind, name, Some(NAMESPACE))?, || {
            format!("{kind} {name} was not created")
        })?;
    }
    let dns = ctx.get(&["get", "service", "secondary-dns", "-n", NAMESPACE])?;
    check(
        dns["spec"]["ports"][0]["nodePort"].as_i64().is_some(),
        || format!("the DNS Service has no node port: {}", dns["spec"]),
    )?;
    check(
        !ctx.exists("deployment", IPAM_DEPLOYMENT, Some(NAMESPACE))?,
        || "the IPAM controller was deployed without a certificate issuer".into(),
    )?;
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

/// Objects of the upstream components of the full spec, besides those of the first test.
const COMPONENT_OBJECTS: [(&str, &str); 13] = [
    ("daemonset", "multus"),
    ("daemonset", "dynamic-networks-controller-ds"),
    ("configmap", "dynamic-networks-controller-config"),
    ("deployment", "kubemacpool-mac-controller-manager"),
    ("daemonset", "macvtap-cni"),
    ("deployment", "secondary-dns"),
    ("configmap", "secondary-dns"),
    ("service", "secondary-dns"),
    ("serviceaccount", "secondary"),
    ("networkpolicy", "cnao-allow-egress-to-cluster-api"),
    ("networkpolicy", "cnao-allow-egress-to-cluster-dns"),
    ("networkpolicy", "allow-ingress-to-secondary-dns"),
    ("networkpolicy", "kubemacpool-allow-ingress-to-webhook"),
];

const IPAM_DEPLOYMENT: &str = "kubevirt-ipam-controller-manager";
const IPAM_WEBHOOK: &str = "kubevirt-ipam-controller-mutating-webhook-configuration";

fn cert_manager_crds() -> String {
    crds(
        "cert-manager.io",
        &[("certificates", "Certificate"), ("issuers", "Issuer")],
    )
}

/// The IPAM controller of the full spec is deployed once cert-manager's CRDs appear (no
/// operator restart) with its Certificate, Issuer, webhook and Deployment accepted by the API
/// server, and goes again when they go.
pub fn ipam_controller_follows_cert_manager(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    ctx.apply_nac(FULL_SPEC)?;
    ctx.apply(&cert_manager_crds())?;
    let outcome = (|| {
        wait_for(
            "the IPAM controller's objects",
            Duration::from_secs(120),
            || {
                Ok((ctx.exists("deployment", IPAM_DEPLOYMENT, Some(NAMESPACE))?
                    && ctx.exists("mutatingwebhookconfiguration", IPAM_WEBHOOK, None)?
                    && ctx.exists(
                        "certificates.cert-manager.io",
                        "kubevirt-ipam-controller-serving-cert",
                        Some(NAMESPACE),
                    )?
                    && ctx.exists(
                        "issuers.cert-manager.io",
                        "kubevirt-ipam-controller-selfsigned-issuer",
                        Some(NAMESPACE),
                    )?)
                .then_some(()))
            },
        )?;
        check(
            ctx.exists(
                "customresourcedefinition",
                "ipamclaims.k8s.cni.cncf.io",
                None,
            )?,
            || "no IPAMClaim CRD".into(),
        )?;
        let hook = ctx.get(&["get", "mutatingwebhookconfiguration", IPAM_WEBHOOK])?;
        let inject = &hook["metadata"]["annotations"]["cert-manager.io/inject-ca-from"];
        check(
            *inject == format!("{NAMESPACE}/kubevirt-ipam-controller-serving-cert"),
            || format!("the webhook's CA comes from {inject}"),
        )?;
        let nac = wait_for(
            "the IPAM controller's condition to say it is deploying",
            Duration::from_secs(60),
            || {
                let nac = ctx.nac()?;
                Ok(nac_condition(&nac, "KubevirtIpamControllerAvailable")
                    .is_some_and(|c| c["reason"] == "Deploying")
                    .then_some(nac))
            },
        )?;
        let not_deployed = nac["status"]["notDeployed"].to_string();
        check(!not_deployed.contains("kubevirtIpamController"), || {
            format!("still listed as not deployed: {not_deployed}")
        })
    })();
    ctx.kubectl(&[
        "delete",
        "customresourcedefinition",
        "certificates.cert-manager.io",
        "issuers.cert-manager.io",
        "--timeout=60s",
    ])?;
    outcome?;
    wait_for(
        "the IPAM controller to go with cert-manager",
        Duration::from_secs(120),
        || {
            Ok(
                (!ctx.exists("deployment", IPAM_DEPLOYMENT, Some(NAMESPACE))?
                    && !ctx.exists("mutatingwebhookconfiguration", IPAM_WEBHOOK, None)?)
                .then_some(()),
            )
        },
    )
}

/// The bridge walkthrough's config (seed 004): multus, linuxBridge, nmstate, `Always`.
pub fn walkthrough_config(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    reset(ctx)?;
    ctx.apply_nac(crate::scenarios::nmstate::WALKTHROUGH_SPEC)?;
    ctx.wait_rollout("daemonset", LINUX_BRIDGE_DS)?;
    ctx.wait_rollout("daemonset", crate::scenarios::nmstate::HANDLER_DS)?;
    for crd in crate::scenarios::nmstate::NMSTATE_CRDS {
        check(ctx.exists("crd", crd, None)?, || format!("no CRD {crd}"))?;
    }
    let nac = ctx.nac()?;
    check(
        !nac["status"]["notDeployed"].to_string().contains("nmstate"),
        || {
            format!(
                "nmstate said not deployed: {}",
                nac["status"]["notDeployed"]
            )
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
    let dir = ctx.node01().host_path("/opt/cni/bin");
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

/// The markers publish a bridge when it appears and withdraw it when it goes, on the kernel's
/// link notifications: well before their one-minute resync. The time from the link to the
/// Node's capacity is printed (each read of the Node takes a kubectl call, ~0.1 s).
pub fn marker_follows_bridges(ctx: &mut Ctx) -> Result<()> {
    let linux = "bridge.network.kubevirt.io/br-kt1";
    let ovs = "ovs-cni.network.kubevirt.io/br-kt-ovs";
    // Less than the markers' 60 s resync: only a reaction to the link passes.
    let wait = Duration::from_secs(30);
    let timed = |what: &str, change: &dyn Fn(&Ctx) -> Result<()>, there: bool, key: &str| {
        change(ctx)?;
        let started = std::time::Instant::now();
        wait_for(what, wait, || {
            let cap = capacity(ctx)?;
            Ok((cap.get(key).is_some() == there).then_some(()))
        })
        .with_context(|| format!("capacity: {}", capacity(ctx).unwrap_or_default()))?;
        Ok::<_, anyhow::Error>(started.elapsed().as_secs_f64())
    };
    let linux_added = timed(
        "br-kt1 in the node's capacity",
        &|ctx| ctx.sh("ip link add br-kt1 type bridge").map(drop),
        true,
        linux,
    )?;
    let ovs_added = timed(
        "br-kt-ovs in the node's capacity",
        &|ctx| ctx.cluster.ovs(0).add_br("br-kt-ovs"),
        true,
        ovs,
    )?;
    let linux_removed = timed(
        "br-kt1 gone from the node's capacity",
        &|ctx| ctx.sh("ip link del br-kt1").map(drop),
        false,
        linux,
    )?;
    let ovs_removed = timed(
        "br-kt-ovs gone from the node's capacity",
        &|ctx| ctx.cluster.ovs(0).del_br("br-kt-ovs"),
        false,
        ovs,
    )?;
    println!(
        "    link -> Node capacity: Linux bridge published in {linux_added:.2}s, withdrawn in \
         {linux_removed:.2}s; OVS bridge published in {ovs_added:.2}s, withdrawn in {ovs_removed:.2}s \
         (upstream's markers poll every 60s)"
    );
    Ok(())
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

const METRICS_SERVICE: &str = "cluster-network-addons-operator-prometheus-metrics";

/// The operator's metrics, scraped through its Service (the API server's service proxy), with
/// the upstream operator's names; and its ServiceMonitor and PrometheusRule once the Prometheus
/// operator's CRDs are there.
pub fn metrics_through_the_service(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    ctx.start_from(OWN_SPEC)?;
    let path = format!(
        "/api/v1/namespaces/{NAMESPACE}/services/http:{METRICS_SERVICE}:metrics/proxy/metrics"
    );
    let metrics = wait_for(
        "the metrics to say the config is ready",
        Duration::from_secs(60),
        || {
            let body = ctx.kubectl(&["get", "--raw", &path])?;
            Ok(body
                .contains("\nkubevirt_cnao_cr_ready 1\n")
                .then_some(body))
        },
    )?;
    for line in [
        "kubevirt_cnao_operator_up 1",
        "kubevirt_cnao_cr_kubemacpool_deployed 0",
        "# HELP kubevirt_cnao_cr_ready CNAO CR Ready",
    ] {
        check(metrics.contains(line), || {
            format!("no {line:?} in:\n{metrics}")
        })?;
    }
    println!(
        "    scraped: {}",
        metrics
            .lines()
            .filter(|l| l.starts_with("kubevirt_cnao_"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    ctx.apply(&crds(
        "monitoring.coreos.com",
        &[
            ("servicemonitors", "ServiceMonitor"),
            ("prometheusrules", "PrometheusRule"),
        ],
    ))?;
    let outcome = wait_for(
        "the ServiceMonitor and PrometheusRule",
        Duration::from_secs(120),
        || {
            Ok((ctx.exists(
                "servicemonitors.monitoring.coreos.com",
                "service-monitor-cluster-network-addons-operator",
                Some(NAMESPACE),
            )? && ctx.exists(
                "prometheusrules.monitoring.coreos.com",
                "prometheus-rules-cluster-network-addons-operator",
                Some(NAMESPACE),
            )?)
            .then_some(()))
        },
    )
    .and_then(|()| {
        let rule = ctx.get(&[
            "get",
            "prometheusrules.monitoring.coreos.com",
            "prometheus-rules-cluster-network-addons-operator",
            "-n",
            NAMESPACE,
        ])?;
        let text = rule["spec"].to_string();
        check(
            ["CnaoDown", "NetworkAddonsConfigNotReady", "KubemacpoolDown"]
                .iter()
                .all(|a| text.contains(a)),
            || format!("alerts missing: {text}"),
        )
    });
    ctx.kubectl(&[
        "delete",
        "customresourcedefinition",
        "servicemonitors.monitoring.coreos.com",
        "prometheusrules.monitoring.coreos.com",
        "--timeout=60s",
    ])?;
    outcome?;
    // The Prometheus operator gone, what was rendered for it goes too, at once (the operator
    // watches those CRDs), and the config is as the next scenario finds it.
    wait_for(
        "the monitoring Role and RoleBinding to be deleted",
        Duration::from_secs(30),
        || {
            let role = "cluster-network-addons-operator-monitoring";
            Ok((!ctx.exists("role", role, Some(NAMESPACE))?
                && !ctx.exists("rolebinding", role, Some(NAMESPACE))?)
            .then_some(()))
        },
    )
}

/// With OpenShift's config and SCC APIs served, each node agent's service account gets its
/// SecurityContextConstraints before its DaemonSet, and the node agents install into
/// OpenShift's CNI directory.
pub fn openshift_sccs(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    ctx.start_from(OWN_SPEC)?;
    ctx.apply(&format!(
        "{}{}",
        crds_scoped(
            "config.openshift.io",
            "Cluster",
            &[("infrastructures", "Infrastructure")]
        ),
        crds_scoped(
            "security.openshift.io",
            "Cluster",
            &[("securitycontextconstraints", "SecurityContextConstraints")]
        )
    ))?;
    let scc = "securitycontextconstraints.security.openshift.io";
    let outcome = wait_for("the node agents' SCCs", Duration::from_secs(120), || {
        Ok(
            (ctx.exists(scc, "bridge-marker", None)? && ctx.exists(scc, "ovs-cni-marker", None)?)
                .then_some(()),
        )
    })
    .and_then(|()| {
        let object = ctx.get(&["get", scc, "bridge-marker"])?;
        check(
            object["users"][0] == format!("system:serviceaccount:{NAMESPACE}:bridge-marker")
                && object["allowPrivilegedContainer"] == true,
            || format!("SCC bridge-marker: {object}"),
        )?;
        let ds = ctx.get(&["get", "daemonset", LINUX_BRIDGE_DS, "-n", NAMESPACE])?;
        let path = &ds["spec"]["template"]["spec"]["volumes"][0]["hostPath"]["path"];
        // The nodes' directory is the vanilla default, which on OpenShift means OpenShift's.
        check(*path == "/var/lib/cni/bin", || {
            format!("on OpenShift the node agents install into {path}, not /var/lib/cni/bin")
        })
    });
    ctx.kubectl(&[
        "delete",
        "customresourcedefinition",
        "infrastructures.config.openshift.io",
        scc,
        "--timeout=60s",
    ])?;
    outcome?;
    ctx.wait_nac("Available", "True", Duration::from_secs(120))
        .map(drop)
}
