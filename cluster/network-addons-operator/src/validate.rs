//! Validation of a NetworkAddonsConfig spec, run before defaults are filled. Every rule
//! reports its own line, so one look at the Degraded condition shows everything to fix.

use std::time::Duration;

use net_types::MacAddr;

use crate::spec::{KubeMacPool, NetworkAddonsConfigSpec, SelfSignConfiguration};
use net_types::parse_go_duration;

pub const PULL_POLICIES: [&str; 3] = ["Always", "Never", "IfNotPresent"];

/// The CRI sockets the multus dynamic networks controller can talk to.
pub const CRI_SOCKETS: [&str; 3] = [
    "/run/crio/crio.sock",
    "/run/containerd/containerd.sock",
    "/run/k3s/containerd/containerd.sock",
];

/// The intervals' order: each `(a, b)` reads "a must not exceed b". The reconciler checks it,
/// and so does the CRD's CEL rule on the API servers that have CEL, in the same words.
pub const INTERVAL_ORDER: [(&str, &str); 3] = [
    ("caOverlapInterval", "caRotateInterval"),
    ("certRotateInterval", "caRotateInterval"),
    ("certOverlapInterval", "certRotateInterval"),
];

/// What [`INTERVAL_ORDER`]'s pair `(a, b)` says when `a` is the longer.
pub fn must_not_exceed(a: &str, b: &str) -> String {
    format!("{a} must not exceed {b}")
}

/// What the MAC range's order rule says (the reconciler's and the CRD's CEL rule's words).
pub fn range_order(start: &str, end: &str) -> String {
    format!("rangeStart {start} must be below rangeEnd {end}")
}

/// All rule violations of `spec`; empty when it is valid.
pub fn validate(spec: &NetworkAddonsConfigSpec) -> Vec<String> {
    let mut errors = Vec::new();
    if let Some(pool) = &spec.kube_mac_pool {
        validate_kube_mac_pool(pool, &mut errors);
    }
    if let Some(ss) = &spec.self_sign_configuration {
        validate_self_sign(ss, &mut errors);
    }
    if let Some(policy) = &spec.image_pull_policy {
        if !PULL_POLICIES.contains(&policy.as_str()) {
            errors.push(format!(
                "imagePullPolicy {policy:?} is not one of Always, Never, IfNotPresent"
            ));
        }
    }
    if let Some(dn) = &spec.multus_dynamic_networks {
        if spec.multus.is_none() {
            errors.push("multusDynamicNetworks requires multus to be deployed".to_string());
        }
        let path = dn.host_cri_socket_path.as_str();
        if !path.is_empty() && !CRI_SOCKETS.contains(&path) {
            errors.push(format!(
                "multusDynamicNetworks.hostCRISocketPath {path:?} is not one of {}",
                CRI_SOCKETS.join(", ")
            ));
        }
    }
    errors
}

/// One message for the Degraded condition and the Failed event.
pub fn message(errors: &[String]) -> String {
    format!("invalid configuration:\n{}", errors.join("\n"))
}

fn validate_kube_mac_pool(pool: &KubeMacPool, errors: &mut Vec<String>) {
    match (pool.range_start.is_empty(), pool.range_end.is_empty()) {
        (true, true) => return,
        (false, false) => {}
        _ => {
            errors.push(
                "kubeMacPool: set both rangeStart and rangeEnd, or neither (a random range is then chosen)"
                    .to_string(),
            );
            return;
        }
    }
    let parse = |field: &str, value: &str, errors: &mut Vec<String>| match MacAddr::parse(value) {
        Ok(mac) => Some(mac),
        Err(_) => {
            errors.push(format!(
                "kubeMacPool.{field} {value:?} is not a MAC address (six hex octets, e.g. 02:00:00:00:00:00)"
            ));
            None
        }
    };
    let start = parse("rangeStart", &pool.range_start, errors);
    let end = parse("rangeEnd", &pool.range_end, errors);
    if let Some(start) = start {
        if start.is_multicast() {
            errors.push(format!(
                "kubeMacPool.rangeStart {:?} is a multicast address (the first octet's lowest bit must be 0)",
                pool.range_start
            ));
        }
    }
    if let (Some(start), Some(end)) = (start, end) {
        // As 48-bit numbers: a byte-by-byte comparison that stops at the first smaller byte
        // would let 03:00:.. through before 02:ff:..
        if start.to_u64() >= last_unicast_at_or_below(end.to_u64()) {
            errors.push(format!(
                "kubeMacPool: {}",
                range_order(&pool.range_start, &pool.range_end)
            ));
        }
    }
}

/// A range end whose first octet is odd (the upstream README's `FD:FF:FF:FF:FF:FF`) is read as
/// "up to the last unicast address before it": kubemacpool itself refuses a multicast end.
pub fn last_unicast_at_or_below(n: u64) -> u64 {
    if (n >> 40) & 1 == 1 {
        // Clear to the highest address whose first octet is one below (even).
        (n & !0xff_ffff_ffff) - 1
    } else {
        n
    }
}

fn validate_self_sign(ss: &SelfSignConfiguration, errors: &mut Vec<String>) {
    let fields = [
        ("caRotateInterval", &ss.ca_rotate_interval),
        ("caOverlapInterval", &ss.ca_overlap_interval),
        ("certRotateInterval", &ss.cert_rotate_interval),
        ("certOverlapInterval", &ss.cert_overlap_interval),
    ];
    let mut parsed: Vec<Option<Duration>> = Vec::new();
    for (name, value) in fields {
        if value.is_empty() {
            errors.push(format!(
                "selfSignConfiguration.{name} is missing (set all four intervals, or none)"
            ));
            parsed.push(None);
            continue;
        }
        match parse_go_duration(value) {
            Ok(d) if d.is_zero() => {
                errors.push(format!("selfSignConfiguration.{name} must be above zero"));
                parsed.push(None);
            }
            Ok(d) => parsed.push(Some(d)),
            Err(e) => {
                errors.push(format!("selfSignConfiguration.{name}: {e}"));
                parsed.push(None);
            }
        }
    }
    let by_name = |name: &str| {
        fields
            .iter()
            .position(|(field, _)| *field == name)
            .and_then(|i| parsed[i])
    };
    for (a, b) in INTERVAL_ORDER {
        if let (Some(x), Some(y)) = (by_name(a), by_name(b)) {
            if x > y {
                errors.push(format!("selfSignConfiguration: {}", must_not_exceed(a, b)));
            }
        }
    }
}
