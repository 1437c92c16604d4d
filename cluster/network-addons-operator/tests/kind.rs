//! One reconcile against a real API server (a kind cluster, for example):
//! `KUBECONFIG=~/.kube/config cargo test -p network-addons-operator --test kind -- --ignored`.
//!
//! It installs the CRD, creates the NetworkAddonsConfig `cluster` with linuxBridge, reconciles
//! it once, checks the DaemonSet and the applied ConfigMap exist, and deletes the
//! NetworkAddonsConfig again (its objects go with it; the namespace stays). Pods need not start:
//! only the API objects are checked.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, Client, ResourceExt};

use network_addons_operator::crd::crd;
use network_addons_operator::desired::{APPLIED_CONFIGMAP, APPLIED_KEY};
use network_addons_operator::reconcile::{reconcile_once, Ctx};
use network_addons_operator::settings::Settings;
use network_addons_operator::spec::{NetworkAddonsConfig, NetworkAddonsConfigSpec};

const MANAGER: &str = "network-addons-operator-test";

#[tokio::test]
#[ignore = "needs a cluster: set KUBECONFIG (e.g. kind) and run with --ignored"]
async fn one_reconcile_against_a_real_api_server() {
    let kubeconfig = std::env::var("KUBECONFIG").unwrap_or_default();
    assert!(
        !kubeconfig.is_empty(),
        "KUBECONFIG is not set: point it at a test cluster (kind create cluster)"
    );
    let client = Client::try_default()
        .await
        .expect("a client from KUBECONFIG");

    install_crd(&client).await;
    let configs: Api<NetworkAddonsConfig> = Api::all(client.clone());
    let spec: NetworkAddonsConfigSpec = serde_saphyr::from_str("linuxBridge: {}\n").unwrap();
    let nac = NetworkAddonsConfig::new("cluster", spec);
    let nac = configs
        .patch(
            "cluster",
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&nac),
        )
        .await
        .expect("create the NetworkAddonsConfig");

    let settings = Settings::from_env();
    let namespace = settings.namespace.clone();
    let ctx = Ctx::new(client.clone(), settings);
    let outcome = reconcile_once(&ctx, &nac).await;

    let daemon_sets: Api<DaemonSet> = Api::namespaced(client.clone(), &namespace);
    let ds = daemon_sets.get_opt("kube-cni-linux-bridge-plugin").await;
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    let record = config_maps.get_opt(APPLIED_CONFIGMAP).await;

    configs
        .delete("cluster", &DeleteParams::foreground())
        .await
        .expect("delete the NetworkAddonsConfig");

    outcome.expect("reconcile");
    let ds = ds.unwrap().expect("the linux bridge DaemonSet");
    assert_eq!(
        ds.owner_references()[0].uid,
        nac.uid().unwrap(),
        "owned by the NetworkAddonsConfig"
    );
    let record = record.unwrap().expect("the applied ConfigMap");
    let applied = record.data.unwrap_or_default();
    let applied: NetworkAddonsConfigSpec =
        serde_json::from_str(applied.get(APPLIED_KEY).expect("key applied")).unwrap();
    assert!(applied.linux_bridge.is_some());
    assert!(applied.image_pull_policy.is_some());
}

async fn install_crd(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = crd();
    let name = crd.name_any();
    crds.patch(
        &name,
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&crd),
    )
    .await
    .expect("install the CRD");
    for _ in 0..60 {
        let established = crds
            .get(&name)
            .await
            .ok()
            .and_then(|c| c.status)
            .and_then(|s| s.conditions)
            .into_iter()
            .flatten()
            .any(|c| c.type_ == "Established" && c.status == "True");
        if established {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("CRD {name} not established after 30 s");
}
