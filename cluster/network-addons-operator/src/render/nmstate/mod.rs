//! nmstate: kubernetes-nmstate's API, served by our handler. Users declare a node's network
//! (bridges, bonds, VLANs, addresses) in a NodeNetworkConfigurationPolicy; the handler on each
//! node it selects applies it, reports per node in a NodeNetworkConfigurationEnactment, and
//! publishes the node's current network in a NodeNetworkState.
//!
//! The three CRDs are kubernetes-nmstate's (group `nmstate.io`, names, short names, versions,
//! fields), so the policies written for it apply unchanged, the walkthrough's `nmstate.io/v1alpha1`
//! ones included. Every version of a CRD has the same schema, so none needs a conversion webhook.
//! They are never deleted by the operator (a CRD's deletion deletes every policy): removing
//! `nmstate` from the config removes the handler and its RBAC only.
//!
//! Upstream runs a handler image of its own with NetworkManager; here the handler is our
//! image's `node-agent nmstate`, like every other component's node agent. Its DaemonSet and
//! selector carry upstream's names, so a handler the upstream operator left is taken over in
//! place; where kubernetes-nmstate is installed by other means nothing is rendered
//! ([`crate::cluster::ForeignNmstate`]).

use k8s_openapi::api::core::v1::{
    Container, ExecAction, HostPathVolumeSource, PodSpec, Probe, Volume,
};
use k8s_openapi::api::rbac::v1::PolicyRule;

use super::common::{self, Ctx, Identity, NODE_AGENT};
use super::Rendered;
use crate::error::Result;
use crate::settings::DEFAULT_NMSTATE_PROBE_TIMEOUT;
use crate::spec::Component;
use net_types::format_go_duration;

mod crds;

use crate::nmstate_names::{DAEMON_SET, GROUP};
pub use crds::status_columns;
use crds::{enactment_crd, policy_crd, state_crd};

pub const SERVICE_ACCOUNT: &str = "nmstate-handler";
pub const CLUSTER_ROLE: &str = "nmstate-handler";
pub const CLUSTER_ROLE_BINDING: &str = "nmstate-handler";
/// The handler's journal and lock, on the node so they outlive the pod: a new handler pod
/// finds what the previous one was applying, and two never apply at once.
pub const RUN_DIR: &str = "/run/kubernetes-nmstate";
const RUN_VOLUME: &str = "nmstate-run";
/// Upstream's selector, fixed once created.
const SELECTOR: &[(&str, &str)] = &[("name", DAEMON_SET)];
/// Upstream's pod labels: its handlers count the nodes that run a handler pod by `component`.
pub const POD_LABELS: &[(&str, &str)] = &[
    ("app", "kubernetes-nmstate"),
    ("component", "kubernetes-nmstate-handler"),
];
const COMPONENT: Component = Component::Nmstate;

pub fn render(ctx: &Ctx) -> Result<Vec<Rendered>> {
    let c = Some(COMPONENT);
    let mut out = vec![
        common::to_rendered(c, &policy_crd(ctx))?,
        common::to_rendered(c, &enactment_crd(ctx))?,
        common::to_rendered(c, &state_crd(ctx))?,
    ];
    out.extend(common::cluster_identity(
        ctx,
        COMPONENT,
        Identity {
            account: SERVICE_ACCOUNT,
            role: CLUSTER_ROLE,
            binding: CLUSTER_ROLE_BINDING,
        },
        handler_rules(),
    )?);
    out.push(common::to_rendered(c, &daemon_set(ctx))?);
    Ok(out)
}

/// What the handler does through the API, and nothing more.
fn handler_rules() -> Vec<PolicyRule> {
    vec![
        // The policies to enact on its node: read only, so that no node can change what every
        // other node applies.
        common::rule(
            &[GROUP],
            &["nodenetworkconfigurationpolicies"],
            &["get", "list", "watch"],
        ),
        // A policy's conditions, aggregated over its enactments, and the nodes configuring it
        // (`configuringNodes`, counted in `unavailableNodeCount`): a handler takes a slot by
        // writing them under the policy's resourceVersion, and a conflicting write is what
        // keeps more than `maxUnavailable` nodes from configuring at once.
        common::rule(
            &[GROUP],
            &["nodenetworkconfigurationpolicies/status"],
            &["get", "update", "patch"],
        ),
        // One enactment per node and policy, one state per node: created, kept and deleted
        // (when a policy stops selecting the node, or is gone) by the node's handler.
        common::rule(
            &[GROUP],
            &["nodenetworkconfigurationenactments", "nodenetworkstates"],
            &[
                "get", "list", "watch", "create", "update", "patch", "delete",
            ],
        ),
        // Their status: what the handler applied and found.
        common::rule(
            &[GROUP],
            &[
                "nodenetworkconfigurationenactments/status",
                "nodenetworkstates/status",
            ],
            &["get", "update", "patch"],
        ),
        // The nodes' labels against a policy's nodeSelector, and how many nodes it selects
        // (`maxUnavailable` is a share of them); enactments and states are owned by the Node.
        common::rule(&[""], &["nodes"], &["get", "list", "watch"]),
        // The handler pods (by POD_LABELS): a selected node without one counts as not
        // configuring, so a policy's status can say when it is done.
        common::rule(&[""], &["pods"], &["list", "watch"]),
        // Events on the policies, as upstream's handler records them.
        common::rule(&[""], &["events"], &["create", "patch"]),
    ]
}

/// The handler on every node of the workloads placement, in the host's network namespace
/// (it changes the node's links), privileged, rolled out to 10% of the nodes at a time like
/// the other node agents. Ready only once it has applied its node's policies again after
/// starting: a rollout moves on to the next nodes only when this one's network is back.
fn daemon_set(ctx: &Ctx) -> k8s_openapi::api::apps::v1::DaemonSet {
    let pod = PodSpec {
        service_account_name: Some(SERVICE_ACCOUNT.to_string()),
        host_network: Some(true),
        priority_class_name: Some("system-node-critical".to_string()),
        containers: vec![handler_container(ctx)],
        volumes: Some(vec![Volume {
            host_path: Some(HostPathVolumeSource {
                path: RUN_DIR.to_string(),
                type_: Some("DirectoryOrCreate".to_string()),
            }),
            ..common::host_path_volume(RUN_VOLUME, RUN_DIR)
        }]),
        ..PodSpec::default()
    };
    let mut ds = common::daemon_set(
        ctx,
        COMPONENT,
        DAEMON_SET,
        SELECTOR,
        "Applies the NodeNetworkConfigurationPolicies to its node and reports its network state",
        pod,
        Some("10%"),
    );
    let pod_labels = ds
        .spec
        .as_mut()
        .and_then(|s| s.template.metadata.as_mut())
        .map(|m| m.labels.get_or_insert_with(Default::default));
    if let Some(labels) = pod_labels {
        labels.extend(common::string_map(POD_LABELS));
    }
    ds
}

fn handler_container(ctx: &Ctx) -> Container {
    Container {
        command: Some(common::strings(&[NODE_AGENT, "nmstate"])),
        // The handler's own default is upstream's; only another value is rendered.
        args: (ctx.settings.nmstate_probe_timeout != DEFAULT_NMSTATE_PROBE_TIMEOUT).then(|| {
            vec![
                "--probe-timeout".to_string(),
                format_go_duration(ctx.settings.nmstate_probe_timeout),
            ]
        }),
        env: Some(vec![common::field_env("NODE_NAME", "spec.nodeName")]),
        readiness_probe: Some(Probe {
            exec: Some(ExecAction {
                command: Some(common::strings(&[NODE_AGENT, "nmstate-ready"])),
            }),
            period_seconds: Some(10),
            ..Probe::default()
        }),
        resources: Some(common::requests("10m", "50Mi")),
        security_context: Some(common::privileged()),
        volume_mounts: Some(vec![common::mount(RUN_VOLUME, RUN_DIR)]),
        // Whatever the spec's pull policy: a handler killed while its apply had cut the node
        // off must start again from the image the node has, to put the node back; it could
        // not pull one.
        image_pull_policy: Some("IfNotPresent".to_string()),
        ..common::container(ctx, "nmstate-handler", &ctx.settings.plugins_image)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::cluster::ClusterInfo;
    use crate::nmstate_names::{ENACTMENT_CRD, POLICY_CRD, STATE_CRD};
    use crate::settings::Settings;
    use crate::spec::{NMState, NetworkAddonsConfigSpec};
    use serde_json::{json, Value};

    fn rendered() -> Vec<Value> {
        let spec = NetworkAddonsConfigSpec {
            nmstate: Some(NMState {}),
            ..NetworkAddonsConfigSpec::default()
        };
        let settings = Settings::defaults();
        render(&Ctx::new(&spec, &settings, &ClusterInfo::default()))
            .unwrap()
            .into_iter()
            .map(|r| r.object)
            .collect()
    }

    fn named<'a>(out: &'a [Value], kind: &str, name: &str) -> &'a Value {
        out.iter()
            .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no {kind} {name}"))
    }

    /// A JSONPath of the form `.a.b[?(@.k=="v")].c`, the one form the printer columns use,
    /// evaluated as kubectl does: the `c` of every element of `.a.b` whose `k` is `v`.
    fn filter_path(path: &str, object: &Value) -> Vec<Value> {
        let (list, rest) = path.split_once("[?(@.").unwrap();
        let (filter, field) = rest.split_once(")]").unwrap();
        let (key, wanted) = filter.split_once("==").unwrap();
        let wanted: String = serde_json::from_str(wanted).unwrap();
        let items = list
            .trim_start_matches('.')
            .split('.')
            .fold(object, |v, k| &v[k]);
        items
            .as_array()
            .into_iter()
            .flatten()
            .filter(|item| item[key] == wanted.as_str())
            .map(|item| {
                field
                    .trim_start_matches('.')
                    .split('.')
                    .fold(item, |v, k| &v[k])
            })
            .cloned()
            .collect()
    }

    fn columns(crd: &Value, version: &str) -> Vec<Value> {
        crd["spec"]["versions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == version)
            .unwrap()["additionalPrinterColumns"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    fn version_names(crd: &Value) -> Vec<(String, bool, bool)> {
        crd["spec"]["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| {
                (
                    v["name"].as_str().unwrap().to_string(),
                    v["storage"].as_bool().unwrap(),
                    v["deprecated"].as_bool().unwrap_or(false),
                )
            })
            .collect()
    }

    #[test]
    fn the_handler_starts_from_the_nodes_image_whatever_the_pull_policy() {
        let spec = NetworkAddonsConfigSpec {
            nmstate: Some(NMState {}),
            image_pull_policy: Some("Always".to_string()),
            ..NetworkAddonsConfigSpec::default()
        };
        let settings = Settings::defaults();
        let out = render(&Ctx::new(&spec, &settings, &ClusterInfo::default())).unwrap();
        let ds = out
            .iter()
            .find(|r| r.object["kind"] == "DaemonSet")
            .unwrap();
        let c = &ds.object["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["imagePullPolicy"], "IfNotPresent");
    }

    #[test]
    fn the_three_crds_are_kubernetes_nmstates_cluster_scoped_kinds() {
        let out = rendered();
        for (name, kind, short) in [
            (POLICY_CRD, "NodeNetworkConfigurationPolicy", "nncp"),
            (ENACTMENT_CRD, "NodeNetworkConfigurationEnactment", "nnce"),
            (STATE_CRD, "NodeNetworkState", "nns"),
        ] {
            let crd = named(&out, "CustomResourceDefinition", name);
            assert_eq!(crd["spec"]["group"], "nmstate.io");
            assert_eq!(crd["spec"]["scope"], "Cluster");
            assert_eq!(crd["spec"]["names"]["kind"], kind);
            assert_eq!(crd["spec"]["names"]["shortNames"], json!([short]));
            assert_eq!(
                format!(
                    "{}.nmstate.io",
                    crd["spec"]["names"]["plural"].as_str().unwrap()
                ),
                name
            );
        }
    }

    #[test]
    fn policies_are_stored_as_v1_and_served_as_the_walkthroughs_v1alpha1_too() {
        let out = rendered();
        let crd = named(&out, "CustomResourceDefinition", POLICY_CRD);
        let v = |n: &str, s: bool, d: bool| (n.to_string(), s, d);
        assert_eq!(
            version_names(crd),
            [
                v("v1", true, false),
                v("v1beta1", false, true),
                v("v1alpha1", false, true)
            ]
        );
        assert!(crd["spec"]["versions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v["served"] == true && v["subresources"]["status"] == json!({})));
    }

    #[test]
    fn every_version_of_a_crd_has_the_same_schema_so_no_conversion_is_needed() {
        let out = rendered();
        for name in [POLICY_CRD, ENACTMENT_CRD, STATE_CRD] {
            let crd = named(&out, "CustomResourceDefinition", name);
            assert_eq!(crd["spec"]["conversion"]["strategy"], "None");
            let schemas: Vec<&Value> = crd["spec"]["versions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| &v["schema"])
                .collect();
            assert!(schemas.windows(2).all(|w| w[0] == w[1]), "{name}");
        }
    }

    #[test]
    fn the_status_column_shows_the_reason_of_the_condition_that_holds() {
        let policy = json!({"status": {"conditions": [
            {"type": "Available", "status": "True", "reason": "SuccessfullyConfigured"},
            {"type": "Degraded", "status": "False", "reason": "SuccessfullyConfigured"},
            {"type": "Progressing", "status": "False", "reason": "SuccessfullyConfigured"},
        ]}});
        let out = rendered();
        for name in [POLICY_CRD, ENACTMENT_CRD] {
            let crd = named(&out, "CustomResourceDefinition", name);
            let cols = columns(crd, "v1alpha1");
            assert_eq!(cols[0]["name"], "Status");
            assert_eq!(
                filter_path(cols[0]["jsonPath"].as_str().unwrap(), &policy),
                [json!("SuccessfullyConfigured")]
            );
            assert_eq!(cols[1]["name"], "Type");
            assert_eq!(cols[1]["priority"], 1, "shown with -o wide only");
            assert_eq!(
                filter_path(cols[1]["jsonPath"].as_str().unwrap(), &policy),
                [json!("Available")]
            );
        }
    }

    #[test]
    fn the_columns_read_fields_the_schema_keeps() {
        let out = rendered();
        for name in [POLICY_CRD, ENACTMENT_CRD] {
            let crd = named(&out, "CustomResourceDefinition", name);
            for version in crd["spec"]["versions"].as_array().unwrap() {
                let item = &version["schema"]["openAPIV3Schema"]["properties"]["status"]
                    ["properties"]["conditions"]["items"]["properties"];
                for col in version["additionalPrinterColumns"].as_array().unwrap() {
                    let path = col["jsonPath"].as_str().unwrap();
                    assert!(path.starts_with(".status.conditions[?(@.status==\"True\")]."));
                    let field = path.rsplit('.').next().unwrap();
                    assert!(item[field].is_object(), "{name}: {path}");
                }
            }
        }
    }

    #[test]
    fn free_form_network_states_are_kept_whole() {
        let out = rendered();
        let schema = |name: &str| {
            named(&out, "CustomResourceDefinition", name)["spec"]["versions"][0]["schema"]
                ["openAPIV3Schema"]
                .clone()
        };
        let kept = |s: &Value| s["x-kubernetes-preserve-unknown-fields"] == true;
        assert!(kept(
            &schema(POLICY_CRD)["properties"]["spec"]["properties"]["desiredState"]
        ));
        assert!(kept(
            &schema(ENACTMENT_CRD)["properties"]["status"]["properties"]["desiredState"]
        ));
        assert!(kept(
            &schema(STATE_CRD)["properties"]["status"]["properties"]["currentState"]
        ));
    }

    #[test]
    fn the_handler_runs_our_image_on_the_hosts_network_with_its_journal_on_the_node() {
        let out = rendered();
        let ds = named(&out, "DaemonSet", DAEMON_SET);
        let pod = &ds["spec"]["template"]["spec"];
        assert_eq!(pod["hostNetwork"], true);
        assert_eq!(pod["serviceAccountName"], SERVICE_ACCOUNT);
        let c = &pod["containers"][0];
        assert_eq!(c["image"], Settings::defaults().plugins_image);
        assert_eq!(c["command"], json!(["/node-agent", "nmstate"]));
        assert!(c.get("args").is_none());
        assert_eq!(
            c["readinessProbe"]["exec"]["command"],
            json!(["/node-agent", "nmstate-ready"])
        );
        assert_eq!(c["securityContext"]["privileged"], true);
        assert_eq!(c["env"][0]["name"], "NODE_NAME");
        assert_eq!(
            c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"],
            "spec.nodeName"
        );
        assert_eq!(
            c["volumeMounts"],
            json!([{"name": RUN_VOLUME, "mountPath": RUN_DIR}])
        );
        assert_eq!(
            pod["volumes"],
            json!([{"name": RUN_VOLUME,
                    "hostPath": {"path": RUN_DIR, "type": "DirectoryOrCreate"}}])
        );
    }

    #[test]
    fn handler_pods_carry_the_labels_upstream_counts_them_by() {
        let out = rendered();
        let ds = named(&out, "DaemonSet", DAEMON_SET);
        let labels = &ds["spec"]["template"]["metadata"]["labels"];
        assert_eq!(labels["app"], "kubernetes-nmstate");
        assert_eq!(labels["component"], "kubernetes-nmstate-handler");
        assert_eq!(
            ds["spec"]["selector"]["matchLabels"],
            json!({"name": DAEMON_SET})
        );
        assert_eq!(labels["name"], DAEMON_SET);
    }

    #[test]
    fn the_handler_rolls_out_like_the_other_node_agents() {
        let out = rendered();
        let ds = named(&out, "DaemonSet", DAEMON_SET);
        assert_eq!(
            ds["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}})
        );
        let pod = &ds["spec"]["template"]["spec"];
        assert_eq!(pod["nodeSelector"]["kubernetes.io/os"], "linux");
        assert_eq!(
            pod["tolerations"][0]["key"],
            "node.kubernetes.io/unschedulable"
        );
        assert_eq!(pod["priorityClassName"], "system-node-critical");
    }

    fn verbs(out: &[Value], resource: &str) -> Vec<String> {
        named(out, "ClusterRole", CLUSTER_ROLE)["rules"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| {
                r["resources"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|x| x == resource)
            })
            .flat_map(|r| r["verbs"].as_array().unwrap().clone())
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn the_handler_only_reads_policies_and_writes_their_status() {
        let out = rendered();
        let policies = verbs(&out, "nodenetworkconfigurationpolicies");
        assert_eq!(policies, ["get", "list", "watch"]);
        let status = verbs(&out, "nodenetworkconfigurationpolicies/status");
        assert_eq!(status, ["get", "update", "patch"]);
    }

    #[test]
    fn the_handler_only_lists_and_watches_pods() {
        assert_eq!(verbs(&rendered(), "pods"), ["list", "watch"]);
    }

    #[test]
    fn the_binding_gives_the_role_to_the_handlers_account() {
        let out = rendered();
        let binding = named(&out, "ClusterRoleBinding", CLUSTER_ROLE_BINDING);
        assert_eq!(binding["roleRef"]["name"], CLUSTER_ROLE);
        assert_eq!(binding["subjects"][0]["name"], SERVICE_ACCOUNT);
        assert_eq!(
            binding["subjects"][0]["namespace"],
            Settings::defaults().namespace
        );
    }
}
