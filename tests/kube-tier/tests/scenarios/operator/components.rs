//! The components of the seed's configs: what each deploys, their conditions and labels, the
//! IPAM controller following cert-manager, and OpenShift's SCCs.

use super::*;

pub fn full_cr_progressing(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    reset(ctx)?;
    ctx.apply_nac(FULL_SPEC)?;
    // Our DaemonSets and Multus run (their images pulled from the registry, `Always`); the
    // other upstream images cannot be pulled here, so the config stays Progressing and says
    // which.
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
            Ok((msg.contains("macvtap") && msg.to_lowercase().contains("pull")).then_some(()))
        },
    )
    .with_context(|| format!("Progressing said: {message}"))?;
    // Every component's own condition: ours (KubeMacPool's allocator among them) and Multus
    // available, the other upstream ones rolling out, the IPAM controller not deployed for
    // want of a certificate issuer.
    ctx.kubectl_wait("LinuxBridgeAvailable", "120s")?;
    ctx.kubectl_wait("MultusAvailable", "120s")?;
    ctx.kubectl_wait("OvsAvailable", "120s")?;
    ctx.kubectl_wait("KubeMacPoolAvailable", "120s")?;
    let nac = ctx.nac()?;
    for (type_, status, reason) in [
        ("LinuxBridgeAvailable", "True", "AsExpected"),
        ("OvsAvailable", "True", "AsExpected"),
        ("MultusAvailable", "True", "AsExpected"),
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
    apply_labelled_nac(ctx, &format!("macvtap: {{}}\n{OWN_SPEC}"))?;
    ctx.kubectl_wait("LinuxBridgeAvailable", "240s")?;
    ctx.kubectl_wait("OvsAvailable", "240s")?;
    // macvtap's upstream image cannot be pulled here: it alone is not available.
    let nac = ctx.wait_nac("Progressing", "True", Duration::from_secs(60))?;
    let macvtap =
        nac_condition(&nac, "MacvtapAvailable").context("no MacvtapAvailable condition")?;
    check(
        macvtap["status"] == "False" && macvtap["reason"] == "Deploying",
        || format!("MacvtapAvailable: {macvtap}"),
    )?;
    check(
        nac_condition(&nac, "Available").is_some_and(|c| c["status"] == "False"),
        || "Available while macvtap is not".into(),
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
    check(nac_condition(&nac, "MacvtapAvailable").is_none(), || {
        "macvtap was removed but its condition stayed".into()
    })?;
    wait_for(
        "macvtap's DaemonSet to be deleted",
        Duration::from_secs(60),
        || Ok((!ctx.exists("daemonset", MACVTAP_DS, Some(NAMESPACE))?).then_some(())),
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
