#![allow(clippy::unwrap_used)]
//! The operator's CRD on today's Kubernetes API for custom resources (1.36.4, built by
//! scripts/apiextensions-server, with kubectl of the same release): deploy/'s CRD is established,
//! every documented NetworkAddonsConfig applies by server-side apply and is kept as written, a
//! status goes to the status subresource by server-side apply, and the CRD's CEL rules refuse at
//! `kubectl apply` what the reconciler would refuse, in the reconciler's words, while valid
//! changes go through.
//!
//! Each test starts its own etcd and server on 127.0.0.1 and stops them. Without the server
//! built (`scripts/apiextensions-server`, once, as root) every test fails saying so.
//! `KUBE_TIER_DEPLOY_DIR` names another deploy/ directory, e.g. one written by
//! `cargo run -p network-addons-operator -- deploy --out DIR` from the current code.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use serde_json::Value;

use kube_tier::apiextensions::ApiExtensions;
use kube_tier::daemon::wait_for;

const CRD: &str = "networkaddonsconfigs.networkaddonsoperator.network.kubevirt.io";

fn deploy_dir() -> PathBuf {
    std::env::var_os("KUBE_TIER_DEPLOY_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| kube_tier::repo().join("deploy"))
}

/// Whether condition `type_` of `object` is True.
fn is_true(object: &Value, type_: &str) -> bool {
    object["status"]["conditions"].as_array().is_some_and(|c| {
        c.iter()
            .any(|c| c["type"] == type_ && c["status"] == "True")
    })
}

fn ok<T>(result: Result<T>) -> T {
    result.unwrap_or_else(|e| panic!("{e:#}"))
}

/// A server with deploy/'s CRDs applied and established.
fn server() -> ApiExtensions {
    let api = ok(ApiExtensions::start());
    eprintln!(
        "apiextensions server {} ready {:.2} s after its start",
        kube_tier::apiextensions::VERSION,
        api.ready_after().as_secs_f64()
    );
    let mut crds = 0;
    for entry in std::fs::read_dir(deploy_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.to_string_lossy().ends_with(".crd.yaml") {
            ok(api.kubectl(&["apply", "--server-side", "-f", &path.to_string_lossy()]));
            crds += 1;
        }
    }
    assert!(crds > 0, "no *.crd.yaml in {}", deploy_dir().display());
    // Polled rather than `kubectl wait`, which fails on a CRD that has no conditions yet.
    ok(wait_for(
        "the CRD to be established",
        Duration::from_secs(30),
        || {
            let crd: Value =
                serde_json::from_str(&api.kubectl(&["get", "crd", CRD, "-o", "json"])?)?;
            Ok(is_true(&crd, "Established").then_some(()))
        },
    ));
    api
}

/// A NetworkAddonsConfig named `cluster` with `spec` (YAML lines).
fn nac(spec: &str) -> String {
    let indented: String = spec.lines().map(|l| format!("  {l}\n")).collect();
    format!(
        "apiVersion: networkaddonsoperator.network.kubevirt.io/v1\nkind: NetworkAddonsConfig\n\
         metadata:\n  name: cluster\nspec:\n{indented}"
    )
}

/// `kubectl apply` (client-side, as the README does) of a NetworkAddonsConfig with `spec`.
fn apply(api: &ApiExtensions, spec: &str) -> Result<String> {
    api.kubectl_stdin(&["apply", "-f", "-"], &nac(spec))
}

/// The refusal of an apply of `spec`, which must be refused.
fn refusal(api: &ApiExtensions, spec: &str) -> String {
    match apply(api, spec) {
        Ok(out) => panic!("the server accepted\n{spec}\n({out})"),
        Err(e) => {
            let said = format!("{e:#}");
            eprintln!(
                "refused: {}",
                said.rsplit("failed (exit status: 1): ")
                    .next()
                    .unwrap_or_default()
            );
            said
        }
    }
}

fn assert_says(refusal: &str, words: &str) {
    assert!(
        refusal.contains(words),
        "the refusal does not say {words:?}:\n{refusal}"
    );
}

fn get(api: &ApiExtensions, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(&ok(api.kubectl(&all))).unwrap()
}

fn documented_configs() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(kube_tier::repo().join("cluster/network-addons-operator/examples"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
            .collect();
    files.sort();
    files.extend(
        std::fs::read_dir(deploy_dir())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".cr.yaml")),
    );
    assert!(files.len() > 10, "the documented examples: {files:?}");
    files
}

#[test]
fn the_crd_in_deploy_is_established_with_both_versions_served() {
    let api = server();
    let crd = get(&api, &["get", "crd", CRD]);
    for type_ in ["NamesAccepted", "Established"] {
        assert!(
            is_true(&crd, type_),
            "{type_} is not True: {}",
            crd["status"]
        );
    }
    assert_eq!(crd["status"]["storedVersions"], serde_json::json!(["v1"]));
    let group: Value = serde_json::from_str(&ok(api.kubectl(&[
        "get",
        "--raw",
        "/apis/networkaddonsoperator.network.kubevirt.io",
    ])))
    .unwrap();
    let served: Vec<&str> = group["versions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["version"].as_str())
        .collect();
    assert_eq!(served, ["v1", "v1alpha1"]);
    assert_eq!(group["preferredVersion"]["version"], "v1");
}

#[test]
fn every_documented_config_applies_by_server_side_apply_and_is_kept_as_written() {
    let api = server();
    for file in documented_configs() {
        let path = file.to_string_lossy();
        let written: Value = serde_json::from_str(&ok(api.kubectl(&[
            "create",
            "--dry-run=client",
            "-o",
            "json",
            "-f",
            &path,
        ])))
        .unwrap();
        let stored: Value = serde_json::from_str(&ok(api.kubectl(&[
            "apply",
            "--server-side",
            "--field-manager=example",
            "-o",
            "json",
            "-f",
            &path,
        ])))
        .unwrap();
        assert_eq!(
            stored["spec"], written["spec"],
            "{path}: the stored spec differs"
        );
        // Each example on its own: a rule on the change from the last would judge the pair.
        ok(api.kubectl(&["delete", "-f", &path]));
    }
}

#[test]
fn a_status_is_written_by_server_side_apply_to_the_status_subresource() {
    let api = server();
    ok(apply(&api, "linuxBridge: {}"));
    let status =
        "apiVersion: networkaddonsoperator.network.kubevirt.io/v1\nkind: NetworkAddonsConfig\n\
                  metadata:\n  name: cluster\nstatus:\n  observedGeneration: 1\n  conditions:\n  \
                  - type: Available\n    status: \"True\"\n    reason: AsExpected\n    \
                  lastTransitionTime: \"2026-01-01T00:00:00Z\"\n";
    ok(api.kubectl_stdin(
        &[
            "apply",
            "--server-side",
            "--subresource=status",
            "--field-manager=network-addons-operator",
            "-f",
            "-",
        ],
        status,
    ));
    let stored = get(
        &api,
        &[
            "get",
            "networkaddonsconfig",
            "cluster",
            "--show-managed-fields",
        ],
    );
    assert_eq!(stored["status"]["conditions"][0]["type"], "Available");
    assert_eq!(stored["status"]["observedGeneration"], 1);
    assert_eq!(
        stored["metadata"]["generation"], 1,
        "a status write is no spec change"
    );
    let managed = stored["metadata"]["managedFields"].as_array().unwrap();
    assert!(
        managed
            .iter()
            .any(|m| m["manager"] == "network-addons-operator"
                && m["operation"] == "Apply"
                && m["subresource"] == "status"),
        "no status entry of the operator in managedFields: {managed:?}"
    );
}

#[test]
fn a_mac_range_whose_start_is_not_below_its_end_is_refused_in_the_reconcilers_words() {
    let api = server();
    let refused = refusal(
        &api,
        "kubeMacPool:\n  rangeStart: \"02:10:00:00:00:00\"\n  rangeEnd: \"02:00:00:00:00:00\"",
    );
    assert_says(&refused, "spec.kubeMacPool");
    assert_says(
        &refused,
        "rangeStart 02:10:00:00:00:00 must be below rangeEnd 02:00:00:00:00:00",
    );
    let equal = refusal(
        &api,
        "kubeMacPool:\n  rangeStart: \"02:00:00:00:00:00\"\n  rangeEnd: \"02:00:00:00:00:00\"",
    );
    assert_says(&equal, "must be below rangeEnd");
}

#[test]
fn mac_addresses_compare_as_numbers_whatever_their_case_and_separators() {
    let api = server();
    ok(apply(
        &api,
        "kubeMacPool:\n  rangeStart: \"02-00-00-00-00-0A\"\n  rangeEnd: \"02:00:00:00:00:0b\"",
    ));
    let refused = refusal(
        &api,
        "kubeMacPool:\n  rangeStart: \"02-00-00-00-01-00\"\n  rangeEnd: \"02:00:00:00:00:FF\"",
    );
    assert_says(&refused, "must be below rangeEnd 02:00:00:00:00:FF");
}

#[test]
fn a_range_end_with_an_odd_first_octet_stands_for_the_last_unicast_address_below_it() {
    let api = server();
    // The upstream README's range.
    ok(apply(
        &api,
        "kubeMacPool:\n  rangeStart: \"02:00:00:00:00:00\"\n  rangeEnd: \"FD:FF:FF:FF:FF:FF\"",
    ));
    // 05:00:.. stands for 04:ff:ff:ff:ff:ff, which leaves nothing above this start.
    let refused = refusal(
        &api,
        "kubeMacPool:\n  rangeStart: \"04:ff:ff:ff:ff:ff\"\n  rangeEnd: \"05:00:00:00:00:00\"",
    );
    assert_says(&refused, "must be below rangeEnd 05:00:00:00:00:00");
    ok(apply(
        &api,
        "kubeMacPool:\n  rangeStart: \"04:ff:ff:ff:ff:fe\"\n  rangeEnd: \"05:00:00:00:00:00\"",
    ));
}

#[test]
fn a_change_to_another_valid_mac_range_is_accepted() {
    let api = server();
    ok(apply(
        &api,
        "kubeMacPool:\n  rangeStart: \"02:00:00:00:00:00\"\n  rangeEnd: \"02:00:00:00:ff:ff\"",
    ));
    ok(apply(
        &api,
        "kubeMacPool:\n  rangeStart: \"02:10:00:00:00:00\"\n  rangeEnd: \"02:10:00:00:ff:ff\"",
    ));
    let stored = get(&api, &["get", "networkaddonsconfig", "cluster"]);
    assert_eq!(
        stored["spec"]["kubeMacPool"]["rangeStart"],
        "02:10:00:00:00:00"
    );
}

/// `selfSignConfiguration` with the four intervals in the order CA rotate, CA overlap, cert
/// rotate, cert overlap.
fn intervals(ca_rotate: &str, ca_overlap: &str, cert_rotate: &str, cert_overlap: &str) -> String {
    format!(
        "selfSignConfiguration:\n  caRotateInterval: {ca_rotate}\n  caOverlapInterval: {ca_overlap}\n  \
         certRotateInterval: {cert_rotate}\n  certOverlapInterval: {cert_overlap}"
    )
}

#[test]
fn a_ca_overlap_longer_than_the_ca_rotation_is_refused_in_the_reconcilers_words() {
    let api = server();
    let refused = refusal(&api, &intervals("24h", "25h", "24h", "8h"));
    assert_says(&refused, "spec.selfSignConfiguration");
    assert_says(
        &refused,
        "caOverlapInterval must not exceed caRotateInterval",
    );
}

#[test]
fn a_cert_rotation_longer_than_the_ca_rotation_is_refused_in_the_reconcilers_words() {
    let api = server();
    let refused = refusal(&api, &intervals("24h", "12h", "48h", "8h"));
    assert_says(
        &refused,
        "certRotateInterval must not exceed caRotateInterval",
    );
}

#[test]
fn a_cert_overlap_longer_than_the_cert_rotation_is_refused_in_the_reconcilers_words() {
    let api = server();
    let refused = refusal(&api, &intervals("168h", "24h", "24h", "25h"));
    assert_says(
        &refused,
        "certOverlapInterval must not exceed certRotateInterval",
    );
}

#[test]
fn intervals_compare_as_durations_and_a_valid_change_is_accepted() {
    let api = server();
    ok(apply(&api, &intervals("168h", "24h", "24h", "8h")));
    // As text, "90m" sorts after "2h" and "1h30m" after "1h"; as durations they are in order.
    ok(apply(&api, &intervals("2h", "90m", "1h30m", "0.5h")));
    let stored = get(&api, &["get", "networkaddonsconfig", "cluster"]);
    assert_eq!(
        stored["spec"]["selfSignConfiguration"]["caOverlapInterval"],
        "90m"
    );
}

#[test]
fn a_changed_image_pull_policy_is_refused_in_the_reconcilers_words() {
    let api = server();
    ok(apply(&api, "linuxBridge: {}\nimagePullPolicy: Always"));
    let refused = refusal(&api, "linuxBridge: {}\nimagePullPolicy: Never");
    assert_says(&refused, "spec.imagePullPolicy");
    assert_says(
        &refused,
        "imagePullPolicy cannot change once deployed (applied: Always, requested: Never); \
         set it back to Always",
    );
}

#[test]
fn other_changes_that_keep_the_image_pull_policy_are_accepted() {
    let api = server();
    ok(apply(&api, "linuxBridge: {}\nimagePullPolicy: Always"));
    ok(apply(
        &api,
        "linuxBridge: {}\nmultus: {}\nimagePullPolicy: Always",
    ));
    let stored = get(&api, &["get", "networkaddonsconfig", "cluster"]);
    assert_eq!(stored["spec"]["multus"], serde_json::json!({}));
}
