//! Defaults, filled from the previously applied spec first, so a newer operator never changes
//! what a running cluster has (a random MAC range, the pull policy, the certificate intervals);
//! and the one change refused once applied.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, NodeSelectorRequirement, NodeSelectorTerm, PreferredSchedulingTerm,
    Toleration,
};

use crate::spec::{
    NetworkAddonsConfigSpec, Placement, PlacementConfiguration, SelfSignConfiguration,
};
use crate::validate::last_unicast_at_or_below;

pub const DEFAULT_PULL_POLICY: &str = "IfNotPresent";
pub const DEFAULT_DEVICE_PLUGIN_CONFIG: &str = "macvtap-deviceplugin-config";
pub const DEFAULT_CRI_SOCKET: &str = "/run/crio/crio.sock";

/// The intervals the upstream operator applies (its code; its README names other values).
pub fn default_self_sign() -> SelfSignConfiguration {
    SelfSignConfiguration {
        ca_rotate_interval: "48h".to_string(),
        ca_overlap_interval: "24h".to_string(),
        cert_rotate_interval: "24h".to_string(),
        cert_overlap_interval: "12h".to_string(),
    }
}

/// Infra components prefer control-plane nodes; they still run elsewhere when none is
/// schedulable.
pub fn default_infra_placement() -> Placement {
    let prefer = |key: &str, weight: i32| PreferredSchedulingTerm {
        weight,
        preference: NodeSelectorTerm {
            match_expressions: Some(vec![NodeSelectorRequirement {
                key: key.to_string(),
                operator: "Exists".to_string(),
                values: None,
            }]),
            match_fields: None,
        },
    };
    Placement {
        node_selector: None,
        affinity: Some(Affinity {
            node_affinity: Some(NodeAffinity {
                preferred_during_scheduling_ignored_during_execution: Some(vec![
                    prefer("node-role.kubernetes.io/control-plane", 10),
                    prefer("node-role.kubernetes.io/master", 1),
                ]),
                required_during_scheduling_ignored_during_execution: None,
            }),
            pod_affinity: None,
            pod_anti_affinity: None,
        }),
        tolerations: None,
    }
}

/// Node agents run on every Linux node, cordoned ones included.
pub fn default_workloads_placement() -> Placement {
    Placement {
        node_selector: Some(BTreeMap::from([(
            "kubernetes.io/os".to_string(),
            "linux".to_string(),
        )])),
        affinity: None,
        tolerations: Some(vec![Toleration {
            key: Some("node.kubernetes.io/unschedulable".to_string()),
            operator: Some("Exists".to_string()),
            effect: Some("NoSchedule".to_string()),
            ..Toleration::default()
        }]),
    }
}

/// The MAC range's prefix of the cluster whose `kube-system` Namespace has `uid`: the first two
/// bytes of the UID's 64-bit FNV-1a hash, mixed by MurmurHash3's 64-bit finalizer. The same
/// cluster always derives the same range (a reinstalled operator, a lost record), and two
/// clusters on one L2 share one only when their hashes share two bytes, as random prefixes
/// drawn again at every install could.
pub fn cluster_prefix(uid: &str) -> [u8; 2] {
    // Both steps are small and fixed for good, so a range derived once is derived again by
    // every later version of the operator. FNV-1a alone leaves its high bytes to the first
    // bytes of the input: the finalizer spreads every byte over all of them.
    let fnv = uid.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    let mut k = fnv ^ (fnv >> 33);
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    let [a, b, ..] = k.to_be_bytes();
    [a, b]
}

/// The `02:XX:XX:00:00:00`-`02:XX:XX:FF:FF:FF` range of a two-byte prefix.
pub fn mac_range_of_prefix(prefix: [u8; 2]) -> (String, String) {
    let [a, b] = prefix;
    (
        format!("02:{a:02x}:{b:02x}:00:00:00"),
        format!("02:{a:02x}:{b:02x}:ff:ff:ff"),
    )
}

/// The prefix of this cluster's MAC range ([`cluster_prefix`] of the `kube-system` Namespace's
/// UID). Only a lasting answer, that this operator may not read that Namespace or that it does
/// not exist, makes it two random bytes (and a warning says so). Any other failure (the API
/// server restarting, the network) is tried again every 5 seconds, `attempts` times in all, so
/// a passing outage at the operator's start does not leave the cluster a random range for good.
pub async fn cluster_mac_prefix(client: &kube::Client, attempts: u32) -> [u8; 2] {
    let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> =
        kube::Api::all(client.clone());
    let mut tried = 0;
    loop {
        tried += 1;
        let why = match namespaces.get("kube-system").await {
            Ok(ns) => match ns.metadata.uid {
                Some(uid) => return cluster_prefix(&uid),
                None => "it has no uid".to_string(),
            },
            Err(kube::Error::Api(e)) if e.code == 403 || e.code == 404 => e.to_string(),
            Err(e) if tried < attempts => {
                tracing::warn!(error = %e, "cannot read the kube-system Namespace yet; trying again in 5 s");
                tokio::time::sleep(std::time::Duration::from_secs(5)).await;
                continue;
            }
            Err(e) => e.to_string(),
        };
        tracing::warn!(error = %why, "cannot read the kube-system Namespace: a new MAC range is random");
        return random_prefix();
    }
}

/// Two random bytes from the kernel.
pub fn random_prefix() -> [u8; 2] {
    match net_types::MacAddr::random_local() {
        Ok(mac) => [mac.octets()[1], mac.octets()[2]],
        // /dev/urandom is readable on any node this runs on; a fixed prefix is still a valid range.
        Err(_) => [0x4a, 0xbe],
    }
}

/// `spec` with every default explicit: values from `prev` (the last applied spec) when it has
/// them, else this operator's defaults. `prefix` makes a new MAC range (the cluster's own,
/// [`cluster_prefix`], as CNAO would make a random one).
pub fn fill_defaults(
    spec: &NetworkAddonsConfigSpec,
    prev: Option<&NetworkAddonsConfigSpec>,
    prefix: [u8; 2],
) -> NetworkAddonsConfigSpec {
    let mut out = spec.clone();

    if out.image_pull_policy.as_deref().unwrap_or("").is_empty() {
        out.image_pull_policy = Some(
            prev.and_then(|p| p.image_pull_policy.clone())
                .unwrap_or_else(|| DEFAULT_PULL_POLICY.to_string()),
        );
    }

    if let Some(pool) = &mut out.kube_mac_pool {
        if pool.range_start.is_empty() && pool.range_end.is_empty() {
            let prev_pool = prev
                .and_then(|p| p.kube_mac_pool.as_ref())
                .filter(|p| !p.range_start.is_empty() && !p.range_end.is_empty());
            match prev_pool {
                Some(p) => {
                    pool.range_start = p.range_start.clone();
                    pool.range_end = p.range_end.clone();
                }
                None => {
                    let (start, end) = mac_range_of_prefix(prefix);
                    pool.range_start = start;
                    pool.range_end = end;
                }
            }
        }
    }

    if let Some(pool) = &mut out.kube_mac_pool {
        if let Ok(end) = net_types::MacAddr::parse(&pool.range_end) {
            if end.is_multicast() {
                pool.range_end =
                    net_types::MacAddr::from_u64(last_unicast_at_or_below(end.to_u64()))
                        .to_string();
            }
        }
    }

    if out.self_sign_configuration.is_none() {
        out.self_sign_configuration = Some(
            prev.and_then(|p| p.self_sign_configuration.clone())
                .unwrap_or_else(default_self_sign),
        );
    }

    if let Some(m) = &mut out.macvtap {
        if m.device_plugin_config.is_empty() {
            m.device_plugin_config = prev
                .and_then(|p| p.macvtap.as_ref())
                .map(|p| p.device_plugin_config.clone())
                .filter(|c| !c.is_empty())
                .unwrap_or_else(|| DEFAULT_DEVICE_PLUGIN_CONFIG.to_string());
        }
    }

    if let Some(dn) = &mut out.multus_dynamic_networks {
        if dn.host_cri_socket_path.is_empty() {
            dn.host_cri_socket_path = prev
                .and_then(|p| p.multus_dynamic_networks.as_ref())
                .map(|p| p.host_cri_socket_path.clone())
                .filter(|c| !c.is_empty())
                .unwrap_or_else(|| DEFAULT_CRI_SOCKET.to_string());
        }
    }

    let placement = out
        .placement_configuration
        .get_or_insert_with(PlacementConfiguration::default);
    if placement.infra.is_none() {
        placement.infra = Some(default_infra_placement());
    }
    if placement.workloads.is_none() {
        placement.workloads = Some(default_workloads_placement());
    }

    out
}

/// Why an `imagePullPolicy` may not change, in the words the CRD's rule uses too.
pub fn pull_policy_change(old: &str, new: &str) -> String {
    format!(
        "imagePullPolicy cannot change once deployed (applied: {old}, requested: {new}); set it back to {old}"
    )
}

/// Changes refused once a spec was applied; each error names the field and how to proceed.
pub fn check_change_safe(
    prev: &NetworkAddonsConfigSpec,
    next: &NetworkAddonsConfigSpec,
) -> Vec<String> {
    let mut errors = Vec::new();
    if let (Some(old), Some(new)) = (&prev.image_pull_policy, &next.image_pull_policy) {
        if old != new {
            errors.push(pull_policy_change(old, new));
        }
    }
    errors
}
