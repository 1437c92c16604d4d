//! ADD: what an attachment gets (links, addresses, routes, masquerade, spoof check, hairpin,
//! isolation, MTU, MAC) and that its pods reach each other.

use super::*;

#[test]
fn l2_attachments_on_one_bridge_ping_each_other() {
    netns_tests::skip_unless_root!();
    let node = Node::new("br-l2");
    let conf = config("brl2", json!({"ipam": {}}));
    let (a, b) = (node.pod("a"), node.pod("b"));
    node.add(&a, &conf);
    node.add(&b, &conf);
    set_ip(&a, "10.70.0.1/24");
    set_ip(&b, "10.70.0.2/24");
    assert!(pings(&a, "10.70.0.2".parse().expect("ip")));
    let br = node.host_link("brl2").expect("the bridge was created");
    assert_eq!(br.kind(), Some("bridge"));
    assert_eq!(node.host.ports_of("brl2").len(), 2);
}

#[test]
fn the_result_lists_bridge_host_veth_and_container_interface() {
    netns_tests::skip_unless_root!();
    let node = Node::new("br-result");
    let conf = config("brres", json!({"ipam": {}}));
    let a = node.pod("a");
    let result = node.add(&a, &conf);
    let ifaces = result["interfaces"].as_array().expect("interfaces");
    assert_eq!(ifaces.len(), 3, "{result}");
    assert_eq!(ifaces[0]["name"], "brres");
    let host = node.host_link(&host_veth(&result)).expect("host veth");
    assert_eq!(host.master.as_deref(), Some("brres"));
    assert_eq!(ifaces[1]["mac"].as_str(), host.mac().as_deref());
    assert_eq!(ifaces[2]["name"], IFNAME);
    assert_eq!(ifaces[2]["sandbox"], a.ns.path_str());
    let net1 = a.ns.link(IFNAME).expect("net1");
    assert_eq!(ifaces[2]["mac"].as_str(), net1.mac().as_deref());
    assert!(net1.is_up());
    assert_eq!(
        ifaces[0]["mac"].as_str(),
        node.host_link("brres").and_then(|l| l.mac()).as_deref()
    );
}

#[test]
fn host_local_attachments_get_addresses_and_ping() {
    netns_tests::skip_unless_root!();
    let node = Node::new("br-ipam");
    let conf = config("brip", json!({"ipam": node.host_local("10.71.0.0/24")}));
    let (a, b) = (node.pod("a"), node.pod("b"));
    let ra = node.add(&a, &conf);
    let rb = node.add(&b, &conf);
    assert_eq!(ra["ips"][0]["interface"], 2);
    assert_eq!(
        a.ns.addresses(IFNAME),
        vec![ra["ips"][0]["address"].as_str().expect("addr")]
    );
    assert!(pings(&a, result_ip(&rb)));
}

#[test]
fn is_default_gateway_puts_the_gateway_on_the_bridge_with_a_default_route() {
    netns_tests::skip_unless_root!();
    let node = Node::new("br-gw");
    let conf = config(
        "brgw",
        json!({"isDefaultGateway": true, "ipam": node.host_local("10.72.0.0/24")}),
    );
    let a = node.pod("a");
    let result = node.add(&a, &conf);
    assert_eq!(result["ips"][0]["gateway"], "10.72.0.1");
    assert_eq!(node.host.netns().addresses("brgw"), vec!["10.72.0.1/24"]);
    let routes = a.ns.exec_ok("ip", &["route", "show", "default"]);
    assert!(
        routes.contains("default via 10.72.0.1 dev net1"),
        "{routes}"
    );
    assert!(pings(&a, "10.72.0.1".parse().expect("ip")));
    let forward = node
        .host
        .netns()
        .exec_ok("sysctl", &["-n", "net.ipv4.ip_forward"]);
    assert_eq!(forward.trim(), "1");
}

#[test]
fn a_bridge_address_that_differs_is_refused_unless_force_address() {
    netns_tests::skip_unless_root!();
    let node = Node::new("br-force");
    let ns = node.host.netns();
    ns.exec_ok("ip", &["link", "add", "brf", "type", "bridge"]);
    ns.exec_ok("ip", &["addr", "add", "10.73.9.9/24", "dev", "brf"]);
    let a = node.pod("a");
    let conf = config(
        "brf",
        json!({"isGateway": true, "ipam": node.host_local("10.73.0.0/24")}),
    );
    let out = node.call("ADD", &a, &conf, "");
    assert_eq!(error_code(&out), 100);
    assert!(String::from_utf8_lossy(&out.stdout).contains("forceAddress"));
    node.host.assert_no_new_veths("refused ADD");
    assert!(node.leases().is_empty(), "lease kept: {:?}", node.leases());

    let mut forced = conf.clone();
    forced["forceAddress"] = json!(true);
    node.add(&a, &forced);
    assert_eq!(ns.addresses("brf"), vec!["10.73.0.1/24"]);
}

#[test]
fn ip_masq_lets_the_container_reach_beyond_its_subnet() {
    netns_tests::skip_unless_root!();
    let node = Node::new("br-masq");
    // An "outside" namespace behind the sandbox, with no route back to the containers.
    let outside = node.pod("outside");
    let host = node.host.netns();
    host.exec_ok(
        "ip",
        &[
            "link",
            "add",
            "up0",
            "type",
            "veth",
            "peer",
            "name",
            "down0",
            "netns",
            outside.ns.name(),
        ],
    );
    host.exec_ok("ip", &["addr", "add", "192.0.2.1/24", "dev", "up0"]);
    host.exec_ok("ip", &["link", "set", "up0", "up"]);
    outside
        .ns
        .exec_ok("ip", &["addr", "add", "192.0.2.2/24", "dev", "down0"]);
    outside.ns.exec_ok("ip", &["link", "set", "down0", "up"]);

    let masq = config(
        "brmq",
        json!({"isDefaultGateway": true, "ipMasq": true, "ipam": node.host_local("10.74.0.0/24")}),
    );
    let plain = config(
        "brpl",
        json!({"isDefaultGateway": true, "ipam": node.host_local("10.75.0.0/24")}),
    );
    let (a, b) = (node.pod("a"), node.pod("b"));
    node.add(&a, &masq);
    node.add(&b, &plain);
    let target = "192.0.2.2".parse().expect("ip");
    assert!(
        pings(&a, target),
        "masqueraded container cannot reach outside"
    );
    assert!(
        !pings(&b, target),
        "without ipMasq the reply has no way back"
    );

    node.del(&a, &masq);
    assert!(!node.ruleset().contains("att-"), "{}", node.ruleset());
}

#[test]
fn macspoofchk_drops_frames_from_another_source_mac() {
    netns_tests::skip_unless_root!();
    let node = Node::new("br-spoof");
    let guarded = config("brsp", json!({"macspoofchk": true, "ipam": {}}));
    let (a, b) = (node.pod("a"), node.pod("b"));
    node.add(&a, &guarded);
    node.add(&b, &guarded);
    set_ip(&a, "10.76.0.1/24");
    set_ip(&b, "10.76.0.2/24");
    let peer = "10.76.0.2".parse().expect("ip");
    assert!(pings(&a, peer));

    let own = a.ns.link(IFNAME).and_then(|l| l.mac()).expect("mac");
    a.ns.exec_ok(
        "ip",
        &["link", "set", IFNAME, "address", "02:00:00:00:be:ef"],
    );
    a.ns.exec_ok("ip", &["neigh", "flush", "dev", IFNAME]);
    b.ns.exec_ok("ip", &["neigh", "flush", "dev", IFNAME]);
    assert!(!pings(&a, peer), "a spoofed source MAC got through");

    a.ns.exec_ok("ip", &["link", "set", IFNAME, "address", &own]);
    assert!(pings(&a, peer), "the real MAC is blocked after the spoof");
}

#[test]
fn hairpin_mode_is_set_on_the_port() {
    netns_tests::skip_unless_root!();
    let node = Node::new("br-hair");
    let a = node.pod("a");
    let result = node.add(
        &a,
        &config("brhp", json!({"hairpinMode": true, "ipam": {}})),
    );
    let port = node.host_link(&host_veth(&result)).expect("port");
    let data = port
        .linkinfo
        .and_then(|l| l.info_slave_data)
        .expect("bridge port data");
    assert_eq!(data["hairpin"], true, "{data}");
}

#[test]
fn isolated_ports_reach_only_non_isolated_ones() {
    netns_tests::skip_unless_root!();
    let node = Node::new("br-iso");
    let isolated = config("briso", json!({"portIsolation": true, "ipam": {}}));
    let open = config("briso", json!({"ipam": {}}));
    let (a, b, c) = (node.pod("a"), node.pod("b"), node.pod("c"));
    node.add(&a, &isolated);
    node.add(&b, &isolated);
    node.add(&c, &open);
    set_ip(&a, "10.77.0.1/24");
    set_ip(&b, "10.77.0.2/24");
    set_ip(&c, "10.77.0.3/24");
    assert!(
        !pings(&a, "10.77.0.2".parse().expect("ip")),
        "two isolated ports talk"
    );
    assert!(pings(&a, "10.77.0.3".parse().expect("ip")));
    assert!(pings(&b, "10.77.0.3".parse().expect("ip")));
}

#[test]
fn mtu_is_applied_to_bridge_and_both_veth_ends() {
    netns_tests::skip_unless_root!();
    let node = Node::new("br-mtu");
    let a = node.pod("a");
    let result = node.add(&a, &config("brmtu", json!({"mtu": 1400, "ipam": {}})));
    assert_eq!(a.ns.link(IFNAME).and_then(|l| l.mtu), Some(1400));
    assert_eq!(
        node.host_link(&host_veth(&result)).and_then(|l| l.mtu),
        Some(1400)
    );
    assert_eq!(node.host_link("brmtu").and_then(|l| l.mtu), Some(1400));
}

#[test]
fn disable_container_interface_leaves_it_down() {
    netns_tests::skip_unless_root!();
    let node = Node::new("br-down");
    let a = node.pod("a");
    node.add(
        &a,
        &config(
            "brdn",
            json!({"disableContainerInterface": true, "ipam": {}}),
        ),
    );
    assert!(!a.ns.link(IFNAME).expect("net1").is_up());
}

#[test]
fn mac_precedence_is_cni_args_then_args_then_runtime_config() {
    netns_tests::skip_unless_root!();
    let node = Node::new("br-mac");
    let base = config("brmac", json!({"ipam": {}}));
    let cases = [
        ("MAC=02:00:00:00:00:01", json!({}), "02:00:00:00:00:01"),
        (
            "MAC=02:00:00:00:00:01",
            json!({"args": {"cni": {"mac": "02:00:00:00:00:02"}}}),
            "02:00:00:00:00:02",
        ),
        (
            "MAC=02:00:00:00:00:01",
            json!({"args": {"cni": {"mac": "02:00:00:00:00:02"}},
                   "runtimeConfig": {"mac": "02:00:00:00:00:03"}}),
            "02:00:00:00:00:03",
        ),
    ];
    for (i, (args, extra, want)) in cases.into_iter().enumerate() {
        let pod = node.pod(&format!("p{i}"));
        let mut conf = base.clone();
        for (k, v) in extra.as_object().expect("object") {
            conf[k] = v.clone();
        }
        let out = node.call("ADD", &pod, &conf, args);
        let result = parse_ok(&out, "ADD");
        assert_eq!(result["interfaces"][2]["mac"], want);
        assert_eq!(
            pod.ns.link(IFNAME).and_then(|l| l.mac()).as_deref(),
            Some(want)
        );
    }
}

#[test]
fn a_multus_call_without_cni_version_and_with_k8s_args_works() {
    netns_tests::skip_unless_root!();
    let node = Node::new("br-multus");
    let pod = node.pod("a");
    // What Multus hands over from a NetworkAttachmentDefinition: no cniVersion.
    let conf = json!({
        "name": "multus-net", "type": "bridge", "bridge": "brmu",
        "ipam": node.host_local("10.78.0.0/24"),
        "runtimeConfig": {"mac": "02:aa:bb:cc:dd:01"}
    });
    let args = format!(
        "IgnoreUnknown=true;K8S_POD_NAMESPACE=default;K8S_POD_NAME=vm-a;K8S_POD_INFRA_CONTAINER_ID={};K8S_POD_UID=8e6b3a2c-1f1e-4a51-9e40-5f0f6c1d2e3f",
        pod.id
    );
    let out = node.call("ADD", &pod, &conf, &args);
    let result = parse_ok(&out, "ADD");
    // No cniVersion means 0.1.0: the legacy result layout.
    assert!(
        result["ip4"]["ip"]
            .as_str()
            .is_some_and(|ip| ip.starts_with("10.78.0.")),
        "{result}"
    );
    assert_eq!(
        pod.ns.link(IFNAME).and_then(|l| l.mac()).as_deref(),
        Some("02:aa:bb:cc:dd:01")
    );
    let out = node.call("DEL", &pod, &conf, &args);
    assert!(out.status.success());
    node.host.assert_no_new_veths("after DEL");
    assert!(node.leases().is_empty());
}

#[test]
fn sixty_four_concurrent_adds_on_a_new_bridge_all_succeed_and_dels_leave_nothing() {
    netns_tests::skip_unless_root!();
    let node = Node::new("br-race");
    let conf = config("brrace", json!({"ipam": {}}));
    let pods: Vec<Pod> = (0..64).map(|i| node.pod(&format!("p{i}"))).collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = pods
            .iter()
            .map(|pod| s.spawn(|| node.call("ADD", pod, &conf, "")))
            .collect();
        for h in handles {
            let out = h.join().expect("thread");
            parse_ok(&out, "concurrent ADD");
        }
    });
    assert_eq!(node.host.ports_of("brrace").len(), 64);
    std::thread::scope(|s| {
        for pod in &pods {
            s.spawn(|| node.del(pod, &conf));
        }
    });
    node.host.assert_no_new_veths("after 64 DELs");
}
