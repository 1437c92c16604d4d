//! nmstate: its CRDs and handler deployed and reported, its CRDs kept when it is removed, and
//! nothing of it where kubernetes-nmstate is installed.

use serde_json::json;

use crate::harness::{assert_contains, harness, started, Harness, NS};
use network_addons_operator::labels;

const NMSTATE: &str = "nmstate: {}\n";
const NMSTATE_DS: &str = "nmstate-handler";
const NMSTATE_CRDS: [&str; 3] = [
    "nodenetworkconfigurationpolicies.nmstate.io",
    "nodenetworkconfigurationenactments.nmstate.io",
    "nodenetworkstates.nmstate.io",
];

fn crd_exists(h: &Harness, name: &str) -> bool {
    h.fake
        .get(
            "apiextensions.k8s.io/v1",
            "customresourcedefinitions",
            "",
            name,
        )
        .is_some()
}

#[tokio::test]
async fn nmstate_deploys_its_crds_and_handler_and_reports_its_condition() {
    let h = started(NMSTATE).await;
    for crd in NMSTATE_CRDS {
        assert!(crd_exists(&h, crd), "{crd}");
    }
    assert!(h.fake.daemonset(NS, NMSTATE_DS).is_some());
    h.expect_condition("NmstateAvailable", "False", "Deploying")
        .await;
    h.set_ready(NMSTATE_DS);
    h.reconcile().await.unwrap();
    h.expect_condition("NmstateAvailable", "True", "AsExpected")
        .await;
    assert!(h.nac().await.status.unwrap().not_deployed.is_empty());
}

#[tokio::test]
async fn removing_nmstate_deletes_its_handler_and_rbac_and_keeps_its_crds() {
    let h = started(NMSTATE).await;
    h.patch_spec(json!({"nmstate": null})).await;
    h.reconcile().await.unwrap();

    assert!(h.fake.daemonset(NS, NMSTATE_DS).is_none());
    assert!(h
        .fake
        .get("v1", "serviceaccounts", NS, "nmstate-handler")
        .is_none());
    for (gv, plural) in [
        ("rbac.authorization.k8s.io/v1", "clusterroles"),
        ("rbac.authorization.k8s.io/v1", "clusterrolebindings"),
    ] {
        assert!(
            h.fake.get(gv, plural, "", "nmstate-handler").is_none(),
            "{plural}"
        );
    }
    // every user's policies, enactments and states live in them
    for crd in NMSTATE_CRDS {
        assert!(crd_exists(&h, crd), "{crd}");
    }
    assert!(h
        .fake
        .deletes()
        .iter()
        .all(|(path, _)| !path.contains("customresourcedefinitions")));
}

#[tokio::test]
async fn where_kubernetes_nmstate_is_installed_nmstate_renders_nothing_and_says_why() {
    let h = harness();
    h.fake.put(
        "apiextensions.k8s.io/v1",
        "customresourcedefinitions",
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": NMSTATE_CRDS[0],
                            "labels": {"app": "kubernetes-nmstate"}}}),
    );
    h.create("cluster", NMSTATE).await;
    h.reconcile().await.unwrap();

    assert!(h.fake.daemonset(NS, NMSTATE_DS).is_none());
    assert!(!crd_exists(&h, NMSTATE_CRDS[1]));
    let untouched = h
        .fake
        .get(
            "apiextensions.k8s.io/v1",
            "customresourcedefinitions",
            "",
            NMSTATE_CRDS[0],
        )
        .unwrap();
    assert!(untouched["metadata"]["labels"]
        .get(labels::MANAGED_BY)
        .is_none());
    let condition = h
        .expect_condition("NmstateAvailable", "False", "UpstreamInstalled")
        .await;
    assert_contains(&condition.message, NMSTATE_CRDS[0]);
    let status = h.nac().await.status.unwrap();
    assert_eq!(status.not_deployed[0].component, "nmstate");
    assert_eq!(h.condition("Available").await.status, "True");
}

#[tokio::test]
async fn a_handler_daemonset_of_another_installation_keeps_ours_away() {
    let h = harness();
    h.fake.put(
        "apps/v1",
        "daemonsets",
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
               "metadata": {"name": NMSTATE_DS, "namespace": "nmstate",
                            "labels": {"app": "kubernetes-nmstate"}},
               "spec": {"selector": {"matchLabels": {"name": NMSTATE_DS}}}}),
    );
    h.create("cluster", NMSTATE).await;
    h.reconcile().await.unwrap();

    assert!(h.fake.daemonset(NS, NMSTATE_DS).is_none());
    for crd in NMSTATE_CRDS {
        assert!(!crd_exists(&h, crd), "{crd}");
    }
    let condition = h
        .expect_condition("NmstateAvailable", "False", "UpstreamInstalled")
        .await;
    assert_contains(&condition.message, "DaemonSet nmstate-handler");
}

#[tokio::test]
async fn our_own_nmstate_crds_do_not_count_as_another_installation() {
    let h = started(NMSTATE).await;
    h.reconcile().await.unwrap();
    assert!(h.fake.daemonset(NS, NMSTATE_DS).is_some());
    assert!(h.nac().await.status.unwrap().not_deployed.is_empty());
}
