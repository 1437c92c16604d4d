//! The ifnames each live sandbox is kept under, on every network.
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

use std::collections::BTreeSet;

use super::LiveSandbox;
use crate::gc::networks::{Network, Source};

/// `eth0`.. up to this many are kept whatever the node conflists.
const ETH_KEPT: usize = 8;
/// `net<i>` beyond a pod's own networks, for Multus's `defaultNetworks` that come first.
const NET_SPARE: usize = 32;

/// `eth<i>` are kept for i below this: the node conflists' load indexes, at least [`ETH_KEPT`].
pub(super) fn eth_kept(networks: &[Network]) -> usize {
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
pub(super) struct Ifnames {
    /// How many networks its `networks` annotation lists.
    pub(super) networks: usize,
    /// The interface names either annotation gives, those the kernel accepts.
    pub(super) named: BTreeSet<String>,
}

impl Ifnames {
    fn kept(&self, eth: usize) -> impl Iterator<Item = String> + '_ {
        (0..eth)
            .map(|i| format!("eth{i}"))
            .chain((1..=self.networks + NET_SPARE).map(|i| format!("net{i}")))
            .chain(self.named.iter().cloned())
    }
}

/// Every (sandbox, ifname) kept on each network. A sandbox whose pod is not in the list
/// (`pod_of` has none for it) is kept under the ifnames of every pod that can be read.
pub(super) fn kept_attachments(
    sandboxes: &[LiveSandbox],
    pod_of: &[Option<usize>],
    read: &[Option<Ifnames>],
    eth: usize,
) -> BTreeSet<(String, String)> {
    let readable = || read.iter().flatten();
    let orphan = Ifnames {
        networks: readable().map(|i| i.networks).max().unwrap_or(0),
        named: readable().flat_map(|i| i.named.iter().cloned()).collect(),
    };
    let mut keep = BTreeSet::new();
    for (sandbox, pod) in sandboxes.iter().zip(pod_of) {
        let ifnames = pod.and_then(|pod| read[pod].as_ref()).unwrap_or(&orphan);
        for ifname in ifnames.kept(eth) {
            keep.insert((sandbox.id.clone(), ifname));
        }
    }
    keep
}

#[cfg(test)]
mod tests {
    use crate::gc::attachments::plan;
    use crate::gc::attachments::testing::{
        collected, keeps, nad, node, one_pod, pod, sandbox, with_networks,
    };

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
    fn an_interface_is_kept_on_every_network_not_only_the_one_it_names() {
        let keep = collected(plan(
            &[sandbox("s1", "u1", "ns", "web")],
            &[with_networks(pod("u1", "ns", "web"), "blue-nad@blue0")],
            &[nad("blue", "blue-nad"), nad("red", "red-nad")],
        ));
        assert!(keeps(&keep, "red", "s1", "blue0"));
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
}
