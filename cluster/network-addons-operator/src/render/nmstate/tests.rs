#![allow(clippy::unwrap_used)]
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
            let item = &version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
                ["conditions"]["items"]["properties"];
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
