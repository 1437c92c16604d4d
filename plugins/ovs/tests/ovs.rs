//! The ovs plugin against a real ovsdb-server and ovs-vswitchd (userspace datapath) running in a
//! throwaway host namespace: ports, VLANs and traffic, DEL, GC, STATUS, rollback, bad configs.

mod common;

use std::time::{Duration, Instant};

use common::{
    error_code, error_msg, host_veth, static_ipam, stdout_json, OvsNode, PluginNode, Pod, BRIDGE,
    IFNAME, NETWORK,
};
use netns_tests::{expect_failure, expect_success, wait_for, TempDir};
use serde_json::{json, Value};

/// Pings until it works (the first packets may race ovs-vswitchd's datapath setup).
fn reaches(from: &Pod, ip: &str) -> bool {
    wait_for(Duration::from_secs(10), || from.ping_once(ip))
}

#[test]
fn access_ports_on_the_same_vlan_reach_each_other_and_not_another_vlan() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-access");
    let pods: Vec<(Pod, &str, i64)> = vec![
        (Pod::new("ovs-access-a"), "10.10.0.1", 100),
        (Pod::new("ovs-access-b"), "10.10.0.2", 100),
        (Pod::new("ovs-access-c"), "10.10.0.3", 200),
    ];
    for (pod, ip, vlan) in &pods {
        let mut conf = node.config(json!({"vlan": vlan, "ipam": static_ipam(&format!("{ip}/24"))}));
        conf["cniVersion"] = json!("1.0.0");
        node.add_ok(pod, &conf);
    }
    let (a, b, c) = (&pods[0].0, &pods[1].0, &pods[2].0);
    assert!(reaches(a, "10.10.0.2"), "tag 100 to tag 100 failed");
    assert!(reaches(b, "10.10.0.1"), "tag 100 to tag 100 failed");
    assert!(!a.ping_once("10.10.0.3"), "tag 100 reached tag 200");
    assert!(!c.ping_once("10.10.0.1"), "tag 200 reached tag 100");
    assert!(!c.ping_once("10.10.0.2"), "tag 200 reached tag 100");
}

#[test]
fn add_creates_an_access_port_tagged_with_its_attachment() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-port");
    let pod = Pod::new("ovs-port-pod");
    let conf = node.config(json!({"vlan": 100}));
    let out = node.call_env(
        "ADD",
        &pod.container_id,
        pod.ns.path_str(),
        &conf,
        &[("CNI_ARGS", "IgnoreUnknown=1;K8S_POD_UID=uid-1234")],
    );
    let result = stdout_json(&out);
    expect_success(&out, "ADD");

    let port = host_veth(&pod);
    assert_eq!(node.ports(), vec![port.clone()]);
    assert_eq!(node.port_column(&port, "vlan_mode"), "access");
    assert_eq!(node.port_column(&port, "tag"), "100");
    assert_eq!(node.port_column(&port, "trunks"), "[]");
    let id = |k: &str| node.port_external_id(&port, k);
    assert_eq!(id("cni-network").as_deref(), Some(NETWORK));
    assert_eq!(
        id("cni-attachment"),
        Some(format!("{}/{IFNAME}", pod.container_id))
    );
    assert_eq!(id("contPodUid").as_deref(), Some("uid-1234"));

    // The result lists the host veth, then the container interface with its sandbox.
    assert_eq!(result["interfaces"][0]["name"], json!(port));
    assert_eq!(result["interfaces"][1]["name"], IFNAME);
    assert_eq!(result["interfaces"][1]["sandbox"], pod.ns.path_str());
    let link = pod.link().expect("net1 in the pod");
    assert_eq!(result["interfaces"][1]["mac"], json!(link.mac()));
    assert!(link.is_up());
    assert!(node.host.link(&port).expect("host veth").is_up());
}

#[test]
fn trunk_config_becomes_a_trunk_port_and_vlan_is_then_ignored() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-trunk");
    let trunk = json!([{"id": 42}, {"minID": 10, "maxID": 12}, {"id": 11}]);
    for (tag, fields) in [
        ("ovs-trunk-only", json!({"trunk": trunk})),
        ("ovs-trunk-vlan", json!({"trunk": trunk, "vlan": 100})),
    ] {
        let pod = Pod::new(tag);
        node.add_ok(&pod, &node.config(fields));
        let port = host_veth(&pod);
        assert_eq!(node.port_column(&port, "vlan_mode"), "trunk", "{tag}");
        assert_eq!(
            node.port_column(&port, "trunks"),
            "[10, 11, 12, 42]",
            "{tag}"
        );
        assert_eq!(node.port_column(&port, "tag"), "[]", "{tag}");
    }
}

#[test]
fn a_port_without_vlan_or_trunk_is_a_trunk_of_every_vlan() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-novlan");
    let pod = Pod::new("ovs-novlan-pod");
    node.add_ok(&pod, &node.config(json!({})));
    let port = host_veth(&pod);
    assert_eq!(node.port_column(&port, "vlan_mode"), "trunk");
    assert_eq!(node.port_column(&port, "trunks"), "[]");
    assert_eq!(node.port_column(&port, "tag"), "[]");
}

/// Tagged frames cannot be sent or decoded in a namespace here (the host kernel has no 8021q),
/// so the trunk is observed from outside: an ARP broadcast from an access port on VLAN 10
/// reaches the trunk port that carries VLAN 10 and not the one that carries only VLAN 20.
#[test]
fn trunk_ports_receive_only_the_vlans_they_carry() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-trunkrx");
    let sender = Pod::quiet("ovs-trunkrx-send");
    let peer = Pod::quiet("ovs-trunkrx-peer");
    let trunk10 = Pod::quiet("ovs-trunkrx-t10");
    let trunk20 = Pod::quiet("ovs-trunkrx-t20");
    for (pod, ip) in [(&sender, "10.20.0.1/24"), (&peer, "10.20.0.2/24")] {
        let mut conf = node.config(json!({"vlan": 10, "ipam": static_ipam(ip)}));
        conf["cniVersion"] = json!("1.0.0");
        node.add_ok(pod, &conf);
    }
    node.add_ok(&trunk10, &node.config(json!({"trunk": [{"id": 10}]})));
    node.add_ok(&trunk20, &node.config(json!({"trunk": [{"id": 20}]})));
    // The host ends' own IPv6 chatter (router solicitations, MLD reports) goes straight to the
    // pods behind them, whatever OVS forwards: without it, what a trunk counts is what OVS sent.
    for pod in [&trunk10, &trunk20] {
        let key = format!("net.ipv6.conf.{}.disable_ipv6=1", host_veth(pod));
        node.host.netns().exec_ok("sysctl", &["-qw", &key]);
    }
    assert!(reaches(&sender, "10.20.0.2"), "access ports on VLAN 10");

    // Twenty broadcasts on VLAN 10. The VLAN 20 trunk may see a stray frame of its own (a
    // first flood before learning), but not the broadcasts: it must get far fewer than twenty.
    const BROADCASTS: u64 = 20;
    let (before10, before20) = (trunk10.rx_packets(), trunk20.rx_packets());
    sender.ns.exec(
        "ping",
        &["-b", "-c", "20", "-i", "0.01", "-W", "1", "10.20.0.255"],
    );
    assert!(
        wait_for(Duration::from_secs(5), || trunk10.rx_packets()
            >= before10 + BROADCASTS),
        "the VLAN 10 broadcasts did not reach the trunk carrying VLAN 10"
    );
    let leaked = trunk20.rx_packets() - before20;
    assert!(
        leaked < BROADCASTS / 4,
        "{leaked} frames reached the trunk carrying only VLAN 20 during VLAN 10 broadcasts"
    );
}

#[test]
fn mtu_is_set_on_both_ends_of_the_veth() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-mtu");
    let pod = Pod::new("ovs-mtu-pod");
    node.add_ok(&pod, &node.config(json!({"mtu": 1400, "vlan": 5})));
    assert_eq!(pod.link().expect("net1").mtu, Some(1400));
    assert_eq!(
        node.host.link(&host_veth(&pod)).expect("host veth").mtu,
        Some(1400)
    );
}

#[test]
fn del_removes_the_port_and_the_veth_and_succeeds_again() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-del");
    let pod = Pod::new("ovs-del-pod");
    let conf = node.config(json!({"vlan": 100}));
    node.add_ok(&pod, &conf);
    expect_success(&node.call("DEL", &pod, &conf), "DEL");
    assert!(node.ports().is_empty(), "port left: {:?}", node.ports());
    assert!(pod.link().is_none(), "net1 left in the pod");
    node.host.assert_no_new_veths("after DEL");
    expect_success(&node.call("DEL", &pod, &conf), "second DEL");
}

#[test]
fn del_succeeds_when_the_netns_is_gone_and_removes_the_port() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-delns");
    let pod = Pod::new("ovs-delns-pod");
    let conf = node.config(json!({"vlan": 100}));
    node.add_ok(&pod, &conf);
    let Pod { ns, container_id } = pod;
    let path = ns.path_str().to_string();
    ns.delete().expect("netns deleted");
    let out = node.call_env("DEL", &container_id, &path, &conf, &[]);
    expect_success(&out, "DEL after the netns was deleted");
    assert!(node.ports().is_empty());
    expect_success(
        &node.call_env("DEL", &container_id, "", &conf, &[]),
        "DEL without a netns",
    );
    node.host.assert_no_new_veths("after DEL");
}

#[test]
fn del_succeeds_when_the_port_was_already_removed_from_ovsdb() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-delport");
    let pod = Pod::new("ovs-delport-pod");
    let conf = node.config(json!({"vlan": 100}));
    node.add_ok(&pod, &conf);
    node.vsctl(&["del-port", BRIDGE, &host_veth(&pod)]);
    expect_success(&node.call("DEL", &pod, &conf), "DEL");
    assert!(pod.link().is_none());
    node.host.assert_no_new_veths("after DEL");
}

#[test]
fn del_works_after_ovsdb_restarts_between_add_and_del() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-restart");
    let pod = Pod::new("ovs-restart-pod");
    let conf = node.config(json!({"vlan": 100}));
    node.add_ok(&pod, &conf);
    node.restart_ovsdb();
    expect_success(&node.call("DEL", &pod, &conf), "DEL after the restart");
    assert!(node.ports().is_empty());
    node.host.assert_no_new_veths("after DEL");
}

#[test]
fn gc_removes_only_this_networks_ports_not_in_the_valid_list() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-gc");
    let keep = Pod::new("ovs-gc-keep");
    let stale = Pod::new("ovs-gc-stale");
    let other = Pod::new("ovs-gc-other");
    let conf = node.config(json!({"vlan": 100}));
    node.add_ok(&keep, &conf);
    node.add_ok(&stale, &conf);
    let mut other_conf = conf.clone();
    other_conf["name"] = json!("othernet");
    node.add_ok(&other, &other_conf);
    // A port someone else made on the same bridge.
    node.vsctl(&[
        "add-port",
        BRIDGE,
        "foreign0",
        "--",
        "set",
        "Interface",
        "foreign0",
        "type=internal",
    ]);

    let mut gc = conf.clone();
    gc["cni.dev/valid-attachments"] = json!([{"containerID": keep.container_id, "ifname": IFNAME}]);
    let out = node.call_env("GC", "", "", &gc, &[]);
    expect_success(&out, "GC");
    assert!(out.stdout.is_empty());

    let mut ports = node.ports();
    ports.sort();
    let mut expected = vec![host_veth(&keep), host_veth(&other), "foreign0".to_string()];
    expected.sort();
    assert_eq!(ports, expected);
    assert!(
        node.host.link(&host_veth(&stale)).is_none(),
        "stale veth left"
    );
    assert!(stale.link().is_none());
    assert!(keep.link().is_some());
}

/// What an ADD killed between its OVSDB transaction and its reply leaves: a veth and a port
/// tagged as ours, for an attachment the runtime no longer has.
#[test]
fn gc_removes_a_port_left_by_a_killed_add() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-gckill");
    let pod = Pod::new("ovs-gckill-pod");
    let name = host_veth(&pod);
    node.add_veth(&name, &pod);
    let attachment = format!(
        "external_ids:cni-attachment=\"{}/{IFNAME}\"",
        pod.container_id
    );
    node.vsctl(&[
        "add-port",
        BRIDGE,
        &name,
        "--",
        "set",
        "Port",
        &name,
        "tag=100",
        // An earlier version's tags: found all the same.
        &format!("external_ids:owner={}", ovs::attachment::LEGACY_OWNER),
        &format!("external_ids:cni-network={NETWORK}"),
        &attachment,
    ]);

    let mut gc = node.config(json!({}));
    gc["cni.dev/valid-attachments"] = json!([]);
    expect_success(&node.call_env("GC", "", "", &gc, &[]), "GC");
    assert!(node.ports().is_empty(), "left: {:?}", node.ports());
    node.host.assert_no_new_veths("after GC");
    assert!(pod.link().is_none());
}

#[test]
fn gc_and_status_are_forwarded_to_ipam() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-ipamfwd");
    let bin = TempDir::new("ovs-ipamfwd-bin");
    let log = bin.join("calls");
    // A 1.1.0 IPAM plugin of the test's own that records the verbs it gets.
    let script = format!(
        "#!/bin/sh\ncat >/dev/null\n\
         if [ \"$CNI_COMMAND\" = VERSION ]; then\n\
         echo '{{\"cniVersion\":\"1.1.0\",\"supportedVersions\":[\"1.0.0\",\"1.1.0\"]}}'; exit 0\n\
         fi\n\
         echo \"$CNI_COMMAND\" >> {}\n",
        log.display()
    );
    let ipam = bin.join("recorder");
    std::fs::write(&ipam, script).expect("write recorder");
    std::process::Command::new("chmod")
        .args(["+x", &ipam.display().to_string()])
        .status()
        .expect("chmod");
    let conf = node.config(json!({"ipam": {"type": "recorder"}}));
    let path = format!(
        "{}:{}",
        common::plugin_dir().display(),
        bin.path().display()
    );
    for verb in ["GC", "STATUS"] {
        let out = netns_tests::run_plugin_in(
            &node.host,
            common::plugin_dir(),
            "ovs",
            &[
                ("CNI_COMMAND", verb),
                ("CNI_PATH", &path),
                (ovs::cache::ROOT_ENV, &node.cache_root()),
            ],
            &conf.to_string(),
        );
        expect_success(&out, verb);
    }
    assert_eq!(
        std::fs::read_to_string(&log).expect("recorder ran"),
        "GC\nSTATUS\n"
    );
}

#[test]
fn status_is_ready_with_ovsdb_up_and_50_when_it_is_down() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-status");
    let conf = node.config(json!({}));
    expect_success(&node.call_env("STATUS", "", "", &conf, &[]), "STATUS");
    let mut missing_bridge = conf.clone();
    missing_bridge["bridge"] = json!("nosuchbr");
    let out = node.call_env("STATUS", "", "", &missing_bridge, &[]);
    assert_eq!(error_code(&out), 50, "missing bridge");
    node.stop_ovsdb();
    let out = node.call_env("STATUS", "", "", &conf, &[]);
    assert_eq!(error_code(&out), 50);
    assert!(error_msg(&out).contains("db.sock"), "{}", error_msg(&out));
}

#[test]
fn add_with_ovsdb_down_fails_fast_and_leaves_nothing() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-down");
    let pod = Pod::new("ovs-down-pod");
    let leases = TempDir::new("ovs-down-leases");
    let mut conf = node.config(json!({
        "vlan": 100,
        "ipam": {"type": "host-local", "subnet": "10.30.0.0/24", "dataDir": leases.path()}
    }));
    conf["cniVersion"] = json!("1.0.0");
    node.stop_ovsdb();
    let start = Instant::now();
    let out = node.call("ADD", &pod, &conf);
    let took = start.elapsed();
    assert_eq!(error_code(&out), 11, "{}", error_msg(&out));
    assert!(error_msg(&out).contains("OVSDB"), "{}", error_msg(&out));
    assert!(took < Duration::from_secs(2), "ADD took {took:?}");
    assert!(pod.link().is_none());
    node.host.assert_no_new_veths("after the failed ADD");
    assert!(netns_tests::host_local_leases(leases.path(), NETWORK).is_empty());
}

#[test]
fn a_failure_after_the_port_is_made_rolls_back_port_veth_and_lease() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-rollback");
    let pod = Pod::new("ovs-rollback-pod");
    let leases = TempDir::new("ovs-rollback-leases");
    // The route's gateway is not on any connected network: the kernel refuses it after the
    // lease, the veth and the port exist.
    let mut conf = node.config(json!({
        "vlan": 100,
        "ipam": {
            "type": "host-local", "subnet": "10.31.0.0/24", "dataDir": leases.path(),
            "routes": [{"dst": "10.99.0.0/16", "gw": "192.168.254.1"}]
        }
    }));
    conf["cniVersion"] = json!("1.0.0");
    let out = node.call("ADD", &pod, &conf);
    expect_failure(&out, "ADD with an unreachable route");
    assert!(error_msg(&out).contains("route"), "{}", error_msg(&out));
    assert!(node.ports().is_empty(), "port left: {:?}", node.ports());
    assert!(pod.link().is_none(), "net1 left");
    node.host.assert_no_new_veths("after the failed ADD");
    assert!(
        netns_tests::host_local_leases(leases.path(), NETWORK).is_empty(),
        "lease left"
    );
}

#[test]
fn add_gives_up_after_the_link_state_checks_and_rolls_back() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-linkwait");
    let pod = Pod::new("ovs-linkwait-pod");
    let leases = TempDir::new("ovs-linkwait-leases");
    let mut conf = node.config(json!({
        "vlan": 100,
        "link_state_check_retries": 3,
        "link_state_check_interval": 100,
        "ipam": {"type": "host-local", "subnet": "10.33.0.0/24", "dataDir": leases.path()}
    }));
    conf["cniVersion"] = json!("1.0.0");
    node.stop_vswitchd();
    let start = Instant::now();
    let out = node.call("ADD", &pod, &conf);
    let took = start.elapsed();
    expect_failure(&out, "ADD without ovs-vswitchd");
    assert!(
        error_msg(&out).contains("within 300 ms"),
        "{}",
        error_msg(&out)
    );
    assert!(took < Duration::from_secs(3), "ADD took {took:?}");
    assert!(node.ports().is_empty(), "port left: {:?}", node.ports());
    assert!(pod.link().is_none());
    node.host.assert_no_new_veths("after the failed ADD");
    assert!(netns_tests::host_local_leases(leases.path(), NETWORK).is_empty());
}

#[test]
fn add_to_a_missing_bridge_fails_and_leaves_nothing() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-nobr");
    let pod = Pod::new("ovs-nobr-pod");
    let leases = TempDir::new("ovs-nobr-leases");
    let mut conf = node.config(json!({
        "bridge": "nosuchbr",
        "ipam": {"type": "host-local", "subnet": "10.32.0.0/24", "dataDir": leases.path()}
    }));
    conf["cniVersion"] = json!("1.0.0");
    let out = node.call("ADD", &pod, &conf);
    expect_failure(&out, "ADD to a missing bridge");
    assert!(
        error_msg(&out).contains("bridge \"nosuchbr\" does not exist"),
        "{}",
        error_msg(&out)
    );
    assert!(pod.link().is_none());
    node.host.assert_no_new_veths("after the failed ADD");
    assert!(netns_tests::host_local_leases(leases.path(), NETWORK).is_empty());
    assert!(node.ports().is_empty());
}

#[test]
fn invalid_configs_are_refused_with_code_7_naming_the_field() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-invalid");
    let pod = Pod::new("ovs-invalid-pod");
    let cases: Vec<(Value, &str)> = vec![
        (json!({"vlan": 4095}), "vlan"),
        (json!({"vlan": -1}), "vlan"),
        (json!({"trunk": [{"minID": 20, "maxID": 10}]}), "trunk[0]"),
        (json!({"trunk": [{"minID": 20}]}), "trunk[0]"),
        (json!({"trunk": [{"id": 1}, {"id": 5000}]}), "trunk[1].id"),
        (json!({"socket_file": "http://localhost/db"}), "socket_file"),
        (json!({"socket_file": "db.sock"}), "socket_file"),
        (json!({"mtu": 20}), "mtu"),
        (json!({"ofport_request": 70000}), "ofport_request"),
        (json!({"bridge": ""}), "bridge"),
        (
            json!({"link_state_check_retries": -3}),
            "link_state_check_retries",
        ),
        (
            json!({"runtimeConfig": {"mac": "01:00:5e:00:00:01"}}),
            "mac",
        ),
    ];
    for (fields, field) in cases {
        let out = node.call("ADD", &pod, &node.config(fields.clone()));
        assert_eq!(error_code(&out), 7, "{fields}");
        assert!(
            error_msg(&out).starts_with(field),
            "{fields}: message {:?} does not start with {field}",
            error_msg(&out)
        );
    }
    assert!(pod.link().is_none());
    assert!(node.ports().is_empty());
    node.host.assert_no_new_veths("after refused ADDs");
}

#[test]
fn device_id_hardware_offload_is_refused_with_code_2() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-devid");
    let pod = Pod::new("ovs-devid-pod");
    for fields in [
        json!({"deviceID": "0000:03:00.2"}),
        json!({"runtimeConfig": {"deviceID": "0000:03:00.2"}}),
    ] {
        let out = node.call("ADD", &pod, &node.config(fields));
        assert_eq!(error_code(&out), 2);
        assert!(
            error_msg(&out).starts_with("deviceID"),
            "{}",
            error_msg(&out)
        );
    }
    assert!(node.ports().is_empty());
    node.host.assert_no_new_veths("after refused ADDs");
}

#[test]
fn check_passes_after_add_and_fails_when_the_tag_drifts() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-check");
    let pod = Pod::new("ovs-check-pod");
    let mut conf =
        node.config(json!({"vlan": 100, "mtu": 1400, "ipam": static_ipam("10.40.0.5/24")}));
    conf["cniVersion"] = json!("1.0.0");
    let result = node.add_ok(&pod, &conf);
    let mut check = conf.clone();
    check["prevResult"] = result;
    expect_success(&node.call("CHECK", &pod, &check), "CHECK after ADD");

    node.vsctl(&["set", "Port", &host_veth(&pod), "tag=300"]);
    let out = node.call("CHECK", &pod, &check);
    expect_failure(&out, "CHECK after the tag changed");
    assert!(error_msg(&out).contains("tag 300"), "{}", error_msg(&out));
}

#[test]
fn check_fails_when_the_port_is_gone_from_ovsdb() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-checkport");
    let pod = Pod::new("ovs-checkport-pod");
    let conf = node.config(json!({"vlan": 100}));
    let mut check = conf.clone();
    check["prevResult"] = node.add_ok(&pod, &conf);
    node.vsctl(&["del-port", BRIDGE, &host_veth(&pod)]);
    let out = node.call("CHECK", &pod, &check);
    expect_failure(&out, "CHECK without the port");
    assert!(error_msg(&out).contains("no port"), "{}", error_msg(&out));
}

#[test]
fn mac_precedence_is_runtime_config_over_cni_args_over_args_cni() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-mac");
    let env = [("CNI_ARGS", "IgnoreUnknown=1;MAC=02:00:00:00:00:02")];
    let mac_after_add = |fields: Value| {
        let pod = Pod::new("ovs-mac-pod");
        let conf = node.config(fields);
        let out = node.call_env("ADD", &pod.container_id, pod.ns.path_str(), &conf, &env);
        expect_success(&out, "ADD");
        pod.link().and_then(|l| l.mac()).unwrap_or_default()
    };
    let args = json!({"cni": {"mac": "02:00:00:00:00:01"}});
    assert_eq!(mac_after_add(json!({"args": args})), "02:00:00:00:00:02");
    assert_eq!(
        mac_after_add(json!({"args": args, "runtimeConfig": {"mac": "02:00:00:00:00:03"}})),
        "02:00:00:00:00:03"
    );
    let pod = Pod::new("ovs-mac-argscni");
    node.add_ok(&pod, &node.config(json!({"args": args})));
    assert_eq!(
        pod.link().and_then(|l| l.mac()).as_deref(),
        Some("02:00:00:00:00:01")
    );
}

#[test]
fn with_ipam_and_no_requested_mac_the_mac_comes_from_the_ipv4_address() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-ipmac");
    let pod = Pod::new("ovs-ipmac-pod");
    let mut conf = node.config(json!({"ipam": static_ipam("10.50.1.2/24")}));
    conf["cniVersion"] = json!("1.0.0");
    let result = node.add_ok(&pod, &conf);
    assert_eq!(
        pod.link().and_then(|l| l.mac()).as_deref(),
        Some("0a:58:0a:32:01:02")
    );
    assert_eq!(result["interfaces"][1]["mac"], "0a:58:0a:32:01:02");
    assert_eq!(result["ips"][0]["interface"], 1);
    assert_eq!(pod.ns.addresses(IFNAME), vec!["10.50.1.2/24".to_string()]);
}

/// ovs-cni makes the MAC from the first address whatever its family: for IPv6, `0a:58` and the
/// first four bytes of SHA-256 of the address's text.
#[test]
fn with_ipam_and_no_requested_mac_the_mac_comes_from_an_ipv6_address_as_ovs_cni_makes_it() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-ip6mac");
    let pod = Pod::new("ovs-ip6mac-pod");
    let mut conf = node.config(json!({"ipam": static_ipam("fd00::5/64")}));
    conf["cniVersion"] = json!("1.0.0");
    let result = node.add_ok(&pod, &conf);
    // sha256("fd00::5") starts 67 cc 13 6b.
    assert_eq!(
        pod.link().and_then(|l| l.mac()).as_deref(),
        Some("0a:58:67:cc:13:6b")
    );
    assert_eq!(result["interfaces"][1]["mac"], "0a:58:67:cc:13:6b");
}

#[test]
fn add_announces_its_ipv4_address_with_a_gratuitous_arp() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-garp");
    let listener = Pod::quiet("ovs-garp-listen");
    // Learn neighbours from unsolicited ARP, so the announcement alone creates an entry.
    for key in [
        "net.ipv4.conf.all.arp_accept=1",
        "net.ipv4.conf.default.arp_accept=1",
    ] {
        listener.ns.exec_ok("sysctl", &["-qw", key]);
    }
    let mut conf = node.config(json!({"vlan": 9, "ipam": static_ipam("10.60.0.2/24")}));
    conf["cniVersion"] = json!("1.0.0");
    node.add_ok(&listener, &conf);
    let announcer = Pod::quiet("ovs-garp-announce");
    conf["ipam"] = static_ipam("10.60.0.1/24");
    node.add_ok(&announcer, &conf);
    let mac = announcer
        .link()
        .and_then(|l| l.mac())
        .expect("announcer mac");
    let learned = || {
        listener
            .ns
            .exec_ok("ip", &["neigh", "show", "10.60.0.1", "dev", IFNAME])
            .contains(&mac)
    };
    assert!(
        wait_for(Duration::from_secs(3), learned),
        "the listener did not learn 10.60.0.1 at {mac} from the announcement"
    );
}

#[test]
fn socket_file_takes_a_bare_path_and_a_tcp_address() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-socket");
    let bare = node.path("db.sock");
    for socket in [bare.as_str(), "tcp:127.0.0.1:6640"] {
        let pod = Pod::new("ovs-socket-pod");
        let conf = node.config(json!({"socket_file": socket, "vlan": 7}));
        node.add_ok(&pod, &conf);
        assert_eq!(node.port_column(&host_veth(&pod), "tag"), "7", "{socket}");
        expect_success(&node.call("DEL", &pod, &conf), "DEL");
    }
    assert!(node.ports().is_empty());
}

#[test]
fn configuration_path_fills_what_the_network_config_leaves_unset() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-flat");
    let dir = TempDir::new("ovs-flat-conf");
    let flat = dir.write_json(
        "ovs.conf",
        &json!({"bridge": BRIDGE, "vlan": 33, "socket_file": node.socket(), "mtu": 1300}),
    );
    let mut conf = json!({
        "cniVersion": "1.1.0", "name": NETWORK, "type": "ovs",
        "configuration_path": flat, "mtu": 1450
    });
    let pod = Pod::new("ovs-flat-pod");
    node.add_ok(&pod, &conf);
    assert_eq!(node.port_column(&host_veth(&pod), "tag"), "33");
    assert_eq!(
        pod.link().expect("net1").mtu,
        Some(1450),
        "the network config wins"
    );
    expect_success(&node.call("DEL", &pod, &conf), "DEL");

    conf["vlan"] = json!(44);
    let pod = Pod::new("ovs-flat-pod2");
    node.add_ok(&pod, &conf);
    assert_eq!(node.port_column(&host_veth(&pod), "tag"), "44");
}

#[test]
fn ovn_port_ofport_request_and_interface_type_land_on_the_interface_row() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-ovn");
    let pod = Pod::new("ovs-ovn-pod");
    let conf = node.config(json!({"ofport_request": 77, "interface_type": "system"}));
    let out = node.call_env(
        "ADD",
        &pod.container_id,
        pod.ns.path_str(),
        &conf,
        &[("CNI_ARGS", "IgnoreUnknown=1;OvnPort=lsp-1")],
    );
    expect_success(&out, "ADD");
    let iface = host_veth(&pod);
    assert_eq!(
        node.vsctl(&["get", "Interface", &iface, "external_ids:iface-id"]),
        "lsp-1"
    );
    assert_eq!(
        node.vsctl(&["get", "Interface", &iface, "ofport_request"]),
        "77"
    );
    assert_eq!(node.vsctl(&["get", "Interface", &iface, "type"]), "system");
}

#[test]
fn l2_results_need_0_3_0_so_older_versions_are_refused_before_anything_is_made() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("ovs-legacy");
    let pod = Pod::new("ovs-legacy-pod");
    let mut conf = node.config(json!({"vlan": 1}));
    conf["cniVersion"] = json!("0.2.0");
    let out = node.call("ADD", &pod, &conf);
    assert_eq!(error_code(&out), 1);
    assert!(node.ports().is_empty());
    node.host.assert_no_new_veths("after the refused ADD");
}
