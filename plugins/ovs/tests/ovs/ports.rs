//! ADD: access and trunk ports, VLANs and traffic, MTU, MACs, the gratuitous ARP, and what the
//! config and ovs-cni's configuration file put on the port's rows.

use super::*;

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
