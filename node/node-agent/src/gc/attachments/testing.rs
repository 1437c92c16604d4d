//! Sandboxes, pods and networks for the tests, and what a plan keeps.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde_json::json;

use super::{plan, LiveSandbox, Plan, PodInfo};
use crate::gc::networks::{Network, Source};

pub(super) fn sandbox(id: &str, uid: &str, namespace: &str, name: &str) -> LiveSandbox {
    LiveSandbox {
        id: id.to_string(),
        uid: uid.to_string(),
        name: name.to_string(),
        namespace: namespace.to_string(),
        ready: true,
    }
}

pub(super) fn pod(uid: &str, namespace: &str, name: &str) -> PodInfo {
    PodInfo {
        uid: uid.to_string(),
        name: name.to_string(),
        namespace: namespace.to_string(),
        ..PodInfo::default()
    }
}

pub(super) fn with_networks(mut pod: PodInfo, networks: &str) -> PodInfo {
    pod.networks = Some(networks.to_string());
    pod
}

pub(super) fn nad(network: &str, nad: &str) -> Network {
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

pub(super) fn node(network: &str, index: usize) -> Network {
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

pub(super) fn collected(plan: Plan) -> BTreeMap<String, BTreeSet<(String, String)>> {
    match plan {
        Plan::Collect(keep) => keep,
        Plan::Defer { why, .. } => panic!("deferred: {why}"),
    }
}

pub(super) fn deferred(plan: Plan) -> String {
    match plan {
        Plan::Defer { why, .. } => why,
        Plan::Collect(keep) => panic!("collected: {keep:?}"),
    }
}

pub(super) fn keeps(
    keep: &BTreeMap<String, BTreeSet<(String, String)>>,
    network: &str,
    id: &str,
    ifname: &str,
) -> bool {
    keep[network].contains(&(id.to_string(), ifname.to_string()))
}

/// One running pod `ns/web` (uid u1) in sandbox s1 with `networks`, on network "blue".
pub(super) fn one_pod(networks: &str) -> BTreeMap<String, BTreeSet<(String, String)>> {
    collected(plan(
        &[sandbox("s1", "u1", "ns", "web")],
        &[with_networks(pod("u1", "ns", "web"), networks)],
        &[nad("blue", "blue-nad")],
    ))
}

pub(super) fn stopped(id: &str, uid: &str, namespace: &str, name: &str) -> LiveSandbox {
    LiveSandbox {
        ready: false,
        ..sandbox(id, uid, namespace, name)
    }
}
