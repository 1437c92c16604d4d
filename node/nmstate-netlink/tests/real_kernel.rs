//! VLAN links, bonds and bridge port VLANs, which this machine's kernel lacks (no 802.1Q, no
//! bonding, no bridge VLAN filtering): applied, verified, rolled back and recovered inside
//! Debian's 6.1 kernel under QEMU (the real-kernel tier, shared/TESTING.md). The tests in
//! `in_guest` are driven by `nmstate_tests_pass_on_a_real_kernel`, which boots the guest once
//! for all of them.

mod common;

#[test]
fn nmstate_tests_pass_on_a_real_kernel() {
    netns_tests::skip_unless_root!();
    let stdout = netns_tests::real_kernel_tier::run_ignored_tests_in_guest("in_guest::");
    println!("{stdout}");
    for name in [
        "a_vlan_link_is_made_on_its_base_and_reported",
        "a_vlan_link_and_its_bases_mtu_are_rolled_back",
        "a_bond_is_made_with_its_mode_options_and_ports",
        "a_bond_and_its_ports_are_put_back_by_a_rollback",
        "a_bonds_mode_changes_with_its_ports_kept",
        "access_and_trunk_port_vlans_turn_on_filtering",
        "port_vlans_and_filtering_are_rolled_back",
        "access_vlans_carry_traffic_only_within_their_vlan",
        "a_late_failure_rolls_back_vlans_bonds_and_port_vlans",
        "a_journal_left_by_a_killed_apply_of_vlans_and_bonds_is_recovered",
    ] {
        assert!(
            stdout.contains(&format!("test in_guest::{name} ... ok")),
            "{name}:\n{stdout}"
        );
    }
}

mod in_guest {
    use super::common::{
        assert_a_late_failure_is_rolled_back, desired, iface, ip, isolate, journal, run_here,
        settle, state, veth,
    };
    use netns_tests::real_kernel_tier::require_guest;
    use nmstate_netlink::{apply, recover};
    use serde_json::{json, Value};

    /// A node with `eth1`..`eth<n>` (veths to `eth<i>-peer`), all up, DAD over.
    fn node_with_nics(n: usize) {
        require_guest();
        isolate();
        for i in 1..=n {
            veth(&format!("eth{i}"), &format!("eth{i}-peer"));
        }
        settle();
    }

    /// The kernel's own view of a link (`ip -d -j link show dev <name>`).
    fn link_details(name: &str) -> Value {
        let text = ip(&["-d", "-j", "link", "show", "dev", name]);
        let parsed: Value = serde_json::from_str(&text).expect("ip -j prints JSON");
        parsed[0].clone()
    }

    fn vlan_filtering(bridge: &str) -> u64 {
        link_details(bridge)["linkinfo"]["info_data"]["vlan_filtering"]
            .as_u64()
            .expect("a bridge reports vlan_filtering")
    }

    fn port_vlans(port: &str) -> Vec<(u64, bool, bool)> {
        netns_tests::parse_port_vlans(&run_here("bridge", &["-j", "vlan", "show", "dev", port]))
    }

    fn apply_and_commit(v: Value) {
        let (_dir, journal) = journal();
        let applied = apply(&desired(v), &journal).expect("apply");
        assert!(applied.changed());
        applied.commit().expect("commit");
        settle();
    }

    /// Applies `v`, then rolls it back: the node must be as it was, in nmstate's report and in
    /// `extra` (what the report does not carry).
    fn apply_then_roll_back(v: Value, extra: impl Fn() -> Value) {
        let before = (state(), extra());
        let (_dir, journal) = journal();
        let applied = apply(&desired(v), &journal).expect("apply");
        assert!(applied.changed());
        assert_ne!(
            extra(),
            before.1,
            "the apply changed what the rollback must undo"
        );
        applied.rollback().expect("rollback");
        settle();
        assert_eq!((state(), extra()), before);
        assert!(!journal.exists());
    }

    fn wait_for_link_local(link: &str) {
        for _ in 0..100 {
            if !ip(&["-6", "addr", "show", "dev", link, "scope", "link"])
                .trim()
                .is_empty()
            {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("{link} got no IPv6 link-local address");
    }

    fn bond(mode: &str, ports: &[&str]) -> Value {
        json!({"interfaces": [{
            "name": "bond0", "type": "bond", "state": "up",
            "link-aggregation": {"mode": mode, "options": {"miimon": 100, "updelay": 200},
                                 "port": ports}
        }]})
    }

    fn port_vlan_bridge() -> Value {
        json!({"interfaces": [{
            "name": "br0", "type": "linux-bridge", "state": "up",
            "bridge": {"options": {"stp": {"enabled": false}}, "port": [
                {"name": "eth1", "vlan": {"mode": "access", "tag": 100}},
                {"name": "eth2", "vlan": {"mode": "trunk", "enable-native": true, "tag": 100,
                    "trunk-tags": [{"id": 101}, {"id-range": {"min": 200, "max": 203}}]}}
            ]}
        }]})
    }

    #[test]
    #[ignore = "runs inside the real-kernel guest, driven by nmstate_tests_pass_on_a_real_kernel"]
    fn a_vlan_link_is_made_on_its_base_and_reported() {
        node_with_nics(1);
        apply_and_commit(json!({"interfaces": [{
            "name": "eth1.100", "type": "vlan", "state": "up", "mtu": 1400,
            "vlan": {"base-iface": "eth1", "id": 100},
            "ipv4": {"enabled": true, "address": [{"ip": "192.0.2.100", "prefix-length": 24}]}
        }]}));
        let kernel = link_details("eth1.100");
        let data = &kernel["linkinfo"]["info_data"];
        assert_eq!(data["protocol"], "802.1Q", "{kernel}");
        assert_eq!(data["id"], 100, "{kernel}");
        assert_eq!(kernel["link"], "eth1", "{kernel}");
        assert_eq!(kernel["mtu"], 1400, "{kernel}");
        let now = state();
        let vlan = iface(&now, "eth1.100").expect("eth1.100 reported");
        assert_eq!(vlan["type"], "vlan");
        assert_eq!(vlan["state"], "up");
        assert_eq!(vlan["vlan"], json!({"base-iface": "eth1", "id": 100}));
        assert_eq!(
            vlan["ipv4"]["address"],
            json!([{"ip": "192.0.2.100", "prefix-length": 24}])
        );
    }

    #[test]
    #[ignore = "runs inside the real-kernel guest, driven by nmstate_tests_pass_on_a_real_kernel"]
    fn a_vlan_link_and_its_bases_mtu_are_rolled_back() {
        node_with_nics(1);
        // A VLAN's MTU above its base's needs the base raised first (and lowered last when
        // rolled back).
        apply_then_roll_back(
            json!({"interfaces": [
                {"name": "eth1.200", "type": "vlan", "mtu": 9000,
                 "vlan": {"base-iface": "eth1", "id": 200}},
                {"name": "eth1", "mtu": 9000}
            ]}),
            || json!(ip(&["-br", "link"])),
        );
    }

    #[test]
    #[ignore = "runs inside the real-kernel guest, driven by nmstate_tests_pass_on_a_real_kernel"]
    fn a_bond_is_made_with_its_mode_options_and_ports() {
        node_with_nics(2);
        apply_and_commit(bond("active-backup", &["eth1", "eth2"]));
        let kernel = link_details("bond0");
        let data = &kernel["linkinfo"]["info_data"];
        assert_eq!(data["mode"], "active-backup", "{kernel}");
        assert_eq!(data["miimon"], 100, "{kernel}");
        assert_eq!(data["updelay"], 200, "{kernel}");
        for port in ["eth1", "eth2"] {
            assert_eq!(link_details(port)["master"], "bond0");
        }
        let now = state();
        let bond0 = iface(&now, "bond0").expect("bond0 reported");
        assert_eq!(bond0["type"], "bond");
        let lag = &bond0["link-aggregation"];
        assert_eq!(lag["mode"], "active-backup", "{bond0}");
        assert_eq!(lag["options"]["miimon"], 100, "{bond0}");
        assert_eq!(lag["port"], json!(["eth1", "eth2"]), "{bond0}");
        assert_eq!(iface(&now, "eth1").expect("eth1")["controller"], "bond0");
    }

    #[test]
    #[ignore = "runs inside the real-kernel guest, driven by nmstate_tests_pass_on_a_real_kernel"]
    fn a_bond_and_its_ports_are_put_back_by_a_rollback() {
        node_with_nics(2);
        ip(&["addr", "add", "192.0.2.10/24", "dev", "eth1"]);
        ip(&["link", "set", "eth2", "mtu", "1400"]);
        settle();
        apply_then_roll_back(bond("802.3ad", &["eth1", "eth2"]), || {
            json!(ip(&["-br", "link"]))
        });
    }

    #[test]
    #[ignore = "runs inside the real-kernel guest, driven by nmstate_tests_pass_on_a_real_kernel"]
    fn a_bonds_mode_changes_with_its_ports_kept() {
        node_with_nics(2);
        apply_and_commit(bond("active-backup", &["eth1", "eth2"]));
        // The kernel changes a bond's mode only while it is down and has no ports.
        apply_and_commit(bond("balance-rr", &["eth1", "eth2"]));
        let kernel = link_details("bond0");
        assert_eq!(
            kernel["linkinfo"]["info_data"]["mode"], "balance-rr",
            "{kernel}"
        );
        assert!(
            kernel["flags"]
                .as_array()
                .is_some_and(|f| f.iter().any(|f| f == "UP")),
            "{kernel}"
        );
        for port in ["eth1", "eth2"] {
            assert_eq!(link_details(port)["master"], "bond0");
        }
    }

    #[test]
    #[ignore = "runs inside the real-kernel guest, driven by nmstate_tests_pass_on_a_real_kernel"]
    fn access_and_trunk_port_vlans_turn_on_filtering() {
        node_with_nics(2);
        apply_and_commit(port_vlan_bridge());
        assert_eq!(vlan_filtering("br0"), 1);
        assert_eq!(port_vlans("eth1"), vec![(100, true, true)]);
        assert_eq!(
            port_vlans("eth2"),
            vec![
                (100, true, true),
                (101, false, false),
                (200, false, false),
                (201, false, false),
                (202, false, false),
                (203, false, false)
            ]
        );
        let now = state();
        let ports = &iface(&now, "br0").expect("br0")["bridge"]["port"];
        assert_eq!(ports[0]["vlan"], json!({"mode": "access", "tag": 100}));
        assert_eq!(
            ports[1]["vlan"],
            json!({"mode": "trunk", "enable-native": true, "tag": 100,
                   "trunk-tags": [{"id": 101}, {"id-range": {"min": 200, "max": 203}}]})
        );
        // The same state again finds nothing to change.
        let (_dir, journal) = journal();
        let again = apply(&desired(port_vlan_bridge()), &journal).expect("again");
        assert!(!again.changed(), "{}", again.summary());
        again.commit().expect("commit");
    }

    #[test]
    #[ignore = "runs inside the real-kernel guest, driven by nmstate_tests_pass_on_a_real_kernel"]
    fn port_vlans_and_filtering_are_rolled_back() {
        node_with_nics(2);
        // br0 exists without filtering, eth1 its port in the default VLAN 1.
        ip(&["link", "add", "br0", "type", "bridge", "stp_state", "0"]);
        ip(&["link", "set", "eth1", "master", "br0"]);
        ip(&["link", "set", "br0", "up"]);
        // The bridge gets its link-local address once it has a carrier, a moment after it
        // is up: the node is "before" only then.
        wait_for_link_local("br0");
        settle();
        apply_then_roll_back(port_vlan_bridge(), || {
            json!([
                vlan_filtering("br0"),
                port_vlans("eth1"),
                ip(&["-br", "link"])
            ])
        });
        assert_eq!(vlan_filtering("br0"), 0);
        assert_eq!(port_vlans("eth1"), vec![(1, true, true)]);
    }

    #[test]
    #[ignore = "runs inside the real-kernel guest, driven by nmstate_tests_pass_on_a_real_kernel"]
    fn access_vlans_carry_traffic_only_within_their_vlan() {
        node_with_nics(3);
        apply_and_commit(json!({"interfaces": [{
            "name": "br0", "type": "linux-bridge", "state": "up",
            "bridge": {"options": {"stp": {"enabled": false}}, "port": [
                {"name": "eth1", "vlan": {"mode": "access", "tag": 100}},
                {"name": "eth2", "vlan": {"mode": "access", "tag": 100}},
                {"name": "eth3", "vlan": {"mode": "access", "tag": 200}}
            ]}
        }]}));
        // Each peer is a host behind its port, in a namespace of its own.
        let hosts: Vec<Host> = (1..=3).map(Host::behind).collect();
        assert!(hosts[0].pings(&hosts[1]), "VLAN 100 reaches VLAN 100");
        assert!(
            !hosts[0].pings(&hosts[2]),
            "VLAN 100 does not reach VLAN 200"
        );
    }

    /// `eth<i>-peer` moved into a namespace of its own with 10.0.0.<i>/24.
    struct Host {
        ns: cni_common::netns::NetNs,
        addr: String,
    }

    impl Host {
        fn behind(i: usize) -> Host {
            let ns = std::thread::spawn(|| {
                nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).expect("unshare");
                cni_common::netns::NetNs::current().expect("open the host's netns")
            })
            .join()
            .expect("host thread");
            let fd = format!(
                "/proc/{}/fd/{}",
                std::process::id(),
                std::os::fd::AsRawFd::as_raw_fd(&ns)
            );
            let peer = format!("eth{i}-peer");
            ip(&["link", "set", &peer, "netns", &fd]);
            let addr = format!("10.0.0.{i}");
            let host = Host { ns, addr };
            host.ip(&["link", "set", "lo", "up"]);
            host.ip(&["addr", "add", &format!("{}/24", host.addr), "dev", &peer]);
            host.ip(&["link", "set", &peer, "up"]);
            host
        }

        fn run(&self, cmd: &str, args: &[&str]) -> std::process::Output {
            let fd = format!(
                "/proc/{}/fd/{}",
                std::process::id(),
                std::os::fd::AsRawFd::as_raw_fd(&self.ns)
            );
            std::process::Command::new("nsenter")
                .arg(format!("--net={fd}"))
                .arg(cmd)
                .args(args)
                .output()
                .expect("run nsenter")
        }

        fn ip(&self, args: &[&str]) {
            let out = self.run("ip", args);
            assert!(out.status.success(), "ip {args:?}: {out:?}");
        }

        fn pings(&self, other: &Host) -> bool {
            self.run("ping", &["-c", "2", "-W", "1", "-i", "0.2", &other.addr])
                .status
                .success()
        }
    }

    #[test]
    #[ignore = "runs inside the real-kernel guest, driven by nmstate_tests_pass_on_a_real_kernel"]
    fn a_late_failure_rolls_back_vlans_bonds_and_port_vlans() {
        node_with_nics(4);
        settle();
        let before = state();
        // Everything is made, then the route fails.
        let late = desired(json!({
            "interfaces": [
                {"name": "bond0", "type": "bond", "link-aggregation": {
                    "mode": "active-backup", "port": ["eth1", "eth2"]}},
                {"name": "bond0.10", "type": "vlan", "vlan": {"base-iface": "bond0", "id": 10}},
                {"name": "br0", "type": "linux-bridge", "bridge": {"port": [
                    {"name": "eth3", "vlan": {"mode": "access", "tag": 30}},
                    {"name": "bond0.10"}]}}
            ],
            "routes": {"config": [
                {"destination": "198.51.100.0/24", "next-hop-address": "10.99.0.1",
                 "next-hop-interface": "eth4"}
            ]}
        }));
        assert_a_late_failure_is_rolled_back(&late, &before);
    }

    #[test]
    #[ignore = "runs inside the real-kernel guest, driven by nmstate_tests_pass_on_a_real_kernel"]
    fn a_journal_left_by_a_killed_apply_of_vlans_and_bonds_is_recovered() {
        node_with_nics(3);
        let before = state();
        let (_dir, journal) = journal();
        let v = json!({"interfaces": [
            {"name": "bond0", "type": "bond", "link-aggregation": {
                "mode": "balance-xor", "port": ["eth1", "eth2"]}},
            {"name": "eth3.7", "type": "vlan", "vlan": {"base-iface": "eth3", "id": 7}},
            {"name": "br0", "type": "linux-bridge", "bridge": {"port": [
                {"name": "eth3.7", "vlan": {"mode": "trunk", "trunk-tags": [{"id": 5}]}}]}}
        ]});
        // The process "dies" after the apply: neither committed nor rolled back.
        drop(apply(&desired(v), &journal).expect("apply"));
        assert!(iface(&state(), "bond0").is_some());
        let restored = recover(&journal)
            .expect("recover")
            .expect("there was a journal");
        assert!(restored.contains("bond0: deleted"), "{restored}");
        settle();
        assert_eq!(state(), before);
        assert!(!journal.exists());
    }
}
