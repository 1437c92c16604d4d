//! VLAN filtering, which this machine's kernel lacks: the tests in `in_guest` run inside
//! Debian's 6.1 kernel under QEMU (the real-kernel tier, shared/TESTING.md), driven by
//! `vlan_tests_pass_on_a_real_kernel`, which boots the guest once for all of them.

#[path = "../common/mod.rs"]
mod common;

#[test]
fn vlan_tests_pass_on_a_real_kernel() {
    netns_tests::skip_unless_root!();
    // What the guest runs but should not build under emulation: the libcni driver, and our
    // tuning (target/cni-bin, from scripts/build-plugins).
    netns_tests::build_libcni_driver();
    netns_tests::our_plugin("tuning");
    let stdout = netns_tests::real_kernel_tier::run_ignored_tests_in_guest("in_guest::");
    println!("{stdout}");
    for name in [
        "access_vlans_isolate_pods_on_one_bridge",
        "a_trunk_port_reaches_both_access_vlans_through_8021q_subinterfaces",
        "the_default_vlan_leaves_the_port_unless_preserved",
        "bridge_vlan_show_matches_the_config_and_check_verifies_it",
        "a_gateway_on_an_access_vlan_lives_on_bridge_dot_vlan",
        "a_half_made_gateway_interface_is_completed_by_the_next_add",
        "a_gateway_interface_whose_peer_is_off_the_bridge_is_replaced",
        "an_add_that_fails_after_making_the_gateway_interface_removes_it",
        "a_failing_add_leaves_an_existing_gateway_interface_alone",
        "a_gateway_interface_made_by_a_failing_add_stays_for_other_pods_of_the_vlan",
        "concurrent_adds_on_one_vlan_share_one_gateway_interface",
        "the_walkthrough_vlan_100_pings_across_two_nodes_before_and_after_filtering_is_turned_on",
        "go_bridge::the_default_vlan_stays_on_a_port_exactly_when_it_does_with_the_go_bridge",
        "go_bridge::our_check_and_del_work_on_a_vlan_attachment_of_the_go_bridge",
    ] {
        assert!(
            stdout.contains(&format!("test in_guest::{name} ... ok")),
            "{name}:\n{stdout}"
        );
    }
}

mod in_guest;
