#![allow(clippy::unwrap_used)]
//! Defaults come from the previously applied spec first, so a newer operator never changes what
//! a running cluster has.

use network_addons_operator::defaults::*;
use network_addons_operator::spec::NetworkAddonsConfigSpec;

fn spec(yaml: &str) -> NetworkAddonsConfigSpec {
    serde_saphyr::from_str(yaml).unwrap_or_else(|e| panic!("{yaml}: {e}"))
}

#[test]
fn a_new_kubemacpool_gets_the_local_unicast_range_of_its_prefix() {
    let filled = fill_defaults(&spec("kubeMacPool: {}"), None, [0x12, 0xab]);
    let pool = filled.kube_mac_pool.expect("pool");
    assert_eq!(pool.range_start, "02:12:ab:00:00:00");
    assert_eq!(pool.range_end, "02:12:ab:ff:ff:ff");
    assert!(network_addons_operator::validate::validate(&filled_with(&pool)).is_empty());
}

fn filled_with(pool: &network_addons_operator::spec::KubeMacPool) -> NetworkAddonsConfigSpec {
    NetworkAddonsConfigSpec {
        kube_mac_pool: Some(pool.clone()),
        ..NetworkAddonsConfigSpec::default()
    }
}

#[test]
fn a_clusters_prefix_is_derived_from_its_kube_system_uid_alone() {
    let uid = "4f1c2a3b-0d5e-4c6f-8a7b-9c0d1e2f3a4b";
    assert_eq!(cluster_prefix(uid), cluster_prefix(uid));
    // Fixed values: every later version of the operator must derive the same.
    assert_eq!(cluster_prefix(""), [0xef, 0xd0]);
    assert_eq!(cluster_prefix("a"), [0x82, 0xa2]);
}

#[test]
fn clusters_with_other_uids_get_other_ranges() {
    let prefixes: std::collections::BTreeSet<[u8; 2]> = (0..1000)
        .map(|i| cluster_prefix(&format!("00000000-0000-4000-8000-{i:012x}")))
        .collect();
    // 1000 UIDs that differ only in their last digits, in 65536 prefixes: a handful may
    // share one, as random draws would (about 8 in 1000).
    assert!(prefixes.len() > 980, "{} distinct of 1000", prefixes.len());
}

#[test]
fn the_derived_range_is_kept_from_the_applied_spec() {
    let prev = fill_defaults(&spec("kubeMacPool: {}"), None, [0x12, 0xab]);
    let again = fill_defaults(&spec("kubeMacPool: {}"), Some(&prev), [0x99, 0x99]);
    assert_eq!(again.kube_mac_pool, prev.kube_mac_pool);
}

#[test]
fn an_explicit_range_wins_over_the_applied_one() {
    let prev = fill_defaults(&spec("kubeMacPool: {}"), None, [0x12, 0xab]);
    let next = fill_defaults(
        &spec("kubeMacPool: {rangeStart: '02:00:00:00:00:00', rangeEnd: '02:00:00:00:ff:ff'}"),
        Some(&prev),
        [0, 0],
    );
    assert_eq!(
        next.kube_mac_pool.expect("pool").range_end,
        "02:00:00:00:ff:ff"
    );
}

#[test]
fn pull_policy_and_intervals_come_from_the_applied_spec_then_the_defaults() {
    let fresh = fill_defaults(&spec("linuxBridge: {}"), None, [0, 0]);
    assert_eq!(fresh.image_pull_policy.as_deref(), Some("IfNotPresent"));
    assert_eq!(fresh.self_sign_configuration, Some(default_self_sign()));

    let prev = spec("{imagePullPolicy: Always, selfSignConfiguration: {caRotateInterval: 168h, caOverlapInterval: 24h, certRotateInterval: 24h, certOverlapInterval: 8h}}");
    let next = fill_defaults(&spec("linuxBridge: {}"), Some(&prev), [0, 0]);
    assert_eq!(next.image_pull_policy.as_deref(), Some("Always"));
    assert_eq!(next.self_sign_configuration, prev.self_sign_configuration);
}

#[test]
fn placement_halves_are_filled_separately() {
    let filled = fill_defaults(
        &spec("placementConfiguration: {workloads: {nodeSelector: {node-role.kubernetes.io/worker: ''}}}"),
        None,
        [0, 0],
    );
    let placement = filled.placement_configuration.expect("placement");
    assert_eq!(placement.infra, Some(default_infra_placement()));
    let workloads = placement.workloads.expect("workloads");
    assert!(
        workloads.tolerations.is_none(),
        "a given half is kept as written"
    );
    assert!(workloads
        .node_selector
        .expect("selector")
        .contains_key("node-role.kubernetes.io/worker"));
}

#[test]
fn macvtap_device_plugin_config_defaults_to_the_upstream_name() {
    let filled = fill_defaults(&spec("macvtap: {}"), None, [0, 0]);
    assert_eq!(
        filled.macvtap.expect("macvtap").device_plugin_config,
        "macvtap-deviceplugin-config"
    );
    let own = fill_defaults(&spec("macvtap: {devicePluginConfig: mine}"), None, [0, 0]);
    assert_eq!(own.macvtap.expect("macvtap").device_plugin_config, "mine");
}

#[test]
fn components_that_are_off_stay_off() {
    let filled = fill_defaults(&spec("linuxBridge: {}"), None, [0, 0]);
    assert!(filled.kube_mac_pool.is_none() && filled.macvtap.is_none() && filled.multus.is_none());
}

#[test]
fn a_multicast_range_end_becomes_the_last_unicast_address_before_it() {
    // The upstream README's example; kubemacpool refuses a multicast end.
    let filled = fill_defaults(
        &spec("kubeMacPool: {rangeStart: '02:00:00:00:00:00', rangeEnd: 'FD:FF:FF:FF:FF:FF'}"),
        None,
        [0, 0],
    );
    let pool = filled.kube_mac_pool.expect("pool");
    assert_eq!(pool.range_start, "02:00:00:00:00:00");
    assert_eq!(pool.range_end, "fc:ff:ff:ff:ff:ff");
}
