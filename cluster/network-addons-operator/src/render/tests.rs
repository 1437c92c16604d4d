//! The render as a whole: what each configuration renders, and what every object shares.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::cluster::ClusterInfo;
use crate::defaults::fill_defaults;
use crate::spec::{
    KubeMacPool, KubeSecondaryDns, KubevirtIpamController, LinuxBridge, Macvtap, Multus,
    MultusDynamicNetworks, NMState, Ovs, Placement, PlacementConfiguration,
};
use std::collections::BTreeMap;

fn everything() -> NetworkAddonsConfigSpec {
    NetworkAddonsConfigSpec {
        multus: Some(Multus {}),
        linux_bridge: Some(LinuxBridge {}),
        kube_mac_pool: Some(KubeMacPool::default()),
        ovs: Some(Ovs {}),
        macvtap: Some(Macvtap::default()),
        multus_dynamic_networks: Some(MultusDynamicNetworks::default()),
        kube_secondary_dns: Some(KubeSecondaryDns::default()),
        kubevirt_ipam_controller: Some(KubevirtIpamController::default()),
        nmstate: Some(NMState {}),
        ..NetworkAddonsConfigSpec::default()
    }
}

fn pod_spec(object: &Value) -> &Value {
    &object["spec"]["template"]["spec"]
}

fn workloads(out: &[Rendered], kind: &str) -> Vec<Value> {
    out.iter()
        .filter(|r| r.object["kind"] == kind)
        .map(|r| r.object.clone())
        .collect()
}

#[test]
fn namespace_first_then_components_in_order() {
    let applied = fill_defaults(&everything(), None, [0x4a, 0xbe]);
    let out = render(
        &applied,
        &Settings::defaults(),
        &ClusterInfo::WITH_CERT_MANAGER,
    )
    .unwrap();
    assert_eq!(out[0].object["kind"], "Namespace");
    assert_eq!(out[0].component, None);
    let order: Vec<Component> = out.iter().filter_map(|r| r.component).collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted, "components in Component::ALL order");
    for c in Component::ALL {
        assert!(order.contains(&c), "{c:?} rendered");
    }
}

#[test]
fn the_ipam_controller_is_not_rendered_where_nobody_issues_its_certificate() {
    let applied = fill_defaults(&everything(), None, [0x4a, 0xbe]);
    let out = render(&applied, &Settings::defaults(), &ClusterInfo::default()).unwrap();
    assert!(out
        .iter()
        .all(|r| r.component != Some(Component::KubevirtIpamController)));
    let not_deployed = applied.not_deployed(&ClusterInfo::default());
    assert!(not_deployed
        .iter()
        .any(|n| n.component == "kubevirtIpamController" && n.reason.contains("cert-manager")));
    assert!(applied
        .not_deployed(&ClusterInfo::WITH_CERT_MANAGER)
        .iter()
        .all(|n| n.component != "kubevirtIpamController"));
}

#[test]
fn on_openshift_node_agents_get_sccs_and_the_cni_directories_are_openshifts() {
    let applied = fill_defaults(&everything(), None, [0x4a, 0xbe]);
    let openshift = ClusterInfo {
        openshift: true,
        ..ClusterInfo::default()
    };
    let out = render(&applied, &Settings::defaults(), &openshift).unwrap();
    let sccs: Vec<&Value> = out
        .iter()
        .map(|r| &r.object)
        .filter(|o| o["kind"] == "SecurityContextConstraints")
        .collect();
    let names: Vec<&str> = sccs
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    // multus, its dynamic networks and macvtap are not deployed there, as upstream
    assert_eq!(
        names,
        ["bridge-marker", "ovs-cni-marker", "nmstate-handler"]
    );
    let not_deployed: Vec<String> = applied
        .not_deployed(&openshift)
        .into_iter()
        .map(|n| n.component)
        .collect();
    for c in ["multus", "multusDynamicNetworks", "macvtap"] {
        assert!(
            not_deployed.contains(&c.to_string()),
            "{c}: {not_deployed:?}"
        );
    }
    assert_eq!(
        sccs[0]["users"][0],
        "system:serviceaccount:cluster-network-addons:bridge-marker"
    );
    let at = |kind: &str, name: &str| {
        out.iter()
            .position(|r| r.object["kind"] == kind && r.object["metadata"]["name"] == name)
            .unwrap()
    };
    assert!(
        at("SecurityContextConstraints", "bridge-marker")
            < at("DaemonSet", "kube-cni-linux-bridge-plugin")
    );
    let bridge = &out[at("DaemonSet", "kube-cni-linux-bridge-plugin")].object;
    assert_eq!(
        pod_spec(bridge)["volumes"][0]["hostPath"]["path"],
        "/var/lib/cni/bin"
    );
    // elsewhere: none, and the vanilla directories
    let vanilla = render(&applied, &Settings::defaults(), &ClusterInfo::default()).unwrap();
    assert!(vanilla
        .iter()
        .all(|r| r.object["kind"] != "SecurityContextConstraints"));
}

#[test]
fn nothing_but_the_namespace_for_an_empty_spec() {
    let applied = fill_defaults(&NetworkAddonsConfigSpec::default(), None, [1, 2]);
    let out = render(&applied, &Settings::defaults(), &ClusterInfo::default()).unwrap();
    let names: Vec<&str> = out
        .iter()
        .map(|r| r.object["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "cluster-network-addons",
            monitoring::SERVICE,
            monitoring::METRICS_READER,
            monitoring::METRICS_READER,
            network_policy::EGRESS_API,
            network_policy::EGRESS_DNS
        ]
    );
}

#[test]
fn placement_goes_to_the_right_workloads() {
    let mut spec = everything();
    spec.placement_configuration = Some(PlacementConfiguration {
        infra: Some(Placement {
            node_selector: Some(BTreeMap::from([("infra".into(), "yes".into())])),
            ..Placement::default()
        }),
        workloads: Some(Placement {
            node_selector: Some(BTreeMap::from([("workers".into(), "yes".into())])),
            ..Placement::default()
        }),
    });
    let applied = fill_defaults(&spec, None, [0x4a, 0xbe]);
    let out = render(&applied, &Settings::defaults(), &ClusterInfo::default()).unwrap();
    let daemon_sets = workloads(&out, "DaemonSet");
    let deployments = workloads(&out, "Deployment");
    // no IPAM controller (the one Deployment on the workloads placement, as upstream) here
    assert_eq!(daemon_sets.len(), 6);
    assert_eq!(deployments.len(), 3);
    for ds in &daemon_sets {
        assert_eq!(
            pod_spec(ds)["nodeSelector"],
            serde_json::json!({"workers": "yes"}),
            "{}",
            ds["metadata"]["name"]
        );
    }
    for d in &deployments {
        assert_eq!(
            pod_spec(d)["nodeSelector"],
            serde_json::json!({"infra": "yes"}),
            "{}",
            d["metadata"]["name"]
        );
    }
}

#[test]
fn default_placement_prefers_control_plane_for_infra_and_linux_for_agents() {
    let applied = fill_defaults(&everything(), None, [0x4a, 0xbe]);
    let out = render(&applied, &Settings::defaults(), &ClusterInfo::default()).unwrap();
    for ds in workloads(&out, "DaemonSet") {
        let pod = pod_spec(&ds);
        assert_eq!(pod["nodeSelector"]["kubernetes.io/os"], "linux");
        assert_eq!(
            pod["tolerations"][0]["key"],
            "node.kubernetes.io/unschedulable"
        );
        assert!(pod.get("affinity").is_none());
    }
    for d in workloads(&out, "Deployment") {
        let preferred = &pod_spec(&d)["affinity"]["nodeAffinity"]
            ["preferredDuringSchedulingIgnoredDuringExecution"];
        assert_eq!(
            preferred[0]["preference"]["matchExpressions"][0]["key"],
            "node-role.kubernetes.io/control-plane"
        );
        assert!(pod_spec(&d).get("nodeSelector").is_none());
    }
}

/// Every marker DaemonSet collects what lost DELs left on its node: through the node's root,
/// with the runtime socket the settings name, allowed to list pods and the networks;
/// `GC_INTERVAL=0` renders none of it.
#[test]
fn marker_agents_collect_garbage_through_the_nodes_root_unless_turned_off() {
    let applied = fill_defaults(&everything(), None, [0x4a, 0xbe]);
    let settings = Settings {
        gc_interval: std::time::Duration::from_secs(90),
        cri_socket: "/run/k3s/containerd/containerd.sock".to_string(),
        ..Settings::defaults()
    };
    let out = render(&applied, &settings, &ClusterInfo::default()).unwrap();
    for name in [linux_bridge::DAEMON_SET, ovs::DAEMON_SET] {
        let ds = out
            .iter()
            .find(|r| r.object["kind"] == "DaemonSet" && r.object["metadata"]["name"] == name)
            .unwrap();
        let pod = pod_spec(&ds.object);
        let args: Vec<&str> = pod["containers"][0]["command"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let after = |flag: &str| args.iter().position(|a| *a == flag).map(|i| args[i + 1]);
        assert_eq!(after("--gc-interval"), Some("90s"), "{name}");
        assert_eq!(after("--host-root"), Some("/host"), "{name}");
        assert_eq!(
            after("--cri-socket"),
            Some("/host/run/k3s/containerd/containerd.sock")
        );
        let root = pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["hostPath"]["path"] == "/")
            .unwrap();
        let mount = pod["containers"][0]["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == root["name"])
            .unwrap();
        assert_eq!(mount["mountPath"], "/host");
        assert_eq!(mount["mountPropagation"], "HostToContainer");
    }
    let rules = |out: &[Rendered], role: &str| {
        out.iter()
            .find(|r| r.object["kind"] == "ClusterRole" && r.object["metadata"]["name"] == role)
            .unwrap()
            .object["rules"]
            .to_string()
    };
    for role in [linux_bridge::CLUSTER_ROLE, ovs::CLUSTER_ROLE] {
        assert!(rules(&out, role).contains("network-attachment-definitions"));
        assert!(rules(&out, role).contains("\"pods\""));
    }

    let off = Settings {
        gc_interval: std::time::Duration::ZERO,
        ..Settings::defaults()
    };
    let out = render(&applied, &off, &ClusterInfo::default()).unwrap();
    let text = serde_json::to_string(&out.iter().map(|r| &r.object).collect::<Vec<_>>()).unwrap();
    assert!(!text.contains("--gc-interval"));
    for role in [linux_bridge::CLUSTER_ROLE, ovs::CLUSTER_ROLE] {
        assert!(!rules(&out, role).contains("network-attachment-definitions"));
    }
}

/// With `GC_METRICS_PORT`, each marker agent serves its collection's metrics on a port of
/// its node of its own (the components share the node's network), as the container port
/// the operator's metrics Service targets, in pods that Service selects; without it, none.
#[test]
fn marker_agents_serve_metrics_on_ports_of_their_own_when_a_port_is_set() {
    let applied = fill_defaults(&everything(), None, [0x4a, 0xbe]);
    let settings = Settings {
        gc_metrics_port: Some(9191),
        ..Settings::defaults()
    };
    let out = render(&applied, &settings, &ClusterInfo::default()).unwrap();
    for (name, port) in [(linux_bridge::DAEMON_SET, 9191), (ovs::DAEMON_SET, 9192)] {
        let ds = &out
            .iter()
            .find(|r| r.object["kind"] == "DaemonSet" && r.object["metadata"]["name"] == name)
            .unwrap()
            .object;
        let agent = &pod_spec(ds)["containers"][0];
        let args = agent["command"].as_array().unwrap();
        let at = args.iter().position(|a| a == "--metrics-address").unwrap();
        assert_eq!(args[at + 1], format!("0.0.0.0:{port}"), "{name}");
        assert_eq!(
            agent["ports"],
            serde_json::json!([{"name": "metrics", "containerPort": port, "protocol": "TCP"}])
        );
        assert_eq!(
            ds["spec"]["template"]["metadata"]["labels"][crate::labels::PROMETHEUS],
            "true"
        );
    }
    let none = render(&applied, &Settings::defaults(), &ClusterInfo::default()).unwrap();
    let text = serde_json::to_string(&none.iter().map(|r| &r.object).collect::<Vec<_>>()).unwrap();
    assert!(!text.contains("--metrics-address"));
}

/// An agent serving metrics has the API server review its readers' tokens: its ClusterRole
/// may create TokenReviews and SubjectAccessReviews, and only then.
#[test]
fn marker_agents_serving_metrics_may_review_tokens() {
    let applied = fill_defaults(&everything(), None, [0x4a, 0xbe]);
    let review_rules = |settings: &Settings| {
        let out = render(&applied, settings, &ClusterInfo::default()).unwrap();
        [linux_bridge::CLUSTER_ROLE, ovs::CLUSTER_ROLE].map(|role| {
            let rules = out
                .iter()
                .find(|r| r.object["kind"] == "ClusterRole" && r.object["metadata"]["name"] == role)
                .unwrap()
                .object["rules"]
                .to_string();
            rules.contains("tokenreviews") && rules.contains("subjectaccessreviews")
        })
    };
    let serving = Settings {
        gc_metrics_port: Some(9191),
        ..Settings::defaults()
    };
    assert_eq!(review_rules(&serving), [true, true]);
    assert_eq!(review_rules(&Settings::defaults()), [false, false]);
}

#[test]
fn node_agent_arguments_use_the_configured_binary_directory() {
    let settings = Settings {
        cni_bin_dir: "/var/lib/cni/bin".to_string(),
        ..Settings::defaults()
    };
    let applied = fill_defaults(&everything(), None, [0x4a, 0xbe]);
    let out = render(&applied, &settings, &ClusterInfo::default()).unwrap();
    let by_name = |name: &str| {
        out.iter()
            .find(|r| r.object["kind"] == "DaemonSet" && r.object["metadata"]["name"] == name)
            .map(|r| r.object.clone())
            .unwrap()
    };

    let bridge = by_name(linux_bridge::DAEMON_SET);
    let pod = pod_spec(&bridge);
    assert_eq!(
        pod["initContainers"][0]["command"],
        serde_json::json!([
            "/node-agent",
            "install",
            "--from",
            "/plugins",
            "--to",
            "/host/var/lib/cni/bin",
            "--plugins",
            "bridge,tuning,cnv-bridge=bridge,cnv-tuning=tuning",
            "--replace-foreign"
        ])
    );
    assert_eq!(
        pod["containers"][0]["command"],
        serde_json::json!([
            "/node-agent",
            "run",
            "--from",
            "/plugins",
            "--to",
            "/host/var/lib/cni/bin",
            "--plugins",
            "bridge,tuning,cnv-bridge=bridge,cnv-tuning=tuning",
            "--replace-foreign",
            "--mark",
            "linux-bridge",
            "--gc-interval",
            "10m",
            "--host-root",
            "/host",
            "--cni-conf-dir",
            "/host/etc/cni/net.d"
        ])
    );
    assert_eq!(
        pod["containers"][0]["readinessProbe"]["exec"]["command"],
        serde_json::json!([
            "/node-agent",
            "probe",
            "--to",
            "/host/var/lib/cni/bin",
            "--plugins",
            "bridge,tuning,cnv-bridge=bridge,cnv-tuning=tuning"
        ])
    );
    assert_eq!(
        pod["volumes"][0]["hostPath"]["path"],
        serde_json::json!("/var/lib/cni/bin")
    );
    assert_eq!(
        pod["containers"][0]["volumeMounts"][0]["mountPath"],
        serde_json::json!("/host/var/lib/cni/bin")
    );

    let ovs = by_name(ovs::DAEMON_SET);
    let command = pod_spec(&ovs)["containers"][0]["command"]
        .as_array()
        .unwrap()
        .clone();
    let words: Vec<&str> = command.iter().map(|v| v.as_str().unwrap()).collect();
    assert!(words.windows(4).any(|w| w
        == [
            "--mark",
            "ovs",
            "--ovsdb",
            "unix:/host/var/run/openvswitch/db.sock"
        ]));

    let macvtap = by_name(macvtap::DAEMON_SET);
    assert_eq!(
        pod_spec(&macvtap)["initContainers"][0]["command"][5],
        "/host/var/lib/cni/bin"
    );
    assert_eq!(
        pod_spec(&macvtap)["initContainers"][0]["command"][7],
        "macvtap"
    );
}

#[test]
fn every_container_pulls_with_the_spec_policy() {
    let mut spec = everything();
    spec.image_pull_policy = Some("Always".to_string());
    let applied = fill_defaults(&spec, None, [0x4a, 0xbe]);
    let out = render(&applied, &Settings::defaults(), &ClusterInfo::default()).unwrap();
    let mut seen = 0;
    for r in &out {
        let pod = pod_spec(&r.object);
        for list in ["initContainers", "containers"] {
            for c in pod[list].as_array().into_iter().flatten() {
                // The nmstate handler restarts from the node's image (render/nmstate.rs).
                if c["name"] == "nmstate-handler" {
                    continue;
                }
                assert_eq!(c["imagePullPolicy"], "Always");
                seen += 1;
            }
        }
    }
    assert!(seen >= 10);
}

/// Removing a component (nmstate, multus, the IPAM controller) must leave its CRDs, and so
/// every object users made of them: the deletion of unrendered objects never lists a CRD.
#[test]
fn no_rendered_crd_is_ever_pruned() {
    let applied = fill_defaults(&everything(), None, [0x4a, 0xbe]);
    let out = render(
        &applied,
        &Settings::defaults(),
        &ClusterInfo::WITH_CERT_MANAGER,
    )
    .unwrap();
    let crds: Vec<&Value> = out
        .iter()
        .map(|r| &r.object)
        .filter(|o| o["kind"] == "CustomResourceDefinition")
        .collect();
    assert!(crds
        .iter()
        .any(|o| o["metadata"]["name"] == crate::nmstate_names::POLICY_CRD));
    let deletable = crate::apply::deletion_order();
    for crd in crds {
        let kind = crate::apply::kind_of(crd).unwrap();
        assert!(kind.keep, "{}", crd["metadata"]["name"]);
        assert!(!deletable.contains(&kind), "{}", crd["metadata"]["name"]);
    }
}

#[test]
fn yaml_is_one_document_per_object() {
    let applied = fill_defaults(&everything(), None, [0x4a, 0xbe]);
    let out = render(&applied, &Settings::defaults(), &ClusterInfo::default()).unwrap();
    let yaml = to_yaml(&out).unwrap();
    assert_eq!(yaml.matches("---\n").count(), out.len());
    assert_eq!(yaml, to_yaml(&out).unwrap());
}
