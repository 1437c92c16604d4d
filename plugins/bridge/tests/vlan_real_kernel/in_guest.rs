//! The VLAN tests themselves, run inside the guest (ignored on the host).

use super::common::*;
use netns_tests::real_kernel_tier::require_guest;
use netns_tests::{LibcniAttachment, PluginDir, TempDir};
use serde_json::{json, Value};
use std::path::Path;

/// `bridge -j vlan show dev <port>` as (vid, pvid, untagged), sorted.
fn port_vlans(node: &Node, port: &str) -> Vec<(u64, bool, bool)> {
    netns_tests::parse_port_vlans(
        &node
            .host
            .netns()
            .exec_ok("bridge", &["-j", "vlan", "show", "dev", port]),
    )
}

#[test]
#[ignore = "runs inside the real-kernel guest, driven by vlan_tests_pass_on_a_real_kernel"]
fn access_vlans_isolate_pods_on_one_bridge() {
    require_guest();
    let node = Node::new("rk-access");
    let v100 = config("brv", json!({"vlan": 100, "ipam": {}}));
    let v200 = config("brv", json!({"vlan": 200, "ipam": {}}));
    let (a, b, c) = (node.pod("a"), node.pod("b"), node.pod("c"));
    node.add(&a, &v100);
    node.add(&b, &v100);
    node.add(&c, &v200);
    let br = node.host_link("brv").expect("bridge created");
    let data = br.linkinfo.and_then(|l| l.info_data).expect("bridge data");
    assert_eq!(data["vlan_filtering"], 1, "{data}");
    set_ip(&a, "10.90.0.1/24");
    set_ip(&b, "10.90.0.2/24");
    set_ip(&c, "10.90.0.3/24");
    assert!(
        pings(&a, "10.90.0.2".parse().expect("ip")),
        "same VLAN does not pass"
    );
    assert!(
        !pings(&a, "10.90.0.3".parse().expect("ip")),
        "VLAN 100 reaches VLAN 200"
    );
    assert!(
        !pings(&c, "10.90.0.2".parse().expect("ip")),
        "VLAN 200 reaches VLAN 100"
    );
}

#[test]
#[ignore = "runs inside the real-kernel guest, driven by vlan_tests_pass_on_a_real_kernel"]
fn a_trunk_port_reaches_both_access_vlans_through_8021q_subinterfaces() {
    require_guest();
    let node = Node::new("rk-trunk");
    let trunk = config(
        "brt",
        json!({"vlanTrunk": [{"id": 100}, {"id": 200}], "ipam": {}}),
    );
    let (t, a, c) = (node.pod("t"), node.pod("a"), node.pod("c"));
    node.add(&t, &trunk);
    node.add(&a, &config("brt", json!({"vlan": 100, "ipam": {}})));
    node.add(&c, &config("brt", json!({"vlan": 200, "ipam": {}})));
    t.ns.exec_ok("modprobe", &["8021q"]);
    for (vid, addr) in [("100", "10.91.100.1/24"), ("200", "10.91.200.1/24")] {
        let sub = format!("{IFNAME}.{vid}");
        t.ns.exec_ok(
            "ip",
            &[
                "link", "add", "link", IFNAME, "name", &sub, "type", "vlan", "id", vid,
            ],
        );
        t.ns.exec_ok("ip", &["addr", "add", addr, "dev", &sub]);
        t.ns.exec_ok("ip", &["link", "set", &sub, "up"]);
    }
    set_ip(&a, "10.91.100.2/24");
    set_ip(&c, "10.91.200.2/24");
    assert!(
        pings(&t, "10.91.100.2".parse().expect("ip")),
        "trunk to VLAN 100"
    );
    assert!(
        pings(&t, "10.91.200.2".parse().expect("ip")),
        "trunk to VLAN 200"
    );
}

#[test]
#[ignore = "runs inside the real-kernel guest, driven by vlan_tests_pass_on_a_real_kernel"]
fn the_default_vlan_leaves_the_port_unless_preserved() {
    require_guest();
    let node = Node::new("rk-default");
    let (a, b) = (node.pod("a"), node.pod("b"));
    let plain = node.add(&a, &config("brd", json!({"vlan": 100, "ipam": {}})));
    let kept = node.add(
        &b,
        &config(
            "brd",
            json!({"vlan": 100, "preserveDefaultVlan": true, "ipam": {}}),
        ),
    );
    assert_eq!(
        port_vlans(&node, &host_veth(&plain)),
        vec![(100, true, true)]
    );
    // Preserved, VID 1 stays, no longer the PVID: the access VLAN took that.
    assert_eq!(
        port_vlans(&node, &host_veth(&kept)),
        vec![(1, false, true), (100, true, true)]
    );
}

#[test]
#[ignore = "runs inside the real-kernel guest, driven by vlan_tests_pass_on_a_real_kernel"]
fn bridge_vlan_show_matches_the_config_and_check_verifies_it() {
    require_guest();
    let node = Node::new("rk-show");
    let conf = config(
        "brs",
        json!({"vlan": 10, "vlanTrunk": [{"id": 20}, {"minID": 30, "maxID": 33}], "ipam": {}}),
    );
    let a = node.pod("a");
    let result = node.add(&a, &conf);
    let port = host_veth(&result);
    let mut want = vec![(10, true, true), (20, false, false)];
    want.extend((30..=33).map(|vid| (vid, false, false)));
    assert_eq!(port_vlans(&node, &port), want);
    let out = node.check(&a, &conf, &result);
    assert!(
        out.status.success(),
        "{}",
        netns_tests::describe_output(&out)
    );
    node.host
        .netns()
        .exec_ok("bridge", &["vlan", "del", "dev", &port, "vid", "20"]);
    let out = node.check(&a, &conf, &result);
    assert_eq!(error_code(&out), 100);

    // A trunk without an access VLAN keeps VID 1 as its native VLAN.
    let b = node.pod("b");
    let trunk = node.add(
        &b,
        &config("brs", json!({"vlanTrunk": [{"id": 20}], "ipam": {}})),
    );
    assert_eq!(
        port_vlans(&node, &host_veth(&trunk)),
        vec![(1, true, true), (20, false, false)]
    );
}

#[test]
#[ignore = "runs inside the real-kernel guest, driven by vlan_tests_pass_on_a_real_kernel"]
fn a_gateway_on_an_access_vlan_lives_on_bridge_dot_vlan() {
    require_guest();
    let node = Node::new("rk-gw");
    let conf = config(
        "brg",
        json!({"vlan": 300, "isDefaultGateway": true, "ipam": node.host_local("10.92.0.0/24")}),
    );
    let a = node.pod("a");
    let result = node.add(&a, &conf);
    assert_eq!(node.host.netns().addresses("brg.300"), vec!["10.92.0.1/24"]);
    assert_eq!(result["interfaces"][3]["name"], "brg.300", "{result}");
    assert_eq!(
        port_vlans(&node, &gateway_port(&node, "brg.300")),
        vec![(300, true, true)]
    );
    assert!(
        pings(&a, "10.92.0.1".parse().expect("ip")),
        "the gateway is unreachable"
    );
}

/// The bridge-side end of the gateway interface `gateway` (a veth).
fn gateway_port(node: &Node, gateway: &str) -> String {
    let link = node
        .host_link(gateway)
        .unwrap_or_else(|| panic!("{gateway} does not exist"));
    let peer = link.other.get("link").and_then(Value::as_str);
    peer.unwrap_or_else(|| panic!("{gateway} has no peer here: {:?}", link.other))
        .to_string()
}

/// A bridge that filters by VLAN, made by the test as a node's network setup would.
fn filtering_bridge(node: &Node, name: &str) {
    let ns = node.host.netns();
    ns.exec_ok(
        "ip",
        &["link", "add", name, "type", "bridge", "vlan_filtering", "1"],
    );
    ns.exec_ok("ip", &["link", "set", name, "up"]);
}

/// A gateway config on access VLAN `vid` whose IPAM hands out addresses of `subnet`.
fn gateway_config(node: &Node, bridge: &str, vid: u16, subnet: &str) -> Value {
    config(
        bridge,
        json!({"vlan": vid, "isDefaultGateway": true, "ipam": node.host_local(subnet)}),
    )
}

#[test]
#[ignore = "runs inside the real-kernel guest, driven by vlan_tests_pass_on_a_real_kernel"]
fn a_half_made_gateway_interface_is_completed_by_the_next_add() {
    require_guest();
    let node = Node::new("rk-gwhalf");
    filtering_bridge(&node, "brh");
    // What an ADD stopped between making the interface and giving its port the VLAN leaves:
    // both ends up, the port in the bridge's default VLAN only.
    let ns = node.host.netns();
    ns.exec_ok(
        "ip",
        &[
            "link", "add", "gwhalf", "type", "veth", "peer", "name", "brh.400",
        ],
    );
    ns.exec_ok("ip", &["link", "set", "gwhalf", "master", "brh", "up"]);
    ns.exec_ok("ip", &["link", "set", "brh.400", "up"]);
    assert_eq!(port_vlans(&node, "gwhalf"), vec![(1, true, true)]);

    let a = node.pod("a");
    node.add(&a, &gateway_config(&node, "brh", 400, "10.93.0.0/24"));
    assert_eq!(
        port_vlans(&node, &gateway_port(&node, "brh.400")),
        vec![(400, true, true)]
    );
    assert!(
        pings(&a, "10.93.0.1".parse().expect("ip")),
        "the gateway is unreachable"
    );
}

#[test]
#[ignore = "runs inside the real-kernel guest, driven by vlan_tests_pass_on_a_real_kernel"]
fn a_gateway_interface_whose_peer_is_off_the_bridge_is_replaced() {
    require_guest();
    let node = Node::new("rk-gwoff");
    filtering_bridge(&node, "brx");
    let ns = node.host.netns();
    ns.exec_ok(
        "ip",
        &[
            "link", "add", "gwoff", "type", "veth", "peer", "name", "brx.410",
        ],
    );

    let a = node.pod("a");
    node.add(&a, &gateway_config(&node, "brx", 410, "10.93.1.0/24"));
    let port = gateway_port(&node, "brx.410");
    let on_bridge = node.host_link(&port).and_then(|l| l.master);
    assert_eq!(on_bridge.as_deref(), Some("brx"), "{port}");
    assert_eq!(port_vlans(&node, &port), vec![(410, true, true)]);
    assert!(
        pings(&a, "10.93.1.1".parse().expect("ip")),
        "the gateway is unreachable"
    );
}

#[test]
#[ignore = "runs inside the real-kernel guest, driven by vlan_tests_pass_on_a_real_kernel"]
fn an_add_that_fails_after_making_the_gateway_interface_removes_it() {
    require_guest();
    let node = Node::new("rk-gwfail");
    // Two IPv4 subnets, so two gateways for one interface: without forceAddress the second
    // fails the ADD once the interface exists and holds the first.
    let ipam = json!({
        "type": "host-local",
        "ranges": [[{"subnet": "10.94.1.0/24"}], [{"subnet": "10.94.2.0/24"}]],
        "dataDir": node.leases_dir(),
    });
    let conf = config("brf", json!({"vlan": 420, "isGateway": true, "ipam": ipam}));
    let a = node.pod("a");
    let out = node.call("ADD", &a, &conf, "");
    let described = netns_tests::describe_output(&out);
    assert!(!out.status.success(), "{described}");
    assert!(described.contains("already has address"), "{described}");
    assert!(
        node.host_link("brf.420").is_none(),
        "brf.420 was left behind"
    );
    node.host.assert_no_new_veths("after the failed ADD");
}

#[test]
#[ignore = "runs inside the real-kernel guest, driven by vlan_tests_pass_on_a_real_kernel"]
fn a_gateway_interface_made_by_a_failing_add_stays_for_other_pods_of_the_vlan() {
    require_guest();
    // A pod of the VLAN attached while the failing ADD runs may have taken the interface as
    // its gateway (as a concurrent ADD does): it must not lose it to the failure.
    let node = Node::new("rk-gwstay");
    let x = node.pod("x");
    node.add(&x, &config("brs", json!({"vlan": 425, "ipam": {}})));
    let ipam = json!({
        "type": "host-local",
        "ranges": [[{"subnet": "10.94.6.0/24"}], [{"subnet": "10.94.7.0/24"}]],
        "dataDir": node.leases_dir(),
    });
    let conf = config("brs", json!({"vlan": 425, "isGateway": true, "ipam": ipam}));
    let a = node.pod("a");
    let out = node.call("ADD", &a, &conf, "");
    let described = netns_tests::describe_output(&out);
    assert!(described.contains("already has address"), "{described}");
    assert_eq!(
        port_vlans(&node, &gateway_port(&node, "brs.425")),
        vec![(425, true, true)]
    );
    set_ip(&x, "10.94.6.50/24");
    assert!(
        pings(&x, "10.94.6.1".parse().expect("ip")),
        "the other pod cannot reach the gateway"
    );
}

#[test]
#[ignore = "runs inside the real-kernel guest, driven by vlan_tests_pass_on_a_real_kernel"]
fn a_failing_add_leaves_an_existing_gateway_interface_alone() {
    require_guest();
    let node = Node::new("rk-gwkeep");
    let a = node.pod("a");
    node.add(&a, &gateway_config(&node, "brk", 430, "10.94.3.0/24"));
    // Another subnet on the same VLAN: its gateway cannot join the first on the interface.
    let b = node.pod("b");
    let out = node.call(
        "ADD",
        &b,
        &gateway_config(&node, "brk", 430, "10.94.4.0/24"),
        "",
    );
    let described = netns_tests::describe_output(&out);
    assert!(described.contains("already has address"), "{described}");
    assert_eq!(node.host.netns().addresses("brk.430"), vec!["10.94.3.1/24"]);
    assert!(
        pings(&a, "10.94.3.1".parse().expect("ip")),
        "the first pod lost its gateway"
    );
}

#[test]
#[ignore = "runs inside the real-kernel guest, driven by vlan_tests_pass_on_a_real_kernel"]
fn concurrent_adds_on_one_vlan_share_one_gateway_interface() {
    require_guest();
    let node = Node::new("rk-gwrace");
    let conf = gateway_config(&node, "brc", 440, "10.94.5.0/24");
    let pods: Vec<Pod> = (0..4).map(|i| node.pod(&format!("p{i}"))).collect();
    let outs: Vec<_> = std::thread::scope(|scope| {
        let calls: Vec<_> = pods
            .iter()
            .map(|pod| scope.spawn(|| node.call("ADD", pod, &conf, "")))
            .collect();
        calls
            .into_iter()
            .map(|c| c.join().expect("the ADD thread"))
            .collect()
    });
    for out in &outs {
        parse_ok(out, "concurrent ADD");
    }
    assert_eq!(
        port_vlans(&node, &gateway_port(&node, "brc.440")),
        vec![(440, true, true)]
    );
    for pod in &pods {
        assert!(
            pings(pod, "10.94.5.1".parse().expect("ip")),
            "{} cannot reach the gateway",
            pod.id
        );
    }
}

/// The walkthrough's NetworkAttachmentDefinition config, unchanged but for the VLAN.
fn walkthrough_nad(name: &str, vlan: u16) -> Value {
    json!({
        "cniVersion": "0.3.1",
        "name": name,
        "plugins": [
            {"type": "bridge", "bridge": "br0", "vlan": vlan, "ipam": {}},
            {"type": "tuning"}
        ]
    })
}

/// Two pings that may take a while under emulation (the first one resolves the neighbour).
fn reaches(from: &Pod, to: &str) -> bool {
    from.ns
        .exec("ping", &["-c", "2", "-W", "2", to])
        .status
        .success()
}

#[test]
#[ignore = "runs inside the real-kernel guest, driven by vlan_tests_pass_on_a_real_kernel"]
fn the_walkthrough_vlan_100_pings_across_two_nodes_before_and_after_filtering_is_turned_on() {
    require_guest();
    // Two nodes, each with br0 as the walkthrough's nmstate policy makes it (STP off, no
    // VLAN settings) and the secondary NIC eth1 as its port: a veth between the nodes.
    let (n1, n2) = (Node::new("rk-walk1"), Node::new("rk-walk2"));
    for n in [&n1, &n2] {
        let ns = n.host.netns();
        ns.exec_ok(
            "ip",
            &["link", "add", "br0", "type", "bridge", "stp_state", "0"],
        );
    }
    n1.host.netns().exec_ok(
        "ip",
        &[
            "link",
            "add",
            "eth1",
            "type",
            "veth",
            "peer",
            "name",
            "eth1",
            "netns",
            n2.host.netns().name(),
        ],
    );
    for n in [&n1, &n2] {
        let ns = n.host.netns();
        ns.exec_ok("ip", &["link", "set", "eth1", "master", "br0", "up"]);
        ns.exec_ok("ip", &["link", "set", "br0", "up"]);
    }
    let bridge_bin = Path::new(env!("CARGO_BIN_EXE_bridge"));
    let plugins = PluginDir::new("rk-walk")
        .with("bridge", bridge_bin)
        .with_ours(&["tuning"]);
    let dir = TempDir::new("rk-walk");
    let v100 = dir.write_json(
        "br0-100.conflist",
        &walkthrough_nad("br0-100-l2-config", 100),
    );
    let v200 = dir.write_json(
        "br0-200.conflist",
        &walkthrough_nad("br0-200-l2-config", 200),
    );
    let attach = |node: &Node, pod: &Pod, conflist: &Path| {
        LibcniAttachment::new(
            conflist,
            &[plugins.path()],
            &dir.join("cache"),
            pod.ns.path_str(),
            &pod.id,
            IFNAME,
        )
        .in_sandbox(&node.host)
    };
    let (vma, vmb, vmc) = (n1.pod("vma"), n2.pod("vmb"), n2.pod("vmc"));
    let atts = [
        (&n1, attach(&n1, &vma, &v100)),
        (&n2, attach(&n2, &vmb, &v100)),
        (&n2, attach(&n2, &vmc, &v200)),
    ];
    for (node, att) in &atts {
        let out = att.add();
        let result = netns_tests::expect_success(&out, "libcni ADD");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("does not filter by VLAN")
                && stderr.contains("ip link set br0 type bridge vlan_filtering 1"),
            "no warning on stderr: {stderr}"
        );
        // The port has its VLAN already; the kernel enforces it once filtering is on.
        let result: Value = serde_json::from_str(&result).expect("result");
        let port = host_veth(&result);
        let vlans = port_vlans(node, &port);
        assert!(
            vlans
                .iter()
                .any(|v| v.1 && v.2 && (v.0 == 100 || v.0 == 200)),
            "{port}: {vlans:?}"
        );
        assert!(!vlans.iter().any(|v| v.0 == 1), "{port}: {vlans:?}");
    }
    set_ip(&vma, "10.200.0.1/24");
    set_ip(&vmb, "10.200.0.2/24");
    set_ip(&vmc, "10.200.0.3/24");
    assert!(
        reaches(&vma, "10.200.0.2"),
        "VLAN 100 across the nodes, unfiltered"
    );
    // Not enforced yet, as the warning said: VLAN 200 reaches VLAN 100.
    assert!(
        reaches(&vma, "10.200.0.3"),
        "unfiltered bridges isolated the VLANs"
    );

    for n in [&n1, &n2] {
        let ns = n.host.netns();
        ns.exec_ok(
            "ip",
            &[
                "link",
                "set",
                "br0",
                "type",
                "bridge",
                "vlan_filtering",
                "1",
            ],
        );
        ns.exec_ok("bridge", &["vlan", "add", "dev", "eth1", "vid", "100"]);
    }
    assert!(
        reaches(&vma, "10.200.0.2"),
        "VLAN 100 across the nodes, filtered"
    );
    assert!(
        !reaches(&vma, "10.200.0.3"),
        "VLAN 100 reaches VLAN 200 across"
    );
    assert!(
        !reaches(&vmb, "10.200.0.3"),
        "VLAN 100 reaches VLAN 200 on one node"
    );

    for (_, att) in &atts {
        netns_tests::expect_success(&att.del(), "libcni DEL");
    }
    for n in [&n1, &n2] {
        let left: Vec<String> = n
            .host
            .new_veths()
            .into_iter()
            .map(|l| l.ifname)
            .filter(|name| name != "eth1")
            .collect();
        assert!(left.is_empty(), "veths left: {left:?}");
    }
}

mod go_bridge;
