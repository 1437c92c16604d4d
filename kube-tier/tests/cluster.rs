//! The operator, the installer and the plugins on a running cluster: a real kube-apiserver,
//! controller-manager, scheduler, kubelet and containerd (scripts/kube-build), our image from a
//! real registry. One cluster serves every test; the tests run in order, each stating one
//! behaviour, and print libtest's lines so the run's summary counts them.
//!
//! `cargo test -p kube-tier --test cluster [-- NAME_SUBSTRING]`, as root, after
//! scripts/build-plugins and scripts/kube-build.

use std::process::ExitCode;

mod harness;
mod scenarios;

// What the scenarios name from the crate's root.
pub use harness::ctx::Ctx;
pub use harness::nac::nac_condition;
pub use harness::steps::{
    plugins_image, pod_subnet_prefix, NAMESPACE, NODE_CNI_BIN_DIR, OPERATOR, POD_NETWORK_PREFIX,
};
pub use harness::{check, fail};

use harness::Test;

/// The tests, in the order they run (later ones build on the operator the first deploys).
const TESTS: &[(&str, Test)] = &[
    (
        "pods_get_their_network_from_our_bridge_and_reach_each_other",
        scenarios::pods::pods_reach_each_other,
    ),
    (
        "pod_deletion_leaves_no_link_lease_or_state",
        scenarios::pods::pod_deletion_leaves_nothing,
    ),
    (
        "gc_collects_what_lost_dels_left_and_keeps_live_pods",
        scenarios::gc::gc_collects_what_lost_dels_left,
    ),
    (
        "gc_keeps_pods_created_while_it_runs",
        scenarios::gc::gc_keeps_pods_created_while_it_runs,
    ),
    (
        "the_image_is_an_index_of_amd64_and_arm64",
        scenarios::image::the_image_is_an_index_of_amd64_and_arm64,
    ),
    (
        "deploy_manifests_apply_as_the_readme_says",
        scenarios::operator::deploy_applies,
    ),
    (
        "seed_full_config_stays_progressing_and_names_unpullable_images",
        scenarios::operator::full_cr_progressing,
    ),
    (
        "the_operator_can_write_nothing_outside_its_namespace_but_its_cluster_scoped_kinds",
        scenarios::operator::least_privilege,
    ),
    (
        "a_rollout_applies_the_daemonset_once_and_writes_only_its_status",
        scenarios::control_loop::a_rollout_applies_the_daemonset_once,
    ),
    (
        "the_leaders_pod_deleted_the_other_replica_applies_a_change_within_15_s",
        scenarios::control_loop::the_other_replica_takes_over,
    ),
    (
        "the_ipam_controller_is_deployed_once_cert_manager_is_there",
        scenarios::operator::ipam_controller_follows_cert_manager,
    ),
    (
        "operator_metrics_are_scraped_through_its_service",
        scenarios::operator::metrics_through_the_service,
    ),
    (
        "render_diff_shows_a_change_without_making_it",
        scenarios::diff::render_diff_shows_a_change_without_making_it,
    ),
    (
        "on_openshift_the_node_agents_get_their_sccs",
        scenarios::operator::openshift_sccs,
    ),
    (
        "plugins_land_in_the_node_cni_directory",
        scenarios::operator::plugins_land_on_the_node,
    ),
    (
        "node_capacity_shows_the_bridges_and_follows_them",
        scenarios::operator::marker_follows_bridges,
    ),
    (
        "walkthrough_config_deploys_the_bridge_and_the_nmstate_handler",
        scenarios::operator::walkthrough_config,
    ),
    (
        "each_component_has_a_condition_and_objects_carry_the_configs_labels",
        scenarios::operator::component_conditions_and_config_labels,
    ),
    (
        "own_components_reach_available",
        scenarios::operator::own_components_reach_available,
    ),
    (
        "the_walkthrough_crosses_the_nodes_over_br0_and_their_eth1",
        scenarios::nodes::the_walkthrough_crosses_the_nodes_over_br0,
    ),
    (
        "the_walkthroughs_policy_is_available_in_seconds",
        scenarios::nmstate::the_walkthroughs_policy_is_available_in_seconds,
    ),
    (
        "what_the_node_cannot_apply_leaves_it_untouched_and_says_why",
        scenarios::nmstate::what_the_node_cannot_apply_leaves_it_untouched,
    ),
    (
        "max_unavailable_1_applies_the_policy_node_by_node",
        scenarios::nmstate::max_unavailable_one_applies_node_by_node,
    ),
    (
        "a_policy_failing_on_one_node_aborts_the_rest",
        scenarios::nmstate::a_policy_failing_on_one_node_aborts_the_rest,
    ),
    (
        "a_policy_cutting_the_node_off_the_api_server_is_rolled_back",
        scenarios::nmstate::a_policy_cutting_the_node_off_is_rolled_back,
    ),
    (
        "a_handler_killed_mid_apply_leaves_the_node_as_before",
        scenarios::nmstate::a_handler_killed_mid_apply_leaves_the_node_as_before,
    ),
    (
        "idle_the_operator_and_the_nmstate_handlers_write_nothing",
        scenarios::nmstate::an_idle_cluster_writes_nothing,
    ),
    (
        "removing_nmstate_keeps_the_crds_and_the_policies",
        scenarios::nmstate::removing_nmstate_keeps_the_crds_and_the_policies,
    ),
    (
        "ovs_vlan_100_crosses_the_nodes_and_vlan_200_is_cut_off",
        scenarios::nodes::ovs_vlan_100_crosses_the_nodes_and_vlan_200_is_cut_off,
    ),
    (
        "the_node_agents_collect_what_lost_dels_left",
        scenarios::gc::the_node_agents_collect_what_lost_dels_left,
    ),
    (
        "the_node_agents_collect_the_networks_of_attachment_definitions",
        scenarios::gc::the_node_agents_collect_the_networks_of_attachment_definitions,
    ),
    (
        "events_are_recorded_in_default",
        scenarios::operator::events_in_default,
    ),
    (
        "removing_a_component_deletes_its_objects",
        scenarios::changes::component_removed,
    ),
    (
        "placement_change_converges",
        scenarios::changes::placement_change,
    ),
    (
        "a_new_mac_range_is_the_clusters_own",
        scenarios::changes::a_new_mac_range_is_the_clusters_own,
    ),
    (
        "kubemacpool_range_change_converges",
        scenarios::changes::mac_range_change,
    ),
    (
        "kubemacpool_gives_pods_on_both_nodes_macs_from_the_range",
        scenarios::kubemacpool::pods_on_both_nodes_get_macs_from_the_range,
    ),
    (
        "kubemacpool_gives_vms_macs_and_refuses_one_mac_on_two_interfaces",
        scenarios::kubemacpool::vms_get_macs_and_one_mac_on_two_interfaces_is_refused,
    ),
    (
        "kubemacpool_applies_a_range_change_without_a_restart",
        scenarios::kubemacpool::a_range_change_applies_without_a_restart,
    ),
    (
        "kubemacpool_refuses_or_passes_a_hostile_corpus_and_stays_up",
        scenarios::kubemacpool::a_hostile_corpus_is_refused_or_passed_and_the_webhook_stays_up,
    ),
    (
        "kubemacpool_fails_no_create_over_rollouts_and_gives_500_distinct_macs",
        scenarios::kubemacpool::rollouts_and_a_killed_replica_fail_no_create_and_500_get_distinct_macs,
    ),
    (
        "kubemacpool_certificates_are_what_upstream_reads_and_come_back_when_deleted",
        scenarios::kubemacpool::the_certificates_are_what_upstream_reads_and_come_back_when_deleted,
    ),
    (
        "kubemacpool_a_drain_never_takes_the_last_manager",
        scenarios::kubemacpool::a_drain_never_takes_the_last_manager,
    ),
    (
        "kubemacpool_reports_a_collision_between_running_vmis_and_clears_it",
        scenarios::kubemacpool::a_collision_between_running_vmis_is_reported_and_cleared,
    ),
    (
        "kubemacpool_never_gives_again_a_mac_given_before_the_switch",
        scenarios::kubemacpool::macs_given_before_the_switch_are_never_given_again,
    ),
    (
        "invalid_config_is_refused_with_a_clear_condition",
        scenarios::changes::invalid_refused,
    ),
    (
        "a_malformed_field_is_refused_at_kubectl_apply",
        scenarios::changes::malformed_refused_at_apply,
    ),
    (
        "unsafe_change_is_refused_with_a_clear_condition",
        scenarios::changes::unsafe_refused,
    ),
    (
        "another_field_manager_keeps_its_fields",
        scenarios::changes::second_field_manager,
    ),
    (
        "objects_the_upstream_operator_created_are_taken_over_in_place",
        scenarios::changes::takeover,
    ),
    (
        "in_place_from_the_upstream_operator_leaves_no_moment_without_cni_binaries",
        scenarios::cnao::in_place_from_cnao,
    ),
    (
        "installer_upgrade_under_running_pods_fails_no_cni_call",
        scenarios::upgrade::installer_upgrade,
    ),
    (
        "deleting_the_config_garbage_collects_its_objects",
        scenarios::changes::delete_gc,
    ),
    (
        "a_lost_node_keeps_the_config_progressing_not_degraded",
        scenarios::nodes::a_lost_node_keeps_the_config_progressing_not_degraded,
    ),
    // Last: they crash and restart containerd and the kubelet.
    (
        "the_node_agents_collect_after_the_runtime_is_killed_mid_pod",
        scenarios::gc::the_node_agents_collect_after_the_runtime_is_killed_mid_pod,
    ),
    (
        "the_node_agents_collect_a_sandbox_deleted_behind_the_runtime",
        scenarios::gc::the_node_agents_collect_a_sandbox_deleted_behind_the_runtime,
    ),
    (
        "a_rebooted_node_gets_its_policies_back",
        scenarios::nmstate::a_rebooted_node_gets_its_policies_back,
    ),
    (
        "a_reboot_leaves_the_node_holding_only_what_its_live_pods_use",
        scenarios::reboot::a_reboot_leaves_the_node_holding_only_what_its_live_pods_use,
    ),
];

fn main() -> ExitCode {
    harness::run(TESTS)
}
