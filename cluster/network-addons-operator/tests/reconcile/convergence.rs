//! Bringing the cluster to what the spec asks: objects created, updated in place or re-created
//! when a field cannot change, those the render lost deleted, and drift undone.

use serde_json::json;

use crate::harness::{
    assert_contains, count, daemon_set_path, harness, owner_kinds, started, BRIDGE_DS,
    LINUX_BRIDGE, NS, OVS_DS,
};
use network_addons_operator::desired::APPLIED_CONFIGMAP;
use network_addons_operator::labels;
use network_addons_operator::reconcile::reconcile_once;

const MACVTAP_DS: &str = "macvtap-cni";
const MACVTAP_CONFIG: &str = "macvtap-deviceplugin-config";

#[tokio::test]
async fn creating_a_config_applies_its_objects_records_the_spec_and_reports_progress() {
    let h = started(LINUX_BRIDGE).await;

    let ds = h
        .fake
        .daemonset(NS, BRIDGE_DS)
        .expect("linux bridge DaemonSet");
    let owner = &ds["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "NetworkAddonsConfig");
    assert_eq!(owner["name"], "cluster");
    assert_eq!(owner["uid"], h.nac().await.metadata.uid.unwrap().as_str());
    assert_eq!(owner["controller"], true);
    assert_eq!(owner["blockOwnerDeletion"], true);
    assert_eq!(
        ds["metadata"]["labels"][labels::MANAGED_BY],
        labels::MANAGED_BY_VALUE
    );
    assert_eq!(ds["metadata"]["labels"][labels::COMPONENT], "linuxBridge");

    // every namespaced object is owned; the Namespace is not
    let namespace = h.fake.get("v1", "namespaces", "", NS).expect("Namespace");
    assert!(owner_kinds(&namespace).is_empty());
    for sa in h.fake.list("v1", "serviceaccounts") {
        assert_eq!(owner_kinds(&sa), ["NetworkAddonsConfig"]);
    }

    let applied = h.applied();
    assert!(applied.linux_bridge.is_some());
    assert_eq!(applied.image_pull_policy.as_deref(), Some("IfNotPresent"));
    assert!(applied.self_sign_configuration.is_some());
    assert!(applied.placement_configuration.is_some());
    let record = h.fake.configmap(NS, APPLIED_CONFIGMAP).unwrap();
    assert_eq!(owner_kinds(&record), ["NetworkAddonsConfig"]);

    let progressing = h.expect_condition("Progressing", "True", "Deploying").await;
    assert_contains(&progressing.message, BRIDGE_DS);
    h.expect_condition("Available", "False", "Startup").await;
    assert_eq!(h.condition("Degraded").await.status, "False");

    let status = h.nac().await.status.unwrap();
    assert_eq!(status.operator_version.as_deref(), Some("9.9.9"));
    assert_eq!(status.target_version.as_deref(), Some("9.9.9"));
    assert_eq!(status.observed_version, None);
    assert_eq!(status.observed_generation, Some(1));
    assert!(status
        .containers
        .iter()
        .any(|c| c.parent_kind == "DaemonSet" && c.parent_name == BRIDGE_DS));

    let reasons = h.event_reasons();
    assert!(reasons.contains(&"Modified".to_string()), "{reasons:?}");
    assert!(reasons.contains(&"Progressing".to_string()), "{reasons:?}");
    assert!(h.warnings().is_empty());
}

#[tokio::test]
async fn adding_a_component_applies_its_objects() {
    let h = started(LINUX_BRIDGE).await;
    h.set_ready(BRIDGE_DS);
    h.reconcile().await.unwrap();

    h.patch_spec(json!({"ovs": {}})).await;
    h.reconcile().await.unwrap();
    assert!(h.fake.daemonset(NS, OVS_DS).is_some());
    assert!(h.fake.daemonset(NS, BRIDGE_DS).is_some());
    assert!(h.applied().ovs.is_some());
    assert_eq!(h.condition("Available").await.status, "False");
    assert_eq!(h.nac().await.status.unwrap().observed_generation, Some(2));
    assert_eq!(
        count(&h.event_reasons(), "Modified"),
        2,
        "first apply and the change"
    );
}

#[tokio::test]
async fn changing_the_placement_updates_the_daemonset() {
    let h = started(LINUX_BRIDGE).await;
    let before = h.fake.daemonset(NS, BRIDGE_DS).unwrap();

    h.patch_spec(
        json!({"placementConfiguration": {"workloads": {"nodeSelector": {"cni": "yes"}}}}),
    )
    .await;
    h.reconcile().await.unwrap();
    let after = h.fake.daemonset(NS, BRIDGE_DS).unwrap();
    assert_eq!(
        after["spec"]["template"]["spec"]["nodeSelector"],
        json!({"cni": "yes"})
    );
    assert_eq!(
        after["metadata"]["uid"], before["metadata"]["uid"],
        "updated in place"
    );
    assert_eq!(
        after["metadata"]["generation"].as_i64(),
        before["metadata"]["generation"].as_i64().map(|g| g + 1)
    );
}

#[tokio::test]
async fn removing_a_component_deletes_only_its_owned_objects_and_keeps_the_namespace() {
    let h = started("linuxBridge: {}\novs: {}\n").await;
    assert!(h.fake.daemonset(NS, BRIDGE_DS).is_some());
    // carries our labels but no NetworkAddonsConfig owns it: not ours to delete
    h.fake.put(
        "apps/v1",
        "daemonsets",
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
               "metadata": {"name": "someone-elses", "namespace": NS,
                            "labels": {labels::MANAGED_BY: labels::MANAGED_BY_VALUE}},
               "spec": {"selector": {"matchLabels": {"a": "b"}}}}),
    );
    let bridge_accounts: Vec<String> = h
        .fake
        .list("v1", "serviceaccounts")
        .iter()
        .filter(|sa| sa["metadata"]["labels"][labels::COMPONENT] == "linuxBridge")
        .map(|sa| sa["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(!bridge_accounts.is_empty());
    h.fake.clear_requests();

    h.patch_spec(json!({"linuxBridge": null})).await;
    h.reconcile().await.unwrap();

    assert!(h.fake.daemonset(NS, BRIDGE_DS).is_none());
    for name in &bridge_accounts {
        assert!(
            h.fake.get("v1", "serviceaccounts", NS, name).is_none(),
            "{name}"
        );
    }
    assert!(h.fake.daemonset(NS, OVS_DS).is_some());
    assert!(h.fake.daemonset(NS, "someone-elses").is_some());
    assert!(h.fake.get("v1", "namespaces", "", NS).is_some());
    assert!(h.applied().linux_bridge.is_none());
    assert!(h.warnings().is_empty(), "{:?}", h.warnings());

    // the record is written after the last deletion
    let writes = h.object_writes();
    let last_delete = writes
        .iter()
        .rposition(|w| w.starts_with("DELETE"))
        .unwrap();
    let record = writes
        .iter()
        .position(|w| w.ends_with(APPLIED_CONFIGMAP))
        .unwrap();
    assert!(record > last_delete, "{writes:#?}");
}

#[tokio::test]
async fn only_the_config_named_cluster_is_reconciled() {
    let h = harness();
    let other = h.create("other", LINUX_BRIDGE).await;
    h.fake.clear_requests();
    reconcile_once(&h.ctx, &other).await.unwrap();
    assert!(h.fake.requests().is_empty(), "{:?}", h.fake.requests());
    let other = h.configs().get("other").await.unwrap();
    assert!(other.status.is_none());
}

#[tokio::test]
async fn a_create_only_config_map_keeps_the_administrators_data() {
    let h = harness();
    h.fake.put(
        "v1",
        "configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": MACVTAP_CONFIG, "namespace": NS},
               "data": {"DP_MACVTAP_CONF": "[{\"name\": \"dataplane\", \"master\": \"eth1\"}]"}}),
    );
    h.create("cluster", "macvtap: {}\n").await;
    h.reconcile().await.unwrap();
    assert!(h.fake.daemonset(NS, MACVTAP_DS).is_some());
    let cm = h.fake.configmap(NS, MACVTAP_CONFIG).unwrap();
    assert!(cm["data"]["DP_MACVTAP_CONF"]
        .as_str()
        .unwrap()
        .contains("eth1"));
    assert!(!h.wrote(MACVTAP_CONFIG));
}

#[tokio::test]
async fn a_create_only_config_map_is_created_once_then_left_alone() {
    let h = started("macvtap: {}\n").await;
    let created = h.fake.configmap(NS, MACVTAP_CONFIG).expect("created");
    assert_eq!(created["data"]["DP_MACVTAP_CONF"], "[]");
    assert_eq!(owner_kinds(&created), ["NetworkAddonsConfig"]);

    let mut edited = created.clone();
    edited["data"]["DP_MACVTAP_CONF"] = json!("[{\"name\": \"a\", \"master\": \"eth2\"}]");
    h.fake.put("v1", "configmaps", edited.clone());
    h.fake.clear_requests();
    h.reconcile().await.unwrap();
    assert_eq!(
        h.fake.configmap(NS, MACVTAP_CONFIG).unwrap()["data"],
        edited["data"]
    );
    assert!(!h.wrote(MACVTAP_CONFIG));
}

#[tokio::test]
async fn a_daemonset_with_another_selector_is_deleted_and_created_again() {
    let h = harness();
    // left by an older release with a selector this one does not render
    h.fake.put(
        "apps/v1",
        "daemonsets",
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
               "metadata": {"name": BRIDGE_DS, "namespace": NS,
                            "labels": {labels::MANAGED_BY: labels::MANAGED_BY_VALUE}},
               "spec": {"selector": {"matchLabels": {"name": "old-selector"}}}}),
    );
    let old_uid = h.fake.daemonset(NS, BRIDGE_DS).unwrap()["metadata"]["uid"].clone();
    h.create("cluster", LINUX_BRIDGE).await;
    h.reconcile().await.unwrap();

    let ds = h.fake.daemonset(NS, BRIDGE_DS).unwrap();
    assert_ne!(ds["metadata"]["uid"], old_uid);
    assert_ne!(
        ds["spec"]["selector"],
        json!({"matchLabels": {"name": "old-selector"}})
    );
    let writes = h.object_writes();
    let ds_path = daemon_set_path(BRIDGE_DS);
    let deleted = writes
        .iter()
        .position(|w| *w == format!("DELETE {ds_path}"))
        .expect("deleted");
    assert!(writes[deleted + 1..]
        .iter()
        .any(|w| *w == format!("PATCH {ds_path}")));
    // its pods no longer match the new selector: they go with it
    assert_eq!(h.fake.deletes(), [(ds_path, "Background".to_string())]);
    assert_eq!(h.condition("Degraded").await.status, "False");
}

#[tokio::test]
async fn a_binding_whose_role_changed_is_deleted_and_created_again() {
    let h = harness();
    // ours, but bound to a role this release does not render: roleRef cannot change in place
    h.fake.put(
        "rbac.authorization.k8s.io/v1",
        "clusterrolebindings",
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "bridge-marker-crb",
                            "labels": {labels::MANAGED_BY: labels::MANAGED_BY_VALUE}},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": "old-role"},
               "subjects": []}),
    );
    h.create("cluster", LINUX_BRIDGE).await;
    h.reconcile().await.unwrap();

    let binding = h
        .fake
        .get(
            "rbac.authorization.k8s.io/v1",
            "clusterrolebindings",
            "",
            "bridge-marker-crb",
        )
        .unwrap();
    assert_eq!(binding["roleRef"]["name"], "bridge-marker-cr");
    assert_eq!(
        h.fake.deletes(),
        [(
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/bridge-marker-crb".to_string(),
            "Background".to_string()
        )]
    );
    assert_eq!(h.condition("Degraded").await.status, "False");
}

#[tokio::test]
async fn a_label_changed_behind_the_operators_back_is_applied_again() {
    let h = started(LINUX_BRIDGE).await;
    let mut ds = h.fake.daemonset(NS, BRIDGE_DS).unwrap();
    ds["metadata"]["labels"][labels::MANAGED_BY] = json!("someone-else");
    h.fake.put("apps/v1", "daemonsets", ds);
    h.reconcile().await.unwrap();
    let ds = h.fake.daemonset(NS, BRIDGE_DS).unwrap();
    assert_eq!(
        ds["metadata"]["labels"][labels::MANAGED_BY],
        labels::MANAGED_BY_VALUE
    );
}

#[tokio::test]
async fn drift_is_undone_on_the_next_reconcile() {
    let h = started(LINUX_BRIDGE).await;
    let mut ds = h.fake.daemonset(NS, BRIDGE_DS).unwrap();
    let rendered = ds["spec"]["template"]["spec"]["containers"][0]["image"].clone();
    ds["spec"]["template"]["spec"]["containers"][0]["image"] = json!("example.com/other:1");
    h.fake.put("apps/v1", "daemonsets", ds);

    h.reconcile().await.unwrap();
    let ds = h.fake.daemonset(NS, BRIDGE_DS).unwrap();
    assert_eq!(
        ds["spec"]["template"]["spec"]["containers"][0]["image"],
        rendered
    );
}

#[tokio::test]
async fn the_ipam_controller_is_deployed_once_cert_manager_is_installed() {
    let h = started("kubevirtIpamController: {}\n").await;
    assert!(h
        .fake
        .get(
            "apps/v1",
            "deployments",
            NS,
            "kubevirt-ipam-controller-manager"
        )
        .is_none());
    for crd in network_addons_operator::cluster::CERT_MANAGER_CRDS {
        h.fake.put(
            "apiextensions.k8s.io/v1",
            "customresourcedefinitions",
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                   "metadata": {"name": crd}}),
        );
    }
    h.reconcile().await.unwrap();
    assert!(h
        .fake
        .get(
            "apps/v1",
            "deployments",
            NS,
            "kubevirt-ipam-controller-manager"
        )
        .is_some());
    let cert = h
        .fake
        .get(
            "cert-manager.io/v1",
            "certificates",
            NS,
            "kubevirt-ipam-controller-serving-cert",
        )
        .expect("a Certificate for the webhook");
    assert_eq!(cert["spec"]["secretName"], "webhook-server-cert");
    assert!(h.nac().await.status.unwrap().not_deployed.is_empty());
    let ipam = h.condition("KubevirtIpamControllerAvailable").await;
    assert_eq!(ipam.reason, "Deploying");
}

#[tokio::test]
async fn removing_kubemacpool_deletes_its_webhook_before_anything_else() {
    let h = started("kubeMacPool: {}\n").await;
    assert!(!h.webhook_configurations().is_empty());
    h.fake.clear_requests();

    h.patch_spec(json!({"kubeMacPool": null})).await;
    h.reconcile().await.unwrap();
    let deletes: Vec<String> = h
        .object_writes()
        .into_iter()
        .filter(|w| w.starts_with("DELETE"))
        .collect();
    assert!(deletes.len() > 1, "{deletes:?}");
    assert!(
        deletes[0].contains("/mutatingwebhookconfigurations/"),
        "{deletes:#?}"
    );
    assert!(h.webhook_configurations().is_empty());
    assert!(h.fake.list("apps/v1", "deployments").is_empty());
    assert!(h.warnings().is_empty());
}
