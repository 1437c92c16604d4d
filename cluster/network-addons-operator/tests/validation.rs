#![allow(clippy::unwrap_used)]
//! Every validation rule, each with specs it accepts and specs it refuses (with the message
//! the Degraded condition shows).

use network_addons_operator::defaults::check_change_safe;
use network_addons_operator::spec::NetworkAddonsConfigSpec;
use network_addons_operator::validate::{message, validate};

fn spec(yaml: &str) -> NetworkAddonsConfigSpec {
    serde_saphyr::from_str(yaml).unwrap_or_else(|e| panic!("{yaml}: {e}"))
}

/// (rule, spec, None when accepted / Some(part of the error) when refused)
const TABLE: &[(&str, &str, Option<&str>)] = &[
    // kubeMacPool
    ("empty pool: a random range", "kubeMacPool: {}", None),
    ("both ends set", "kubeMacPool: {rangeStart: '02:00:00:00:00:00', rangeEnd: 'FD:FF:FF:FF:FF:FF'}", None),
    ("dash-separated MACs", "kubeMacPool: {rangeStart: '02-00-00-00-00-00', rangeEnd: '02-00-00-00-00-ff'}", None),
    ("only rangeStart", "kubeMacPool: {rangeStart: '02:00:00:00:00:00'}", Some("set both rangeStart and rangeEnd")),
    ("only rangeEnd", "kubeMacPool: {rangeEnd: '02:00:00:00:00:00'}", Some("set both rangeStart and rangeEnd")),
    ("not a MAC", "kubeMacPool: {rangeStart: 'this:aint:right', rangeEnd: '02:00:00:00:00:ff'}", Some("rangeStart \"this:aint:right\" is not a MAC address")),
    ("EUI-64 is not a 48-bit MAC", "kubeMacPool: {rangeStart: '02:00:00:00:00:00:00:00', rangeEnd: '02:00:00:00:00:ff'}", Some("is not a MAC address")),
    ("multicast start", "kubeMacPool: {rangeStart: '03:00:00:00:00:00', rangeEnd: '04:00:00:00:00:00'}", Some("rangeStart \"03:00:00:00:00:00\" is a multicast address")),
    ("multicast end: the last unicast address before it", "kubeMacPool: {rangeStart: '02:00:00:00:00:00', rangeEnd: '05:00:00:00:00:00'}", None),
    ("multicast end leaving nothing above start", "kubeMacPool: {rangeStart: '04:ff:ff:ff:ff:ff', rangeEnd: '05:00:00:00:00:00'}", Some("must be below rangeEnd")),
    ("start above end in an early octet", "kubeMacPool: {rangeStart: '04:00:00:00:00:00', rangeEnd: '02:ff:ff:ff:ff:ff'}", Some("must be below rangeEnd")),
    ("start above end in a late octet", "kubeMacPool: {rangeStart: '02:00:00:00:01:00', rangeEnd: '02:00:00:00:00:ff'}", Some("must be below rangeEnd")),
    ("start equal to end", "kubeMacPool: {rangeStart: '02:00:00:00:00:00', rangeEnd: '02:00:00:00:00:00'}", Some("must be below rangeEnd")),
    ("locally administered bit is not required", "kubeMacPool: {rangeStart: '00:00:00:00:00:00', rangeEnd: '00:00:00:00:00:ff'}", None),
    // selfSignConfiguration
    ("the README's values", "selfSignConfiguration: {caRotateInterval: 168h, caOverlapInterval: 24h, certRotateInterval: 24h, certOverlapInterval: 8h}", None),
    ("compound durations", "selfSignConfiguration: {caRotateInterval: 2h30m, caOverlapInterval: 90m, certRotateInterval: 1.5h, certOverlapInterval: 3600s}", None),
    ("equal intervals", "selfSignConfiguration: {caRotateInterval: 1h, caOverlapInterval: 1h, certRotateInterval: 1h, certOverlapInterval: 1h}", None),
    ("one missing", "selfSignConfiguration: {caRotateInterval: 168h, caOverlapInterval: 24h, certRotateInterval: 24h}", Some("certOverlapInterval is missing")),
    ("only one set", "selfSignConfiguration: {caRotateInterval: 168h}", Some("caOverlapInterval is missing")),
    ("not a duration", "selfSignConfiguration: {caRotateInterval: 7d, caOverlapInterval: 24h, certRotateInterval: 24h, certOverlapInterval: 8h}", Some("caRotateInterval: \"7d\" is not a duration")),
    ("zero", "selfSignConfiguration: {caRotateInterval: 168h, caOverlapInterval: 0s, certRotateInterval: 24h, certOverlapInterval: 8h}", Some("caOverlapInterval must be above zero")),
    ("negative", "selfSignConfiguration: {caRotateInterval: 168h, caOverlapInterval: -1h, certRotateInterval: 24h, certOverlapInterval: 8h}", Some("is negative")),
    ("CA overlap above CA rotate", "selfSignConfiguration: {caRotateInterval: 24h, caOverlapInterval: 25h, certRotateInterval: 24h, certOverlapInterval: 8h}", Some("caOverlapInterval must not exceed caRotateInterval")),
    ("cert rotate above CA rotate", "selfSignConfiguration: {caRotateInterval: 24h, caOverlapInterval: 12h, certRotateInterval: 48h, certOverlapInterval: 8h}", Some("certRotateInterval must not exceed caRotateInterval")),
    ("cert overlap above cert rotate", "selfSignConfiguration: {caRotateInterval: 168h, caOverlapInterval: 24h, certRotateInterval: 24h, certOverlapInterval: 25h}", Some("certOverlapInterval must not exceed certRotateInterval")),
    // imagePullPolicy
    ("Always", "imagePullPolicy: Always", None),
    ("Never", "imagePullPolicy: Never", None),
    ("IfNotPresent", "imagePullPolicy: IfNotPresent", None),
    ("wrong case", "imagePullPolicy: always", Some("imagePullPolicy \"always\" is not one of")),
    // multusDynamicNetworks
    ("with multus", "{multus: {}, multusDynamicNetworks: {}}", None),
    ("containerd socket", "{multus: {}, multusDynamicNetworks: {hostCRISocketPath: /run/containerd/containerd.sock}}", None),
    ("without multus", "multusDynamicNetworks: {}", Some("multusDynamicNetworks requires multus")),
    ("unknown socket", "{multus: {}, multusDynamicNetworks: {hostCRISocketPath: /var/run/docker.sock}}", Some("hostCRISocketPath \"/var/run/docker.sock\" is not one of")),
    // placement has no rules
    ("any placement", "placementConfiguration: {workloads: {nodeSelector: {node-role.kubernetes.io/worker: ''}}}", None),
];

#[test]
fn every_rule_accepts_and_refuses_as_specified() {
    let mut failures = Vec::new();
    for (rule, yaml, expected) in TABLE {
        let errors = validate(&spec(yaml));
        match expected {
            None if !errors.is_empty() => failures.push(format!("{rule}: refused: {errors:?}")),
            Some(part) if !errors.iter().any(|e| e.contains(part)) => failures.push(format!(
                "{rule}: expected an error with {part:?}, got {errors:?}"
            )),
            _ => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_violation_is_reported_at_once() {
    let errors = validate(&spec(
        "{imagePullPolicy: sometimes, kubeMacPool: {rangeStart: x}, multusDynamicNetworks: {}}",
    ));
    assert_eq!(errors.len(), 3, "{errors:?}");
    let msg = message(&errors);
    assert!(msg.starts_with("invalid configuration:\n"), "{msg}");
    assert_eq!(msg.lines().count(), 4, "{msg}");
}

#[test]
fn image_pull_policy_cannot_change_once_applied() {
    let prev = spec("imagePullPolicy: IfNotPresent");
    let errors = check_change_safe(&prev, &spec("imagePullPolicy: Always"));
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].contains("imagePullPolicy cannot change"),
        "{errors:?}"
    );
}

#[test]
fn other_changes_are_safe() {
    let prev = spec("{imagePullPolicy: Always, linuxBridge: {}, kubeMacPool: {rangeStart: '02:00:00:00:00:00', rangeEnd: '02:00:00:00:00:ff'}}");
    let next = spec("{imagePullPolicy: Always, ovs: {}, kubeMacPool: {rangeStart: '02:00:00:00:01:00', rangeEnd: '02:00:00:00:01:ff'}}");
    assert!(check_change_safe(&prev, &next).is_empty());
}
