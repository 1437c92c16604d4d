//! The real-kernel test tier, end to end from `cargo test`: Debian's 6.1 kernel booted under QEMU
//! by the `real-kernel` binary's library (see "Real-kernel tier" in shared/TESTING.md).
//!
//! - `kernel_features_check_passes_in_the_guest` boots the guest and runs `real-kernel check`
//!   inside: VLAN-filtering bridge, access and trunk ports,
//!   `bridge vlan show`, 802.1Q, the openvswitch module, the nftables bridge family, ping on one
//!   VLAN and no ping across two.
//! - `rust_tests_run_inside_the_guest` boots it once more and runs this test binary's
//!   `in_guest::` tests inside: the pattern for tests that need the real kernel.
//!
//! Both set the tier up first (`real-kernel setup`, idempotent: about 1 s when all is installed).
//! Not root, they skip and say so (unless CNI_TESTS_REQUIRE_ROOT=1); as root, if the tier cannot
//! be set up (no package registry and nothing cached, ...) they FAIL with the reason.

use netns_tests::real_kernel_tier;

use std::path::Path;
use std::time::Instant;

/// The `real-kernel` binary, built by Cargo for this test; the guest sees the host's files.
const REAL_KERNEL: &str = env!("CARGO_BIN_EXE_real-kernel");

#[test]
fn kernel_features_check_passes_in_the_guest() {
    netns_tests::skip_unless_root!();
    let started = Instant::now();
    let out = real_kernel_tier::run(&[], &[REAL_KERNEL, "check"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Shown with --nocapture, and by the harness when the test fails.
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(
        out.status.success(),
        "`real-kernel run -- real-kernel check` exited with {} (see the output above)",
        out.status
    );
    // The exit status is the command's: make sure the check really ran to its end in the guest.
    let summary = stdout
        .lines()
        .find(|l| l.starts_with("== real-kernel check: all "))
        .unwrap_or_else(|| panic!("the check printed no summary line:\n{stdout}"));
    assert!(summary.contains(" checks passed on 6.1."), "{summary}");
    assert!(!stdout.contains("\nFAIL "), "{stdout}");
    for needle in [
        "ok    modprobe 8021q",
        "ok    modprobe openvswitch",
        "ok    ip link add br0 type bridge vlan_filtering 1",
        "ok    bridge vlan add dev va vid 100 pvid untagged",
        "ok    bridge vlan show: va is an untagged access port of VLAN 100",
        "ok    ip link add link eth0 name eth0.100 type vlan id 100",
        "ok    nft: add table bridge t",
        "ok    rkc-a pings rkc-b: both access ports of VLAN 100",
        "ok    rkc-a cannot ping rkc-c: VLAN 100 and VLAN 200 are isolated",
        "ok    control: rkc-a pings rkc-c once vc is moved to VLAN 100",
    ] {
        assert!(stdout.contains(needle), "missing `{needle}` in:\n{stdout}");
    }
    println!(
        "real-kernel check: {:.1} s in all",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn rust_tests_run_inside_the_guest() {
    netns_tests::skip_unless_root!();
    let stdout = real_kernel_tier::run_ignored_tests_in_guest("in_guest::");
    println!("{stdout}");
    assert!(
        stdout
            .contains("test in_guest::vlan_filtering_bridge_and_8021q_through_the_harness ... ok"),
        "{stdout}"
    );
}

#[test]
fn host_side_is_not_the_guest() {
    // The guest-only tests below refuse to run here (require_guest), so `cargo test -- --ignored`
    // on the host fails them instead of testing the host's kernel.
    assert!(
        !real_kernel_tier::in_guest(),
        "REAL_KERNEL_GUEST=1 leaked into the host's tests"
    );
    assert!(
        Path::new(REAL_KERNEL).is_file(),
        "the real-kernel binary is missing"
    );
}

/// Tests that run inside the guest only (driven by `rust_tests_run_inside_the_guest`).
mod in_guest {
    use netns_tests::real_kernel_tier::require_guest;
    use netns_tests::Netns;
    use serde_json::Value;

    #[test]
    #[ignore = "runs inside the real-kernel guest, driven by rust_tests_run_inside_the_guest"]
    fn vlan_filtering_bridge_and_8021q_through_the_harness() {
        require_guest();
        let ns = Netns::new("rk-smoke");
        ns.exec_ok(
            "ip",
            &[
                "link",
                "add",
                "br0",
                "type",
                "bridge",
                "vlan_filtering",
                "1",
            ],
        );
        ns.exec_ok(
            "ip",
            &["link", "add", "p0", "type", "veth", "peer", "name", "p1"],
        );
        ns.exec_ok("ip", &["link", "set", "p0", "master", "br0"]);
        ns.exec_ok(
            "bridge",
            &["vlan", "add", "dev", "p0", "vid", "100", "pvid", "untagged"],
        );
        let json = ns.exec_ok("bridge", &["-j", "vlan", "show", "dev", "p0"]);
        let ports: Value = serde_json::from_str(&json).expect("bridge -j vlan show prints JSON");
        let vlans = ports[0]["vlans"].as_array().expect("p0 has VLANs");
        let vlan100 = vlans
            .iter()
            .find(|v| v["vlan"] == 100)
            .unwrap_or_else(|| panic!("no VLAN 100 on p0: {json}"));
        let flags = vlan100["flags"].as_array().expect("VLAN 100 has flags");
        assert!(flags.iter().any(|f| f == "PVID"), "{json}");
        assert!(flags.iter().any(|f| f == "Egress Untagged"), "{json}");

        ns.exec_ok("modprobe", &["8021q"]);
        ns.exec_ok(
            "ip",
            &[
                "link", "add", "link", "p1", "name", "p1.100", "type", "vlan", "id", "100",
            ],
        );
        let link = ns.link("p1.100").expect("p1.100 exists");
        assert_eq!(link.kind(), Some("vlan"), "{link:?}");
        let data = link
            .linkinfo
            .as_ref()
            .and_then(|i| i.info_data.as_ref())
            .expect("a VLAN link has info_data");
        assert_eq!(data["protocol"], "802.1Q", "{link:?}");
        assert_eq!(data["id"], 100, "{link:?}");
    }
}
