//! Which attachments (container ID, ifname) each network keeps: what the node agent passes to
//! every plugin of that network as GC's `cni.dev/valid-attachments`. The plugins then remove
//! every other attachment of that network name, so the list errs on the side of keeping:
//! keeping an attachment that does not exist costs a longer list, dropping a live one breaks
//! a running pod.
//!
//! **Every live sandbox is kept, on every network, under every ifname it may have there**:
//! `ifnames` says which, from what the pod's annotations give (`annotations`).
//!
//! **A stopped sandbox is not kept once its pod has a ready one, or has ended.** The kubelet
//! makes a pod's new sandbox only after the runtime stopped the old ones, and a pod that
//! ended runs nothing again, so what such a sandbox holds is used by nothing. Its DEL may never
//! have reached our plugins: after a reboot the kubelet stops the sandboxes of before while
//! Multus' daemon is not back yet, and Multus' shim answers that DEL with success without
//! passing it on. The runtime keeps listing such a sandbox for as long as it holds an exited
//! container (the kubelet keeps the last one of each for `kubectl logs --previous`).
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

mod annotations;
mod ifnames;
#[cfg(test)]
mod testing;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::networks::Network;

pub use annotations::{NETWORKS_ANNOTATION, NETWORK_STATUS_ANNOTATION};

use annotations::pod_ifnames;
use ifnames::{eth_kept, kept_attachments, Ifnames};

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
    let read = match read_pods(pods, &started) {
        Ok(read) => read,
        Err(defer) => return defer,
    };
    let (sandboxes, pod_of): (Vec<LiveSandbox>, Vec<Option<usize>>) = sandboxes
        .iter()
        .zip(pod_of)
        .filter(|(sandbox, pod)| !superseded(sandbox, *pod, &started, pods))
        .map(|(sandbox, pod)| (sandbox.clone(), pod))
        .unzip();
    let keep = kept_attachments(&sandboxes, &pod_of, &read, eth_kept(networks));
    Plan::Collect(
        networks
            .iter()
            .map(|network| (network.name.clone(), keep.clone()))
            .collect(),
    )
}

/// Each pod's ifnames (`None` for one whose annotations do not parse but that cannot matter),
/// or the deferral asked for by the first pod that may be starting or cannot be read.
fn read_pods(pods: &[PodInfo], started: &[bool]) -> Result<Vec<Option<Ifnames>>, Plan> {
    let mut read = Vec::with_capacity(pods.len());
    for (pod, &started) in pods.iter().zip(started) {
        let ifnames = pod_ifnames(pod);
        let matters =
            !pod.host_network && (started || !(pod.terminal || pod.deleting || pod.stuck));
        if matters {
            let defer = |why: String| Plan::Defer {
                uid: pod.uid.clone(),
                why,
            };
            if let Err(why) = &ifnames {
                let why = why.report();
                return Err(defer(format!("pod {}/{}: {why}", pod.namespace, pod.name)));
            }
            if !started {
                return Err(defer(format!(
                    "pod {}/{} (uid {}) has no ready sandbox yet: it may be starting",
                    pod.namespace, pod.name, pod.uid
                )));
            }
        }
        read.push(ifnames.ok());
    }
    Ok(read)
}

/// A stopped sandbox whose pod has a ready one or has ended: the runtime stopped it for good
/// (see the module's description).
fn superseded(
    sandbox: &LiveSandbox,
    pod: Option<usize>,
    started: &[bool],
    pods: &[PodInfo],
) -> bool {
    !sandbox.ready && pod.is_some_and(|pod| started[pod] || pods[pod].terminal)
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

#[cfg(test)]
mod tests {
    use super::testing::{
        collected, deferred, keeps, nad, node, one_pod, pod, sandbox, stopped, with_networks,
    };
    use super::*;
    use crate::gc::networks::nad_network;

    #[test]
    fn an_attachment_of_a_sandbox_that_is_not_live_is_not_kept() {
        let keep = one_pod("blue-nad");
        assert!(keep["blue"].iter().all(|(id, _)| id == "s1"));
        assert!(!keeps(&keep, "blue", "gone", "net1"));
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
    fn a_pod_without_a_sandbox_yet_defers_collection() {
        let why = deferred(plan(
            &[sandbox("s1", "u1", "ns", "web")],
            &[pod("u1", "ns", "web"), pod("u2", "ns", "starting")],
            &[nad("blue", "blue-nad")],
        ));
        assert!(why.contains("ns/starting"), "{why}");
    }

    #[test]
    fn a_pod_whose_only_sandbox_is_stopped_defers_collection() {
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
    }

    #[test]
    fn a_stopped_sandbox_is_not_kept_once_its_pod_has_a_ready_one() {
        // After a reboot: the sandbox of before, whose DEL Multus' shim may have swallowed,
        // and the one the kubelet made after stopping it.
        let keep = collected(plan(
            &[
                stopped("s-old", "u1", "ns", "web"),
                sandbox("s-new", "u1", "ns", "web"),
            ],
            &[with_networks(pod("u1", "ns", "web"), "blue-nad")],
            &[nad("blue", "blue-nad")],
        ));
        assert!(keeps(&keep, "blue", "s-new", "eth0") && keeps(&keep, "blue", "s-new", "net1"));
        assert!(keep["blue"].iter().all(|(id, _)| id == "s-new"), "{keep:?}");
    }

    #[test]
    fn a_stopped_sandbox_of_a_pod_that_ended_is_not_kept() {
        let mut done = with_networks(pod("u1", "ns", "job"), "blue-nad");
        done.terminal = true;
        let keep = collected(plan(
            &[stopped("s-old", "u1", "ns", "job")],
            &[done],
            &[nad("blue", "blue-nad")],
        ));
        assert!(keep["blue"].is_empty(), "{keep:?}");
    }

    #[test]
    fn a_stopped_sandbox_whose_pod_is_not_listed_is_kept() {
        let keep = collected(plan(
            &[stopped("s-old", "u9", "ns", "deleted")],
            &[],
            &[nad("blue", "blue-nad")],
        ));
        assert!(keeps(&keep, "blue", "s-old", "eth0"));
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
