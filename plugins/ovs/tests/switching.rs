//! A node switches from ovs-cni to this plugin and back with pods running: every DEL, CHECK and
//! GC of an attachment the other plugin made works, and leaves nothing behind. ovs-cni's side
//! is played by `common::ovs_cni`, which makes the links, OVSDB rows and cache file ovs-cni
//! makes and runs its DEL and cleanup against the test's own Open vSwitch.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use common::{host_veth, ovs_cni, OvsNode, PluginNode, Pod, BRIDGE, IFNAME, NETWORK};
use netns_tests::{expect_failure, expect_success, wait_for, TempDir};
use serde_json::{json, Value};

fn leases(dir: &TempDir) -> usize {
    netns_tests::host_local_leases(dir.path(), NETWORK).len()
}

/// Nothing of the attachment is left: no port, no host veth, no container interface, no cache
/// file in either directory.
fn assert_nothing_left(node: &OvsNode, pod_link: Option<netns_tests::Link>, container_id: &str) {
    assert!(node.ports().is_empty(), "ports left: {:?}", node.ports());
    node.host.assert_no_new_veths("afterwards");
    assert!(pod_link.is_none(), "the container interface is left");
    for old in [false, true] {
        let file = node.cache_file(container_id, old);
        assert!(!file.exists(), "{} is left", file.display());
    }
}

/// The port carries exactly ovs-cni's four keys (owner ovs-cni's, contNetns, contIface,
/// contPodUid) plus this plugin's two, and ovs-cni's cache file is written where and as
/// ovs-cni writes it.
#[test]
fn add_writes_the_port_tags_and_cache_file_ovs_cni_needs() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("sw-tags");
    let pod = Pod::new("sw-tags-pod");
    let conf = node.config(json!({"vlan": 100}));
    let out = node.call_env(
        "ADD",
        &pod.container_id,
        pod.ns.path_str(),
        &conf,
        &[("CNI_ARGS", "IgnoreUnknown=1;K8S_POD_UID=uid-42")],
    );
    expect_success(&out, "ADD");
    let ids = node.port_external_ids(&host_veth(&pod));
    let want: Vec<(&str, String)> = vec![
        ("cni-attachment", format!("{}/{IFNAME}", pod.container_id)),
        ("cni-network", NETWORK.to_string()),
        ("contIface", IFNAME.to_string()),
        ("contNetns", pod.ns.path_str().to_string()),
        ("contPodUid", "uid-42".to_string()),
        ("owner", ovs_cni::OWNER.to_string()),
    ];
    let got: Vec<(&str, String)> = ids.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    assert_eq!(got, want);

    let file = node.cache_file(&pod.container_id, false);
    let meta = std::fs::metadata(&file).expect("ovs-cni's cache file");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let dir = std::fs::metadata(file.parent().expect("dir")).expect("cache dir");
    assert_eq!(dir.permissions().mode() & 0o777, 0o700);
    let cache: Value =
        serde_json::from_slice(&std::fs::read(&file).expect("read")).expect("cache is JSON");
    assert_eq!(cache["Netconf"]["bridge"], BRIDGE);
    assert_eq!(cache["Netconf"]["socket_file"], json!(node.socket()));
    assert_eq!(cache["Netconf"]["name"], NETWORK);
    assert_eq!(cache["Netconf"]["vlan"], 100);
    assert_eq!(cache["Netconf"]["deviceID"], "");
    assert_eq!(cache["VdpaType"], "");
    assert_eq!(cache["UserspaceMode"], false);

    // A failed ADD takes it back.
    let other = Pod::new("sw-tags-fail");
    let mut bad = node.config(json!({"bridge": "nosuchbr"}));
    bad["cniVersion"] = json!("1.0.0");
    expect_failure(&node.call("ADD", &other, &bad), "ADD to a missing bridge");
    assert!(!node.cache_file(&other.container_id, false).exists());
}

/// Back to ovs-cni: its DEL of a pod this plugin attached (with an address) finds the port
/// through the cache file and the tags and leaves nothing, the lease included.
#[test]
fn ovs_cni_del_of_an_attachment_we_made_leaves_nothing() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("sw-godel");
    let pod = Pod::new("sw-godel-pod");
    let data = TempDir::new("sw-godel-ipam");
    let mut conf = node.config(json!({"vlan": 7, "ipam": {
        "type": "host-local", "subnet": "10.70.0.0/24", "dataDir": data.path()}}));
    conf["cniVersion"] = json!("1.0.0");
    node.add_ok(&pod, &conf);
    assert_eq!(leases(&data), 1);

    // ovs-cni's DEL runs the IPAM plugin's DEL first (the cache names its type).
    let cache: Value = serde_json::from_slice(
        &std::fs::read(node.cache_file(&pod.container_id, false)).expect("cache file"),
    )
    .expect("JSON");
    assert_eq!(cache["Netconf"]["ipam"]["type"], "host-local");
    let out = netns_tests::run_plugin_in(
        &node.host,
        std::path::Path::new("/usr/lib/cni"),
        "host-local",
        &[
            ("CNI_COMMAND", "DEL"),
            ("CNI_CONTAINERID", &pod.container_id),
            ("CNI_NETNS", pod.ns.path_str()),
            ("CNI_IFNAME", IFNAME),
            ("CNI_PATH", "/usr/lib/cni"),
        ],
        &conf.to_string(),
    );
    expect_success(&out, "host-local DEL");
    ovs_cni::del(&node, &pod.container_id, pod.ns.path_str()).expect("ovs-cni's DEL");
    assert_nothing_left(&node, pod.link(), &pod.container_id);
    assert_eq!(leases(&data), 0);
}

/// Back to ovs-cni: a pod this plugin attached whose namespace went away without a DEL leaves
/// a port whose interface OVS reports in error, which ovs-cni's cleanup removes. OVS reports
/// that error on the kernel's datapath (the userspace one only marks the link down), so the
/// test runs in the real-kernel tier.
#[test]
fn ovs_cni_cleanup_removes_a_dead_port_we_made_on_the_kernel_datapath() {
    netns_tests::skip_unless_root!();
    let stdout = netns_tests::real_kernel_tier::run_ignored_tests_in_guest("in_guest::");
    assert!(
        stdout.contains("test in_guest::ovs_cni_cleanup_removes_a_dead_port_we_made ... ok"),
        "{stdout}"
    );
}

mod in_guest {
    use super::*;
    use netns_tests::real_kernel_tier::require_guest;

    #[test]
    #[ignore = "runs inside the real-kernel guest, driven by \
                ovs_cni_cleanup_removes_a_dead_port_we_made_on_the_kernel_datapath"]
    fn ovs_cni_cleanup_removes_a_dead_port_we_made() {
        require_guest();
        let modprobe = std::process::Command::new("modprobe")
            .arg("openvswitch")
            .status()
            .expect("run modprobe");
        assert!(modprobe.success(), "modprobe openvswitch");
        let node = OvsNode::start_on("sw-goclean", "system");
        let pod = Pod::new("sw-goclean-pod");
        node.add_ok(&pod, &node.config(json!({"vlan": 7})));
        let port = host_veth(&pod);
        pod.ns.delete().expect("netns deleted");
        node.wait_veth_gone(&port);
        let in_error = || {
            let error = node.vsctl(&["get", "Interface", &port, "error"]);
            error != "[]" && !error.is_empty()
        };
        assert!(
            wait_for(Duration::from_secs(20), in_error),
            "OVS did not report {port} in error"
        );
        ovs_cni::clean_ports(&node);
        assert!(node.ports().is_empty(), "ports left: {:?}", node.ports());
        node.host.assert_no_new_veths("afterwards");
    }
}

/// From ovs-cni: DEL of a pod ovs-cni attached finds its port by contNetns and contIface,
/// removes it, its veth and ovs-cni's cache file in both directories.
#[test]
fn del_of_an_attachment_ovs_cni_made_leaves_nothing() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("sw-del");
    let pod = Pod::new("sw-del-pod");
    ovs_cni::add(&node, &pod, Some(100), "uid-7");
    let conf = node.config(json!({"vlan": 100}));
    ovs_cni::write_cache(&node, &pod.container_id, &conf, true);
    expect_success(&node.call("DEL", &pod, &conf), "DEL");
    assert_nothing_left(&node, pod.link(), &pod.container_id);
    expect_success(&node.call("DEL", &pod, &conf), "DEL again");
}

/// From ovs-cni: CHECK of a pod ovs-cni attached, with the result ovs-cni printed, passes; and
/// detects a changed tag as for this plugin's own ports.
#[test]
fn check_of_an_attachment_ovs_cni_made_passes_and_sees_drift() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("sw-check");
    let pod = Pod::new("sw-check-pod");
    let go = ovs_cni::add(&node, &pod, Some(100), "");
    let mut conf = node.config(json!({"vlan": 100}));
    conf["cniVersion"] = json!("1.0.0");
    conf["prevResult"] = json!({
        "cniVersion": "1.0.0",
        "interfaces": [
            {"name": go.port, "mac": go.host_mac},
            {"name": IFNAME, "mac": go.container_mac, "sandbox": pod.ns.path_str()}
        ],
        "dns": {}
    });
    expect_success(&node.call("CHECK", &pod, &conf), "CHECK");
    node.vsctl(&["set", "Port", &go.port, "tag=200"]);
    let out = node.call("CHECK", &pod, &conf);
    expect_failure(&out, "CHECK after the tag changed");
}

/// From ovs-cni: GC removes the ports ovs-cni made whose pod is gone (their device with it)
/// and ovs-cni's cache files of this network's attachments the runtime no longer lists; a
/// live attachment, and another network's cache file, stay.
#[test]
fn gc_removes_dead_ovs_cni_ports_and_stale_cache_files() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("sw-gc");
    let live = Pod::new("sw-gc-live");
    let dead = Pod::new("sw-gc-dead");
    let live_port = ovs_cni::add(&node, &live, Some(5), "").port;
    let dead_port = ovs_cni::add(&node, &dead, Some(5), "").port;
    let mut other = node.config(json!({}));
    other["name"] = json!("othernet");
    ovs_cni::write_cache(&node, "othercontainer", &other, false);
    let Pod { ns, container_id } = dead;
    ns.delete().expect("netns deleted");
    node.wait_veth_gone(&dead_port);

    let mut gc = node.config(json!({}));
    gc["cni.dev/valid-attachments"] = json!([{"containerID": live.container_id, "ifname": IFNAME}]);
    expect_success(&node.call_env("GC", "", "", &gc, &[]), "GC");
    assert_eq!(node.ports(), vec![live_port]);
    assert!(live.link().is_some());
    assert!(node.cache_file(&live.container_id, false).exists());
    assert!(!node.cache_file(&container_id, false).exists());
    assert!(node.cache_file("othercontainer", false).exists());
}

/// From ovs-cni: a DEL without a netns (the runtime lost it) cannot name ovs-cni's port; as in
/// ovs-cni, the bridge's ports whose device is gone are removed, and the cache file with them.
#[test]
fn del_without_a_netns_removes_dead_ovs_cni_ports() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("sw-delnons");
    let live = Pod::new("sw-delnons-live");
    let dead = Pod::new("sw-delnons-dead");
    let live_port = ovs_cni::add(&node, &live, None, "").port;
    let dead_port = ovs_cni::add(&node, &dead, None, "").port;
    let Pod { ns, container_id } = dead;
    ns.delete().expect("netns deleted");
    node.wait_veth_gone(&dead_port);
    let conf = node.config(json!({}));
    expect_success(&node.call_env("DEL", &container_id, "", &conf, &[]), "DEL");
    assert_eq!(node.ports(), vec![live_port.clone()]);
    assert!(!node.cache_file(&container_id, false).exists());
    assert_eq!(node.host_veths(), vec![live_port]);
}

/// Back to ovs-cni: its CHECK of a pod this plugin attached passes, with the result this
/// plugin printed, for an access port (with an address), `"vlan": 0` (ovs-cni wants `tag=0`),
/// a trunk and a port of every VLAN; and it sees a changed tag.
#[test]
fn ovs_cni_check_of_an_attachment_we_made_passes() {
    netns_tests::skip_unless_root!();
    let node = OvsNode::start("sw-gocheck");
    let cases = [
        json!({"vlan": 100, "ipam": {"type": "static", "addresses": [{"address": "10.71.0.2/24"}]}}),
        json!({"vlan": 0}),
        json!({"trunk": [{"id": 10}, {"minID": 20, "maxID": 22}]}),
        json!({}),
    ];
    let mut pods = Vec::new();
    for (i, fields) in cases.into_iter().enumerate() {
        let pod = Pod::new(&format!("sw-gocheck-{i}"));
        let mut conf = node.config(fields);
        conf["cniVersion"] = json!("1.0.0");
        conf["prevResult"] = node.add_ok(&pod, &conf);
        ovs_cni::check(&node, &pod, &conf).unwrap_or_else(|e| panic!("{conf}: {e}"));
        pods.push((pod, conf));
    }
    let (pod, conf) = &pods[0];
    node.vsctl(&["set", "Port", &host_veth(pod), "tag=101"]);
    let err = ovs_cni::check(&node, pod, conf).expect_err("a changed tag");
    assert!(err.contains("vlan tag mismatch"), "{err}");
}
