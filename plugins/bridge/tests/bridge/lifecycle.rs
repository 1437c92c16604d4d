//! CHECK, DEL, GC and STATUS, and the rollback of a failed ADD.

use super::*;

#[test]
fn check_passes_for_an_l2_attachment_and_fails_when_the_interface_is_gone() {
    netns_tests::skip_unless_root!();
    let node = Node::new("br-check");
    let conf = config("brck", json!({"ipam": {}, "macspoofchk": true}));
    let a = node.pod("a");
    let result = node.add(&a, &conf);
    let out = node.check(&a, &conf, &result);
    assert!(
        out.status.success(),
        "{}",
        netns_tests::describe_output(&out)
    );
    a.ns.exec_ok("ip", &["link", "del", IFNAME]);
    let out = node.check(&a, &conf, &result);
    assert_eq!(error_code(&out), 100);
}

#[test]
fn check_detects_a_lost_address() {
    netns_tests::skip_unless_root!();
    let node = Node::new("br-check-ip");
    let conf = config("brci", json!({"ipam": node.host_local("10.79.0.0/24")}));
    let a = node.pod("a");
    let result = node.add(&a, &conf);
    assert!(node.check(&a, &conf, &result).status.success());
    let cidr = result["ips"][0]["address"].as_str().expect("address");
    a.ns.exec_ok("ip", &["addr", "del", cidr, "dev", IFNAME]);
    assert!(!node.check(&a, &conf, &result).status.success());
}

#[test]
fn a_failed_ipam_add_rolls_back_the_veth_and_the_spoof_check() {
    netns_tests::skip_unless_root!();
    let node = Node::new("br-rollback");
    // Room for exactly one address: the second ADD's IPAM fails after the veth exists.
    let mut ipam = node.host_local("10.80.0.0/24");
    ipam["rangeStart"] = json!("10.80.0.10");
    ipam["rangeEnd"] = json!("10.80.0.10");
    let conf = config(
        "brrb",
        json!({"ipam": ipam, "macspoofchk": true, "ipMasq": true}),
    );
    let (a, b) = (node.pod("a"), node.pod("b"));
    node.add(&a, &conf);
    let out = node.call("ADD", &b, &conf, "");
    assert!(!out.status.success());
    assert!(b.ns.link(IFNAME).is_none(), "net1 left in the container");
    assert_eq!(
        node.host.new_veths().len(),
        1,
        "only the first attachment's veth stays"
    );
    let rules = node.ruleset();
    assert_eq!(rules.matches("chain att-").count(), 2, "{rules}");
}

#[test]
fn a_failed_add_releases_the_ipam_lease() {
    netns_tests::skip_unless_root!();
    let node = Node::new("br-lease");
    // The container already has net1: the veth cannot be created, before any IPAM call...
    let a = node.pod("a");
    a.ns.exec_ok(
        "ip",
        &["link", "add", IFNAME, "type", "veth", "peer", "name", "x0"],
    );
    let conf = config("brls", json!({"ipam": node.host_local("10.81.0.0/24")}));
    assert!(!node.call("ADD", &a, &conf, "").status.success());
    assert!(node.leases().is_empty());
    // ... and when the failure comes after IPAM (the bridge holds another address than the
    // gateway), the lease is released too.
    let b = node.pod("b");
    let mut gw = conf.clone();
    gw["isGateway"] = json!(true);
    node.host
        .netns()
        .exec_ok("ip", &["addr", "add", "10.99.0.1/24", "dev", "brls"]);
    assert!(!node.call("ADD", &b, &gw, "").status.success());
    assert!(node.leases().is_empty(), "{:?}", node.leases());
    node.host.assert_no_new_veths("after the failed ADD");
}

#[test]
fn del_is_idempotent_and_succeeds_without_the_netns() {
    netns_tests::skip_unless_root!();
    let node = Node::new("br-del");
    let conf = config(
        "brdel",
        json!({"ipam": node.host_local("10.82.0.0/24"), "macspoofchk": true, "ipMasq": true}),
    );
    let a = node.pod("a");
    node.add(&a, &conf);
    node.del(&a, &conf);
    node.del(&a, &conf);
    node.host.assert_no_new_veths("after DEL");
    assert!(node.leases().is_empty());
    assert!(!node.ruleset().contains("att-"));

    let b = node.pod("b");
    node.add(&b, &conf);
    let path = b.ns.path_str().to_string();
    let id = b.id.clone();
    b.ns.delete().expect("delete the pod's netns");
    let out = node.call_raw("DEL", &id, &path, IFNAME, &conf, "");
    assert!(
        out.status.success(),
        "{}",
        netns_tests::describe_output(&out)
    );
    assert!(node.leases().is_empty());
    assert!(!node.ruleset().contains("att-"));
    let out = node.call_raw("DEL", &id, "", IFNAME, &conf, "");
    assert!(out.status.success(), "DEL without CNI_NETNS");
}

#[test]
fn a_failed_ipam_del_still_removes_the_port_and_the_rules() {
    netns_tests::skip_unless_root!();
    let node = Node::new("br-delfail");
    let conf = config(
        "brdf",
        json!({"ipam": node.host_local("10.83.0.0/24"), "macspoofchk": true, "ipMasq": true}),
    );
    let a = node.pod("a");
    node.add(&a, &conf);
    // host-local keeps its leases in <dataDir>/<network>: a file there makes its DEL fail.
    let store = node.leases_dir().join(conf["name"].as_str().expect("name"));
    std::fs::remove_dir_all(&store).expect("remove the lease store");
    std::fs::write(&store, "").expect("a file where host-local wants a directory");
    let out = node.call("DEL", &a, &conf, "");
    assert!(!out.status.success(), "the IPAM DEL failure is reported");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("host-local"),
        "the error names IPAM: {stdout}"
    );
    node.host
        .assert_no_new_veths("after the DEL whose IPAM failed");
    let rules = node.ruleset();
    assert!(!rules.contains("att-"), "rules left behind: {rules}");
}

#[test]
fn gc_removes_what_lost_dels_left_behind() {
    netns_tests::skip_unless_root!();
    let node = Node::new("br-gc");
    let mut conf = config("brgc", json!({"ipam": {}, "macspoofchk": true}));
    let (keep, lost) = (node.pod("keep"), node.pod("lost"));
    let kept = node.add(&keep, &conf);
    let gone = node.add(&lost, &conf);
    // Another network on the same bridge is not this GC's business.
    let other_conf = config(
        "brgc",
        json!({"name": "other-net", "ipam": {}, "macspoofchk": true}),
    );
    let other = node.pod("other");
    let others = node.add(&other, &other_conf);

    conf["cniVersion"] = json!("1.1.0");
    conf["cni.dev/valid-attachments"] = json!([{"containerID": keep.id, "ifname": IFNAME}]);
    let out = node.call_raw("GC", "", "", "", &conf, "");
    assert!(
        out.status.success(),
        "{}",
        netns_tests::describe_output(&out)
    );
    assert!(node.host_link(&host_veth(&kept)).is_some());
    assert!(node.host_link(&host_veth(&others)).is_some());
    assert!(
        node.host_link(&host_veth(&gone)).is_none(),
        "the lost attachment's veth stays"
    );
    assert!(lost.ns.link(IFNAME).is_none());
    let rules = node.ruleset();
    assert!(
        rules.contains(&host_veth(&kept)) && rules.contains(&host_veth(&others)),
        "{rules}"
    );
    assert!(!rules.contains(&host_veth(&gone)), "{rules}");
}

#[test]
fn gc_releases_the_host_local_leases_of_attachments_that_are_gone() {
    netns_tests::skip_unless_root!();
    let node = Node::new("br-gc-lease");
    let mut conf = config("brgl", json!({"ipam": node.host_local("10.79.0.0/24")}));
    let (keep, lost) = (node.pod("keep"), node.pod("lost"));
    node.add(&keep, &conf);
    node.add(&lost, &conf);
    let before = node.leases();
    assert_eq!(before.len(), 2, "{before:?}");

    conf["cniVersion"] = json!("1.1.0");
    conf["cni.dev/valid-attachments"] = json!([{"containerID": keep.id, "ifname": IFNAME}]);
    let out = node.call_raw("GC", "", "", "", &conf, "");
    assert!(
        out.status.success(),
        "{}",
        netns_tests::describe_output(&out)
    );
    let left = node.leases();
    assert_eq!(left.len(), 1, "the lost attachment's lease stays: {left:?}");
    let kept = std::fs::read_to_string(node.leases_dir().join(&left[0])).expect("lease");
    assert!(
        kept.starts_with(&keep.id),
        "the kept lease is not keep's: {kept:?}"
    );
}

#[test]
fn gc_with_a_lease_directory_the_node_does_not_allow_is_refused_and_changes_nothing() {
    netns_tests::skip_unless_root!();
    let node = Node::new("br-gc-refused");
    let lost = node.pod("lost");
    let gone = node.add(&lost, &config("brgr", json!({"ipam": {}})));
    // A lease host-local's GC would release, where the tests' node policy (their temp dir)
    // allows no state.
    let outside = netns_tests::TempDir::new_in(std::path::Path::new("/var/tmp"), "br-gc-refused");
    let mut conf = config(
        "brgr",
        json!({"ipam": {"type": "host-local", "subnet": "10.78.0.0/24", "dataDir": outside.path()}}),
    );
    let lease = outside
        .join(conf["name"].as_str().expect("name"))
        .join("10.78.0.5");
    std::fs::create_dir_all(lease.parent().expect("the network's directory")).expect("mkdir");
    std::fs::write(&lease, format!("{}\r\n{IFNAME}", lost.id)).expect("lease");

    conf["cniVersion"] = json!("1.1.0");
    conf["cni.dev/valid-attachments"] = json!([]);
    let out = node.call_raw("GC", "", "", "", &conf, "");
    assert_eq!(error_code(&out), 7);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("ipam.dataDir"), "{stdout}");
    assert!(lease.is_file(), "the lease outside was released");
    assert!(
        node.host_link(&host_veth(&gone)).is_some(),
        "the refused GC removed a port"
    );
}

#[test]
fn status_is_ok_without_ipam_and_asks_ipam_when_there_is_one() {
    netns_tests::skip_unless_root!();
    let node = Node::new("br-status");
    let mut conf = config("brst", json!({"ipam": {}}));
    conf["cniVersion"] = json!("1.1.0");
    assert!(node
        .call_raw("STATUS", "", "", "", &conf, "")
        .status
        .success());
    conf["ipam"] = json!({"type": "no-such-ipam"});
    let out = node.call_raw("STATUS", "", "", "", &conf, "");
    assert!(!out.status.success());
}
