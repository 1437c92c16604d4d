//! DEL, GC, STATUS and CHECK, and the rollback of a failed ADD.

use super::*;

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
