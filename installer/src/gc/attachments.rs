//! Which attachments (container ID, ifname) each network keeps: what the node agent passes to
//! every plugin of that network as GC's `cni.dev/valid-attachments`. The plugins then remove
//! every other attachment of that network name, so the list errs on the side of keeping:
//! keeping an attachment that does not exist costs a longer list, dropping a live one breaks
//! a running pod.
//!
//! **Every live sandbox is kept, on every network, under every ifname it may have there.**
//! The runtime names the i-th network of its conf dir `eth<i>`. Multus gives its cluster
//! network the runtime's name and every other delegate `net<i>`, i being the delegate's place
//! in its list: the cluster network is 0, then come Multus's `defaultNetworks` (none in most
//! clusters), then the pod's `k8s.v1.cni.cncf.io/networks` in order, so that the pod's first
//! network is `net1`; an `interface` named in the annotation replaces the number but still
//! takes its place. A sandbox is therefore kept under `eth0`..`eth7` (further when one of our
//! node conflists sits further down the order), under `net1`..`net<n + 32>` for a pod with n
//! networks (32 to spare for `defaultNetworks`), and under every interface its `networks` and
//! `network-status` annotations name. These ifnames are kept on every network, not only on
//! the one an annotation points to: telling which network `namespace/name` was when the pod
//! started would take the NAD as it was then, and one deleted, edited or sharing its name
//! with another since then would point elsewhere or nowhere.
//!
//! A sandbox matches its pod by uid, else by namespace and name (a static pod's mirror has a
//! uid of its own). **A live sandbox whose pod is not in the list** (deleted since the
//! sandboxes were listed, force-deleted while it still runs, or started by something other
//! than the kubelet) has no annotations to read: it is kept under `eth0`..`eth7`, under
//! `net1`..`net<n + 32>` for the longest list of any pod, and under every interface any pod of
//! the node names. Only an interface name that no remaining pod uses is then unknown; the pod
//! that asked for it is gone from the API, and the kubelet is tearing its sandbox down.
//!
//! **Collection is deferred, whole, rather than racing or guessing:**
//! - when a pod that may be starting has no ready sandbox: not terminal, not being deleted,
//!   not on the host network. The caller takes the GC lock (new ADDs wait for it; it waits for
//!   the ADDs already running), lists the sandboxes, then the pods. containerd lists a sandbox
//!   only once its ADD has returned, so an attachment whose ADD ended just before the lock may
//!   belong to no listed sandbox; but its pod existed before that ADD began, so the pod list,
//!   taken later, holds it without a ready sandbox, and the collection waits. A stopped
//!   sandbox does not count: after a reboot the runtime lists the pod's sandboxes of before,
//!   and its new one may be the unlisted one. Multus runs its delegates one after the other,
//!   each ADD taking the lock for itself, so a collection may fall between two of them: the
//!   same pod defers it;
//! - when the `networks` or `network-status` annotation of a pod that has, or may get, a ready
//!   sandbox does not parse: its interface names cannot be known.
//!
//! A pod being deleted gets no new sandbox, so without a ready one it defers nothing, as a
//! terminal pod (Kubernetes 1.20 keeps such a pod in phase Running while its sandbox is
//! stopped). A pod that has had no ready sandbox for longer than the agent waits (`stuck`, see
//! `round::Patience`) no longer defers: its sandbox keeps failing to be made (a broken
//! network config, a node out of addresses, which the collection may be what frees), and the
//! runtime undoes each failed attempt itself. Waiting for it would hold every other leak of
//! the node for as long as it fails. The stopped sandboxes of either are still kept.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use cni_common::env::validate_ifname;
use serde_json::Value;

use super::networks::{Network, Source};

/// The pod annotation listing the networks Multus attaches.
pub const NETWORKS_ANNOTATION: &str = "k8s.v1.cni.cncf.io/networks";
/// The pod annotation where Multus reports the attachments it made.
pub const NETWORK_STATUS_ANNOTATION: &str = "k8s.v1.cni.cncf.io/network-status";

/// `eth0`.. up to this many are kept whatever the node conflists.
const ETH_KEPT: usize = 8;
/// `net<i>` beyond a pod's own networks, for Multus's `defaultNetworks` that come first.
const NET_SPARE: usize = 32;

/// A pod sandbox the runtime has (CRI `ListPodSandbox`), with the pod it was made for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LiveSandbox {
    /// The sandbox ID: the container ID the plugins were called with.
    pub id: String,
    pub uid: String,
    pub name: String,
    pub namespace: String,
    /// Set up and running. One that is not (stopped, or listed by a restarted runtime from
    /// before a reboot) is kept, but says nothing of the sandbox its pod may be getting now.
    pub ready: bool,
}

/// A pod of this node, as the API has it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PodInfo {
    pub uid: String,
    pub name: String,
    pub namespace: String,
    pub host_network: bool,
    /// Phase Succeeded or Failed.
    pub terminal: bool,
    /// Being deleted (its deletionTimestamp is set): the kubelet makes it no new sandbox.
    pub deleting: bool,
    /// Annotation `k8s.v1.cni.cncf.io/networks`.
    pub networks: Option<String>,
    /// Annotation `k8s.v1.cni.cncf.io/network-status`.
    pub network_status: Option<String>,
    /// Has had no ready sandbox for longer than the agent waits for one: it no longer defers.
    pub stuck: bool,
}

/// What a collection round does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Per network name, the attachments to keep.
    Collect(BTreeMap<String, BTreeSet<(String, String)>>),
    /// Not now: the pod it waits for (its uid) and the reason, logged by the caller.
    Defer { uid: String, why: String },
}

/// What each network keeps, given the runtime's live sandboxes (listed first), this node's
/// pods (listed after) and the networks our plugins serve.
pub fn plan(sandboxes: &[LiveSandbox], pods: &[PodInfo], networks: &[Network]) -> Plan {
    if networks.is_empty() {
        return Plan::Collect(BTreeMap::new());
    }
    let pod_of = match_pods(sandboxes, pods);
    let started = started(sandboxes, &pod_of, pods.len());

    let mut read = Vec::with_capacity(pods.len());
    for (pod, &started) in pods.iter().zip(&started) {
        let ifnames = pod_ifnames(pod);
        let matters =
            !pod.host_network && (started || !(pod.terminal || pod.deleting || pod.stuck));
        if matters {
            let defer = |why: String| Plan::Defer {
                uid: pod.uid.clone(),
                why,
            };
            if let Err(why) = &ifnames {
                return defer(format!("pod {}/{}: {why}", pod.namespace, pod.name));
            }
            if !started {
                return defer(format!(
                    "pod {}/{} (uid {}) has no ready sandbox yet: it may be starting",
                    pod.namespace, pod.name, pod.uid
                ));
            }
        }
        read.push(ifnames.ok());
    }

    let eth = eth_kept(networks);
    let readable = || read.iter().flatten();
    let orphan = Ifnames {
        networks: readable().map(|i| i.networks).max().unwrap_or(0),
        named: readable().flat_map(|i| i.named.iter().cloned()).collect(),
    };
    let mut keep = BTreeSet::new();
    for (sandbox, pod) in sandboxes.iter().zip(&pod_of) {
        let ifnames = pod.and_then(|pod| read[pod].as_ref()).unwrap_or(&orphan);
        for ifname in ifnames.kept(eth) {
            keep.insert((sandbox.id.clone(), ifname));
        }
    }
    Plan::Collect(
        networks
            .iter()
            .map(|network| (network.name.clone(), keep.clone()))
            .collect(),
    )
}

/// The uids of the pods that may be starting and have no ready sandbox: not on the host
/// network, not terminal, not being deleted.
pub fn without_sandbox(sandboxes: &[LiveSandbox], pods: &[PodInfo]) -> BTreeSet<String> {
    let started = started(sandboxes, &match_pods(sandboxes, pods), pods.len());
    pods.iter()
        .zip(started)
        .filter(|(pod, started)| !started && !pod.host_network && !pod.terminal && !pod.deleting)
        .map(|(pod, _)| pod.uid.clone())
        .collect()
}

/// Which pods have a ready sandbox. A pod whose sandboxes are all stopped (a node rebooted:
/// the runtime lists the sandboxes of before) may be getting a new one, whose ADD may have
/// ended before the lock while the runtime does not list it yet: its attachments are unknown.
fn started(sandboxes: &[LiveSandbox], pod_of: &[Option<usize>], pods: usize) -> Vec<bool> {
    let mut started = vec![false; pods];
    for (sandbox, pod) in sandboxes.iter().zip(pod_of) {
        if let (true, Some(pod)) = (sandbox.ready, pod) {
            started[*pod] = true;
        }
    }
    started
}

/// For each sandbox, the index of its pod: by uid, else by namespace and name. The fallback
/// also pairs a pod recreated under the same name (a StatefulSet's, after a force delete) with
/// its predecessor's sandbox while that one still runs, so the new pod does not defer.
fn match_pods(sandboxes: &[LiveSandbox], pods: &[PodInfo]) -> Vec<Option<usize>> {
    let mut by_uid = HashMap::new();
    let mut by_name = HashMap::new();
    for (i, pod) in pods.iter().enumerate() {
        if !pod.uid.is_empty() {
            by_uid.insert(pod.uid.as_str(), i);
        }
        by_name.insert((pod.namespace.as_str(), pod.name.as_str()), i);
    }
    sandboxes
        .iter()
        .map(|s| {
            by_uid
                .get(s.uid.as_str())
                .or_else(|| by_name.get(&(s.namespace.as_str(), s.name.as_str())))
                .copied()
        })
        .collect()
}

/// `eth<i>` are kept for i below this: the node conflists' load indexes, at least [`ETH_KEPT`].
fn eth_kept(networks: &[Network]) -> usize {
    networks
        .iter()
        .filter_map(|network| match network.source {
            Source::NodeConflist { index, .. } => Some(index + 1),
            Source::Nad { .. } => None,
        })
        .fold(ETH_KEPT, usize::max)
}

/// What a pod's annotations say about its ifnames.
#[derive(Debug, Default)]
struct Ifnames {
    /// How many networks its `networks` annotation lists.
    networks: usize,
    /// The interface names either annotation gives, those the kernel accepts.
    named: BTreeSet<String>,
}

impl Ifnames {
    fn kept(&self, eth: usize) -> impl Iterator<Item = String> + '_ {
        (0..eth)
            .map(|i| format!("eth{i}"))
            .chain((1..=self.networks + NET_SPARE).map(|i| format!("net{i}")))
            .chain(self.named.iter().cloned())
    }
}

fn pod_ifnames(pod: &PodInfo) -> Result<Ifnames, String> {
    let mut ifnames = Ifnames::default();
    if let Some(text) = &pod.networks {
        let selections = selections(text)
            .map_err(|e| format!("annotation {NETWORKS_ANNOTATION} does not parse: {e}"))?;
        ifnames.networks = selections.len();
        ifnames.named.extend(selections.into_iter().flatten());
    }
    if let Some(text) = &pod.network_status {
        let named = status_interfaces(text)
            .map_err(|e| format!("annotation {NETWORK_STATUS_ANNOTATION} does not parse: {e}"))?;
        ifnames.named.extend(named);
    }
    // No attachment can have a name the kernel refuses, and the list stays bounded by them.
    ifnames.named.retain(|name| validate_ifname(name).is_ok());
    Ok(ifnames)
}

/// The `networks` annotation read as Multus reads it: one entry per network, each with the
/// interface names it asks for (none: Multus numbers it). JSON when the text holds `[`, `{`
/// or `"`: a list of objects whose keys match case-insensitively as Go's decoder matches
/// them, `interface` or its older spelling `interfaceRequest`; otherwise comma-separated
/// `[namespace/]name[@interface]`. Only the structure is required: the values Multus would
/// refuse (a malformed name, MAC or IP) would have failed the pod's ADD, leaving nothing to
/// lose, and their interface names are kept all the same.
fn selections(text: &str) -> Result<Vec<Vec<String>>, String> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    if text.contains(['[', '{', '"']) {
        let Value::Array(entries) = serde_json::from_str(text).map_err(|e| e.to_string())? else {
            return Err("not a JSON list".to_string());
        };
        return entries
            .iter()
            .map(|entry| interfaces_of(entry, &["interface", "interfacerequest"]))
            .collect();
    }
    text.split(',')
        .map(|item| {
            let item = item.trim();
            let after_namespace = match item.split('/').collect::<Vec<_>>()[..] {
                [name] | [_, name] => name,
                _ => return Err(format!("{item:?} has more than one '/'")),
            };
            match after_namespace.split('@').collect::<Vec<_>>()[..] {
                [_] => Ok(Vec::new()),
                [_, interface] => Ok(Some(interface.trim())
                    .filter(|i| !i.is_empty())
                    .map(str::to_string)
                    .into_iter()
                    .collect()),
                _ => Err(format!("{item:?} has more than one '@'")),
            }
        })
        .collect()
}

/// The interfaces of Multus's `network-status`: a JSON list of objects (empty text: none).
fn status_interfaces(text: &str) -> Result<Vec<String>, String> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let Value::Array(entries) = serde_json::from_str(text).map_err(|e| e.to_string())? else {
        return Err("not a JSON list".to_string());
    };
    let mut interfaces = Vec::new();
    for entry in &entries {
        interfaces.extend(interfaces_of(entry, &["interface"])?);
    }
    Ok(interfaces)
}

/// The string values, in an object, of every key that folds to one of `keys` (lowercase).
fn interfaces_of(entry: &Value, keys: &[&str]) -> Result<Vec<String>, String> {
    let Value::Object(entry) = entry else {
        return Err("an entry is not a JSON object".to_string());
    };
    let mut found = Vec::new();
    for (key, value) in entry {
        if !keys.contains(&go_fold(key).as_str()) {
            continue;
        }
        match value {
            Value::String(name) if !name.is_empty() => found.push(name.clone()),
            Value::String(_) | Value::Null => {}
            _ => return Err(format!("{key:?} is not a string")),
        }
    }
    Ok(found)
}

/// A key as Go's JSON decoder compares field names: ASCII case ignored, and the Kelvin sign
/// and the long s taken for `k` and `s`.
fn go_fold(key: &str) -> String {
    key.chars()
        .map(|c| match c {
            '\u{212A}' => 'k',
            '\u{17F}' => 's',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gc::networks::nad_network;
    use serde_json::json;
    use std::path::PathBuf;

    fn sandbox(id: &str, uid: &str, namespace: &str, name: &str) -> LiveSandbox {
        LiveSandbox {
            id: id.to_string(),
            uid: uid.to_string(),
            name: name.to_string(),
            namespace: namespace.to_string(),
            ready: true,
        }
    }

    fn pod(uid: &str, namespace: &str, name: &str) -> PodInfo {
        PodInfo {
            uid: uid.to_string(),
            name: name.to_string(),
            namespace: namespace.to_string(),
            ..PodInfo::default()
        }
    }

    fn with_networks(mut pod: PodInfo, networks: &str) -> PodInfo {
        pod.networks = Some(networks.to_string());
        pod
    }

    fn nad(network: &str, nad: &str) -> Network {
        Network {
            name: network.to_string(),
            source: Source::Nad {
                namespace: "ns".to_string(),
                name: nad.to_string(),
            },
            plugins: vec![(
                "bridge".to_string(),
                json!({"name": network, "type": "bridge"}),
            )],
        }
    }

    fn node(network: &str, index: usize) -> Network {
        Network {
            name: network.to_string(),
            source: Source::NodeConflist {
                file: PathBuf::from(format!("/etc/cni/net.d/{index}.conflist")),
                index,
            },
            plugins: vec![(
                "bridge".to_string(),
                json!({"name": network, "type": "bridge"}),
            )],
        }
    }

    fn collected(plan: Plan) -> BTreeMap<String, BTreeSet<(String, String)>> {
        match plan {
            Plan::Collect(keep) => keep,
            Plan::Defer { why, .. } => panic!("deferred: {why}"),
        }
    }

    fn deferred(plan: Plan) -> String {
        match plan {
            Plan::Defer { why, .. } => why,
            Plan::Collect(keep) => panic!("collected: {keep:?}"),
        }
    }

    fn keeps(
        keep: &BTreeMap<String, BTreeSet<(String, String)>>,
        network: &str,
        id: &str,
        ifname: &str,
    ) -> bool {
        keep[network].contains(&(id.to_string(), ifname.to_string()))
    }

    /// One running pod `ns/web` (uid u1) in sandbox s1 with `networks`, on network "blue".
    fn one_pod(networks: &str) -> BTreeMap<String, BTreeSet<(String, String)>> {
        collected(plan(
            &[sandbox("s1", "u1", "ns", "web")],
            &[with_networks(pod("u1", "ns", "web"), networks)],
            &[nad("blue", "blue-nad")],
        ))
    }

    #[test]
    fn an_attachment_of_a_sandbox_that_is_not_live_is_not_kept() {
        let keep = one_pod("blue-nad");
        assert!(keep["blue"].iter().all(|(id, _)| id == "s1"));
        assert!(!keeps(&keep, "blue", "gone", "net1"));
    }

    #[test]
    fn a_live_sandbox_is_kept_as_eth0_to_eth7_on_every_network() {
        let keep = collected(plan(
            &[sandbox("s1", "u1", "ns", "web")],
            &[pod("u1", "ns", "web")],
            &[node("primary", 0), nad("blue", "blue-nad")],
        ));
        for network in ["primary", "blue"] {
            for i in 0..8 {
                assert!(
                    keeps(&keep, network, "s1", &format!("eth{i}")),
                    "{network} eth{i}"
                );
            }
        }
    }

    #[test]
    fn a_live_sandbox_is_kept_as_eth_index_of_every_node_conflist_of_ours() {
        let keep = collected(plan(
            &[sandbox("s1", "u1", "ns", "web")],
            &[pod("u1", "ns", "web")],
            &[node("late", 11)],
        ));
        assert!(keeps(&keep, "late", "s1", "eth11"));
        assert!(!keeps(&keep, "late", "s1", "eth12"));
    }

    #[test]
    fn unnamed_networks_are_kept_as_net_n_by_position_from_1_with_32_to_spare() {
        let forty: Vec<String> = (0..40).map(|i| format!("nad{i}")).collect();
        let keep = one_pod(&forty.join(","));
        assert!(keeps(&keep, "blue", "s1", "net1"));
        assert!(keeps(&keep, "blue", "s1", "net40"));
        assert!(keeps(&keep, "blue", "s1", "net72"));
        assert!(!keeps(&keep, "blue", "s1", "net73"));
        assert!(!keeps(&keep, "blue", "s1", "net0"));
    }

    #[test]
    fn interfaces_named_in_the_comma_separated_networks_annotation_are_kept() {
        let keep = one_pod("ns/blue-nad@blue0, red-nad@ red1 ,other/green-nad,plain");
        for ifname in ["blue0", "red1", "net1", "net4"] {
            assert!(keeps(&keep, "blue", "s1", ifname), "{ifname}");
        }
    }

    #[test]
    fn interfaces_named_in_the_json_networks_annotation_are_kept_whatever_the_key_case() {
        let keep = one_pod(
            r#"[{"name":"blue-nad","namespace":"ns","interface":"blue0"},
                {"name":"red-nad","Interface":"red1","interfaceRequest":"red2"},
                {"name":"x","INTERFACEREQUEST":"red3","interface":null},
                {"name":"green-nad","mac":"02:00:00:00:00:01"}]"#,
        );
        for ifname in ["blue0", "red1", "red2", "red3", "net4"] {
            assert!(keeps(&keep, "blue", "s1", ifname), "{ifname}");
        }
    }

    #[test]
    fn interfaces_in_the_network_status_annotation_are_kept() {
        let mut web = pod("u1", "ns", "web");
        web.network_status = Some(
            json!([
                {"name": "ovn-kubernetes", "interface": "eth0", "default": true},
                {"name": "ns/blue-nad", "interface": "pod1a2b3c", "mac": "02:00:00:00:00:01"},
                {"name": "ns/red-nad"}
            ])
            .to_string(),
        );
        let keep = collected(plan(
            &[sandbox("s1", "u1", "ns", "web")],
            &[web],
            &[nad("blue", "blue-nad")],
        ));
        assert!(keeps(&keep, "blue", "s1", "pod1a2b3c"));
    }

    #[test]
    fn an_interface_is_kept_on_every_network_not_only_the_one_it_names() {
        let keep = collected(plan(
            &[sandbox("s1", "u1", "ns", "web")],
            &[with_networks(pod("u1", "ns", "web"), "blue-nad@blue0")],
            &[nad("blue", "blue-nad"), nad("red", "red-nad")],
        ));
        assert!(keeps(&keep, "red", "s1", "blue0"));
    }

    #[test]
    fn names_the_kernel_refuses_are_not_kept() {
        let keep = one_pod(
            r#"[{"name":"a","interface":"much-too-long-name"},{"name":"b","interface":"a:b"}]"#,
        );
        assert!(!keep["blue"]
            .iter()
            .any(|(_, ifname)| ifname.contains(['-', ':'])));
    }

    #[test]
    fn a_sandbox_matches_its_pod_by_uid_else_by_namespace_and_name() {
        let static_pod =
            with_networks(pod("mirror-uid", "kube-system", "router"), "blue-nad@edge0");
        let keep = collected(plan(
            &[
                sandbox("s1", "file-hash", "kube-system", "router"),
                sandbox("s2", "u2", "renamed", "irrelevant"),
            ],
            &[
                static_pod,
                with_networks(pod("u2", "ns", "db"), "blue-nad@db0"),
            ],
            &[nad("blue", "blue-nad")],
        ));
        assert!(keeps(&keep, "blue", "s1", "edge0"));
        assert!(keeps(&keep, "blue", "s2", "db0"));
        assert!(!keeps(&keep, "blue", "s2", "edge0"));
    }

    #[test]
    fn networks_are_grouped_by_config_name_not_by_nad() {
        let keep = collected(plan(
            &[sandbox("s1", "u1", "ns", "web")],
            &[pod("u1", "ns", "web")],
            &[nad("blue", "first"), nad("blue", "second"), node("red", 0)],
        ));
        assert_eq!(keep.keys().collect::<Vec<_>>(), ["blue", "red"]);
    }

    #[test]
    fn a_live_sandbox_whose_pod_is_gone_is_kept_under_every_ifname_any_pod_uses() {
        let keep = collected(plan(
            &[
                sandbox("s1", "u1", "ns", "web"),
                sandbox("orphan", "u9", "ns", "deleted"),
            ],
            &[with_networks(pod("u1", "ns", "web"), "a,b,c@blue0")],
            &[node("primary", 0), nad("blue", "blue-nad")],
        ));
        for network in ["primary", "blue"] {
            for ifname in ["eth0", "eth7", "net1", "net35", "blue0"] {
                assert!(
                    keeps(&keep, network, "orphan", ifname),
                    "{network} {ifname}"
                );
            }
        }
        assert!(!keeps(&keep, "blue", "orphan", "net36"));
    }

    #[test]
    fn a_live_sandbox_whose_pod_is_gone_is_kept_as_net1_to_net32_when_no_pod_is_left() {
        let keep = collected(plan(
            &[sandbox("orphan", "u9", "ns", "deleted")],
            &[],
            &[nad("blue", "blue-nad")],
        ));
        assert!(keeps(&keep, "blue", "orphan", "net32"));
        assert!(keeps(&keep, "blue", "orphan", "eth0"));
    }

    #[test]
    fn a_pod_without_a_sandbox_yet_defers_collection() {
        let why = deferred(plan(
            &[sandbox("s1", "u1", "ns", "web")],
            &[pod("u1", "ns", "web"), pod("u2", "ns", "starting")],
            &[nad("blue", "blue-nad")],
        ));
        assert!(why.contains("ns/starting"), "{why}");
    }

    #[test]
    fn a_pod_whose_only_sandbox_is_stopped_defers_collection_and_the_stopped_one_is_kept() {
        // After a reboot the runtime lists the pod's sandbox of before, stopped; the new one's
        // ADD may have ended just before the lock, unlisted yet.
        let old = stopped("s-old", "u1", "ns", "web");
        let why = deferred(plan(
            std::slice::from_ref(&old),
            &[pod("u1", "ns", "web")],
            &[nad("blue", "blue-nad")],
        ));
        assert!(why.contains("ns/web"), "{why}");
        assert_eq!(
            without_sandbox(std::slice::from_ref(&old), &[pod("u1", "ns", "web")]),
            BTreeSet::from(["u1".to_string()])
        );
        let keep = collected(plan(
            &[old, sandbox("s-new", "u1", "ns", "web")],
            &[pod("u1", "ns", "web")],
            &[nad("blue", "blue-nad")],
        ));
        assert!(keeps(&keep, "blue", "s-old", "eth0") && keeps(&keep, "blue", "s-new", "eth0"));
    }

    fn stopped(id: &str, uid: &str, namespace: &str, name: &str) -> LiveSandbox {
        LiveSandbox {
            ready: false,
            ..sandbox(id, uid, namespace, name)
        }
    }

    #[test]
    fn a_deleting_pod_whose_only_sandbox_is_stopped_does_not_defer_and_its_sandbox_is_kept() {
        let mut leaving = with_networks(pod("u1", "ns", "web"), "blue-nad@blue0");
        leaving.deleting = true;
        let keep = collected(plan(
            &[stopped("s-old", "u1", "ns", "web")],
            &[leaving],
            &[nad("blue", "blue-nad")],
        ));
        assert!(keeps(&keep, "blue", "s-old", "eth0"));
        assert!(keeps(&keep, "blue", "s-old", "blue0"));
    }

    #[test]
    fn a_stuck_pod_whose_sandboxes_are_all_stopped_does_not_defer_and_they_are_kept() {
        let mut failing = with_networks(pod("u1", "ns", "web"), "blue-nad@blue0");
        failing.stuck = true;
        let keep = collected(plan(
            &[
                stopped("s-old", "u1", "ns", "web"),
                stopped("s-older", "u1", "ns", "web"),
            ],
            &[failing],
            &[nad("blue", "blue-nad")],
        ));
        for id in ["s-old", "s-older"] {
            assert!(keeps(&keep, "blue", id, "eth0"), "{id}");
            assert!(keeps(&keep, "blue", id, "blue0"), "{id}");
        }
    }

    #[test]
    fn a_pod_stuck_without_a_sandbox_no_longer_defers_collection() {
        let mut stuck = with_networks(pod("u2", "ns", "failing"), "a@b@c");
        stuck.stuck = true;
        let keep = collected(plan(
            &[sandbox("s1", "u1", "ns", "web")],
            &[pod("u1", "ns", "web"), stuck],
            &[nad("blue", "blue-nad")],
        ));
        assert!(keeps(&keep, "blue", "s1", "net1"));
    }

    #[test]
    fn pods_without_a_sandbox_are_those_that_may_be_starting() {
        let mut host = pod("u3", "ns", "host");
        host.host_network = true;
        let mut done = pod("u4", "ns", "done");
        done.terminal = true;
        let mut leaving = pod("u5", "ns", "leaving");
        leaving.deleting = true;
        let waiting = without_sandbox(
            &[
                sandbox("s1", "u1", "ns", "web"),
                stopped("s5", "u5", "ns", "leaving"),
            ],
            &[
                pod("u1", "ns", "web"),
                pod("u2", "ns", "starting"),
                host,
                done,
                leaving,
            ],
        );
        assert_eq!(waiting, BTreeSet::from(["u2".to_string()]));
    }

    #[test]
    fn a_deferral_names_the_pod_it_waits_for() {
        let plan = plan(
            &[],
            &[pod("u2", "ns", "starting")],
            &[nad("blue", "blue-nad")],
        );
        assert!(matches!(plan, Plan::Defer { uid, .. } if uid == "u2"));
    }

    #[test]
    fn a_pod_whose_mirror_uid_differs_still_has_its_sandbox() {
        let plan = plan(
            &[sandbox("s1", "file-hash", "kube-system", "router")],
            &[pod("mirror-uid", "kube-system", "router")],
            &[nad("blue", "blue-nad")],
        );
        assert!(matches!(plan, Plan::Collect(_)), "{plan:?}");
    }

    #[test]
    fn host_network_and_terminal_pods_without_a_sandbox_do_not_defer() {
        let mut host = pod("u1", "ns", "host");
        host.host_network = true;
        let mut done = pod("u2", "ns", "done");
        done.terminal = true;
        let plan = plan(&[], &[host, done], &[nad("blue", "blue-nad")]);
        assert_eq!(
            plan,
            Plan::Collect(BTreeMap::from([("blue".to_string(), BTreeSet::new())]))
        );
    }

    #[test]
    fn a_pod_whose_networks_annotation_does_not_parse_defers_naming_it() {
        for annotation in [
            "[{\"name\":",
            "a/b/c",
            "a@b@c",
            "{\"name\":\"a\"}",
            "[\"a\"]",
            r#"[{"name":"a","interface":7}]"#,
        ] {
            let why = deferred(plan(
                &[sandbox("s1", "u1", "ns", "web")],
                &[with_networks(pod("u1", "ns", "web"), annotation)],
                &[nad("blue", "blue-nad")],
            ));
            assert!(
                why.contains("ns/web") && why.contains(NETWORKS_ANNOTATION),
                "{annotation}: {why}"
            );
        }
    }

    #[test]
    fn a_pod_whose_network_status_does_not_parse_defers_naming_it() {
        let mut web = pod("u1", "ns", "web");
        web.network_status = Some("[{\"interface\":".to_string());
        let why = deferred(plan(
            &[sandbox("s1", "u1", "ns", "web")],
            &[web],
            &[nad("blue", "blue-nad")],
        ));
        assert!(
            why.contains("ns/web") && why.contains(NETWORK_STATUS_ANNOTATION),
            "{why}"
        );
    }

    #[test]
    fn an_unparsable_annotation_of_a_pod_that_cannot_have_attachments_does_not_defer() {
        let mut host = with_networks(pod("u1", "ns", "host"), "a@b@c");
        host.host_network = true;
        let mut done = with_networks(pod("u2", "ns", "done"), "a@b@c");
        done.terminal = true;
        assert!(matches!(
            plan(&[], &[host, done], &[nad("blue", "blue-nad")]),
            Plan::Collect(_)
        ));
    }

    #[test]
    fn an_empty_networks_annotation_lists_no_network() {
        let keep = one_pod("");
        assert!(keeps(&keep, "blue", "s1", "net32"));
        assert!(!keeps(&keep, "blue", "s1", "net33"));
    }

    #[test]
    fn unreadable_networks_are_absent_from_the_plan() {
        let ours = BTreeSet::from(["bridge".to_string()]);
        let networks: Vec<Network> = [
            ("good", r#"{"name":"blue","type":"bridge"}"#),
            ("bad", "{"),
            ("file", ""),
        ]
        .iter()
        .filter_map(|(name, config)| nad_network("ns", name, config, &ours).ok().flatten())
        .collect();
        let keep = collected(plan(
            &[sandbox("s1", "u1", "ns", "web")],
            &[pod("u1", "ns", "web")],
            &networks,
        ));
        assert_eq!(keep.keys().collect::<Vec<_>>(), ["blue"]);
    }

    #[test]
    fn without_networks_there_is_nothing_to_collect_or_defer() {
        let plan = plan(&[], &[pod("u2", "ns", "starting")], &[]);
        assert_eq!(plan, Plan::Collect(BTreeMap::new()));
    }
}
