//! KubeMacPool's allocator (`kubeMacPool: {}`, ours by default): MACs for pods in opted-in
//! namespaces and for VirtualMachines, from the range, through the webhook the API server calls.
//! KubeVirt does not run here: its VirtualMachine and VirtualMachineInstance CRDs stand in.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{Context, Result};
use net_types::MacAddr;
use serde_json::Value;

use kube_tier::daemon::wait_for;
use kube_tier::image::BUSYBOX_IMAGE;

use crate::{check, Ctx, NAMESPACE};
use kube_tier::stand_in::kubevirt_crds;

mod admission;
mod availability;
mod certs;
mod collisions;
mod corpus;
mod finalizer;
pub(crate) mod prometheus;
mod rules;
mod switch;

pub use admission::{
    a_range_change_applies_without_a_restart, pods_on_both_nodes_get_macs_from_the_range,
    vms_get_macs_and_one_mac_on_two_interfaces_is_refused,
};
pub use availability::{
    a_drain_never_takes_the_last_manager,
    rollouts_and_a_killed_replica_fail_no_create_and_500_get_distinct_macs,
};
pub use certs::the_certificates_are_what_upstream_reads_and_come_back_when_deleted;
pub use collisions::{
    a_collision_between_running_vmis_is_reported_and_cleared,
    only_running_pods_that_multus_attached_collide,
};
pub use corpus::a_hostile_corpus_is_refused_or_passed_and_the_webhook_stays_up;
pub use finalizer::a_vm_stored_with_the_legacy_finalizer_is_deleted_without_another_write;
pub use switch::macs_given_before_the_switch_are_never_given_again;
const RANGE_START: &str = "02:30:00:00:00:00";
const RANGE_END: &str = "02:30:00:00:0f:ff";
pub(crate) const SPEC: &str =
    "kubeMacPool:\n  rangeStart: \"02:30:00:00:00:00\"\n  rangeEnd: \"02:30:00:00:0f:ff\"\n";
/// Opted in: the pod webhook acts only in namespaces labelled so (one per scenario: the one
/// before may still be terminating).
const POD_NAMESPACE: &str = "kmp-pods";
const RANGE_NAMESPACE: &str = "kmp-range";
const CORPUS_NAMESPACE: &str = "kmp-corpus";
const STREAM_NAMESPACE: &str = "kmp-stream";
const SWITCH_NAMESPACE: &str = "kmp-switch";
const IGNORED_NAMESPACE: &str = "kmp-vms-ignored";
const CERT_NAMESPACE: &str = "kmp-certs";
const MANAGER: &str = "kubemacpool-mac-controller-manager";
const NETWORKS: &str = "k8s.v1.cni.cncf.io/networks";

pub(crate) fn in_range(mac: &str) -> bool {
    let (start, end) = (
        MacAddr::parse(RANGE_START).map(|m| m.to_u64()),
        MacAddr::parse(RANGE_END).map(|m| m.to_u64()),
    );
    match (MacAddr::parse(mac), start, end) {
        (Ok(m), Ok(s), Ok(e)) => (s..=e).contains(&m.to_u64()),
        _ => false,
    }
}

/// The config with KubeMacPool, its managers ready.
fn deploy(ctx: &Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    ctx.apply_nac(SPEC)?;
    ctx.kubectl_wait("KubeMacPoolAvailable", "180s")?;
    ctx.wait_rollout("deployment", MANAGER)
}

pub(crate) fn opted_in_namespace(ctx: &Ctx, name: &str) -> Result<()> {
    ctx.apply(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n  labels:\n    \
         mutatepods.kubemacpool.io: allocate\n"
    ))
    .map(drop)
}

fn pod_yaml(name: &str, namespace: &str, node: &str, networks: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {namespace}\n  \
         annotations:\n    {NETWORKS}: '{networks}'\nspec:\n  nodeName: {node}\n  \
         terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: {BUSYBOX_IMAGE}\n    \
         imagePullPolicy: IfNotPresent\n    command: [\"/bin/sleep\", \"3600\"]\n"
    )
}

fn networks_of(ctx: &Ctx, name: &str, namespace: &str) -> Result<String> {
    let pod = ctx.get(&["get", "pod", name, "-n", namespace])?;
    Ok(pod["metadata"]["annotations"][NETWORKS]
        .as_str()
        .unwrap_or_default()
        .to_string())
}

/// A VM whose interfaces are `(name, binding, network)`: network `pod` is the pod network,
/// anything else a Multus network of that name; `mac` set where given.
fn vm_yaml(name: &str, interfaces: &[(&str, &str, &str, Option<&str>)]) -> String {
    let mut ifaces = String::new();
    let mut nets = String::new();
    for (iface, binding, network, mac) in interfaces {
        ifaces.push_str(&format!(
            "            - name: {iface}\n              {binding}: {{}}\n"
        ));
        if let Some(mac) = mac {
            ifaces.push_str(&format!("              macAddress: \"{mac}\"\n"));
        }
        if *network == "pod" {
            nets.push_str(&format!("        - name: {iface}\n          pod: {{}}\n"));
        } else {
            nets.push_str(&format!(
                "        - name: {iface}\n          multus:\n            networkName: {network}\n"
            ));
        }
    }
    format!(
        "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: {name}\n  namespace: default\n\
         spec:\n  running: false\n  template:\n    spec:\n      domain:\n        devices:\n          interfaces:\n{ifaces}\
         \x20     networks:\n{nets}"
    )
}

fn vm_macs(vm: &Value) -> Vec<(String, String)> {
    vm["spec"]["template"]["spec"]["domain"]["devices"]["interfaces"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| {
            (
                i["name"].as_str().unwrap_or_default().to_string(),
                i["macAddress"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Deletes every VM the scenarios made (they make them in `default`), not waiting.
fn delete_vms(ctx: &Ctx) -> Result<()> {
    ctx.kubectl(&[
        "delete",
        "virtualmachines.kubevirt.io",
        "-n",
        "default",
        "--all",
        "--wait=false",
    ])
    .map(drop)
}

/// The manager pods that are not terminating.
pub(crate) fn live_manager_pods(ctx: &Ctx) -> Result<Vec<Value>> {
    let pods = ctx.get(&[
        "get",
        "pods",
        "-n",
        NAMESPACE,
        "-l",
        "control-plane=mac-controller-manager",
    ])?;
    Ok(pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .cloned()
        .collect())
}

/// `field` (a JSON pointer) of each manager pod that is not terminating.
fn live_managers_field(ctx: &Ctx, field: &str) -> Result<Vec<String>> {
    Ok(live_manager_pods(ctx)?
        .iter()
        .filter_map(|p| p.pointer(field)?.as_str().map(str::to_string))
        .collect())
}

/// The names of the manager pods that are not terminating.
fn live_managers(ctx: &Ctx) -> Result<Vec<String>> {
    live_managers_field(ctx, "/metadata/name")
}

/// The managers' metrics port, the only one serving `/metrics`.
pub(crate) const MANAGER_METRICS_PORT: u16 = 8443;

/// The metrics of every manager replica that is not terminating, scraped as Prometheus does
/// (HTTPS to the pod's metrics port, with the scraper's token): a replica on its way out may
/// already be cut off its network.
pub(crate) fn manager_metrics(ctx: &Ctx) -> Result<Vec<(String, String)>> {
    live_manager_pods(ctx)?
        .iter()
        .filter_map(|p| {
            let name = p["metadata"]["name"].as_str()?;
            let ip = p["status"]["podIP"].as_str()?;
            Some((name.to_string(), format!("{ip}:{MANAGER_METRICS_PORT}")))
        })
        .map(|(name, address)| Ok((name, ctx.metrics_at(&address)?)))
        .collect()
}

/// A pod no scheduler serves: stored and Pending for good, on no node (a pod bound to a node
/// that does not exist would be deleted by the pod garbage collector, freeing its MAC).
fn parked_pod_yaml(name: &str, namespace: &str) -> String {
    parked_pod_yaml_with(name, namespace, r#"[{"name":"br1"}]"#)
}

fn parked_pod_yaml_with(name: &str, namespace: &str, networks: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {namespace}\n  \
         annotations:\n    {NETWORKS}: '{networks}'\nspec:\n  schedulerName: kmp-none\n  \
         containers:\n  - name: main\n    image: {BUSYBOX_IMAGE}\n"
    )
}

/// The MACs an object was stored with, from `kubectl create -o json`'s answer: a pod's
/// annotation or a VM's interfaces.
fn macs_of_created(v: &Value) -> Vec<String> {
    if let Some(text) = v["metadata"]["annotations"][NETWORKS].as_str() {
        let list: Vec<Value> = serde_json::from_str(text).unwrap_or_default();
        return list
            .iter()
            .filter_map(|e| e["mac"].as_str().map(str::to_string))
            .collect();
    }
    vm_macs(v)
        .into_iter()
        .map(|(_, m)| m)
        .filter(|m| !m.is_empty())
        .collect()
}

/// What one object was given: its name and MACs.
type Given = (String, Vec<String>);

/// Creates the objects of `yaml` (documents one after the other, in one `kubectl create`) and
/// returns what each was stored with, or why the create failed.
fn create_for_macs(ctx: &Ctx, name: &str, yaml: &str) -> Result<Vec<Given>, String> {
    let out = ctx
        .cluster
        .kubectl_stdin(&["create", "-o", "json", "-f", "-"], yaml)
        .map_err(|e| format!("{name}: {e:#}"))?;
    serde_json::Deserializer::from_str(&out)
        .into_iter::<Value>()
        .map(|v| {
            let v = v.map_err(|e| format!("{name}: kubectl's answer: {e}"))?;
            let created = v["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            Ok((created, macs_of_created(&v)))
        })
        .collect()
}
