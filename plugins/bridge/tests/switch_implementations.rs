//! A node switching between Debian's Go reference bridge (1.1.1) and ours with attachments in
//! place: each side's DEL, CHECK and GC of what the other side made, and what is left after.
//! Objects of newer reference releases that 1.1.1 does not make (the nftables masquerade) are
//! created exactly as upstream creates them.

mod common;

use common::*;
use netns_tests::describe_output;
use serde_json::{json, Value};

/// A config both implementations take: spoof check and masquerade, addresses from host-local.
fn full_config(node: &Node, bridge: &str, subnet: &str) -> Value {
    config(
        bridge,
        json!({"macspoofchk": true, "ipMasq": true, "ipam": node.host_local(subnet)}),
    )
}

/// `<tool> -t nat -S` in the host sandbox.
fn nat_rules(node: &Node, tool: &str) -> String {
    node.host
        .netns()
        .exec_ok(tool, &["--wait", "-t", "nat", "-S"])
}

/// Everything of an attachment that can stay on the node, one line each: veths, spoof-check and
/// masquerade objects of both implementations (nftables and iptables), IPAM leases.
fn traces(node: &Node) -> Vec<String> {
    let mut left: Vec<String> = node
        .host
        .new_veths()
        .iter()
        .map(|l| format!("veth {}", l.ifname))
        .collect();
    for line in node.ruleset().lines() {
        let line = line.trim();
        let ours = line.contains("att-");
        let go_spoofchk = line.contains("cni-br-iface-");
        let go_masq = line.contains("masquerade comment") || line.contains("CNI-");
        if ours || go_spoofchk || go_masq {
            left.push(format!("nft: {line}"));
        }
    }
    for tool in ["iptables", "ip6tables"] {
        for line in nat_rules(node, tool).lines() {
            if line.contains("CNI-") {
                left.push(format!("{tool}: {line}"));
            }
        }
    }
    left.extend(node.leases().into_iter().map(|l| format!("lease {l}")));
    left
}

fn assert_nothing_left(node: &Node, when: &str) {
    // veth teardown can finish just after the call that caused it.
    netns_tests::wait_for(std::time::Duration::from_secs(5), || {
        node.host.new_veths().is_empty()
    });
    let left = traces(node);
    assert!(
        left.is_empty(),
        "{when}: left on the node:\n{}",
        left.join("\n")
    );
}

fn go_ok(out: &std::process::Output, what: &str) -> Value {
    assert!(
        out.status.success(),
        "Go {what} failed:\n{}",
        describe_output(out)
    );
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

/// Go ADD, with a look at what it made: our DEL and GC are tested against the real thing.
fn go_add(node: &Node, pod: &Pod, conf: &Value) -> Value {
    let result = go_ok(&node.call_go("ADD", pod, conf), "ADD");
    let rules = node.ruleset();
    assert!(
        rules.contains(&format!("cni-br-iface-{}-{IFNAME}", pod.id)),
        "{rules}"
    );
    assert!(
        nat_rules(node, "iptables").contains("-N CNI-"),
        "no iptables chain"
    );
    result
}

#[test]
fn our_del_removes_everything_the_go_bridge_made() {
    netns_tests::skip_unless_root!();
    let node = Node::new("sw-go-del");
    let conf = full_config(&node, "brsw1", "10.60.1.0/24");
    let a = node.pod("a");
    go_add(&node, &a, &conf);
    node.del(&a, &conf);
    assert!(a.ns.link(IFNAME).is_none(), "net1 left in the pod");
    assert_nothing_left(&node, "after our DEL of a Go attachment");
    node.del(&a, &conf);
    // A node that never ran our spoof check or masquerade gets no table of ours from a DEL.
    let rules = node.ruleset();
    assert!(
        !rules.contains("cni_bridge_spoofchk") && !rules.contains("cni_bridge_masquerade"),
        "{rules}"
    );
}

#[test]
fn the_iptables_chain_our_add_leaves_for_a_go_del_goes_with_our_del_and_gc() {
    netns_tests::skip_unless_root!();
    let node = Node::new("sw-marker");
    let mut conf = full_config(&node, "brsw8", "10.60.8.0/24");
    let (a, b) = (node.pod("a"), node.pod("b"));
    node.add(&a, &conf);
    node.add(&b, &conf);
    let chain = |id: &str| format!("CNI-{}", sha512_prefix(&format!("net-brsw8{id}"), 24));
    let rules = nat_rules(&node, "iptables");
    assert!(rules.contains(&format!("-N {}", chain(&a.id))), "{rules}");
    // Nothing jumps there: it changes no traffic.
    assert!(!rules.contains("-j CNI-"), "{rules}");

    node.del(&a, &conf);
    assert!(!nat_rules(&node, "iptables").contains(&chain(&a.id)));
    // b's DEL gets lost: GC finds its chain by the comment of its one rule.
    b.ns.delete().expect("delete b's netns");
    conf["cniVersion"] = json!("1.1.0");
    conf["cni.dev/valid-attachments"] = json!([]);
    let out = node.call_raw("GC", "", "", "", &conf, "");
    assert!(out.status.success(), "{}", describe_output(&out));
    let left: Vec<String> = traces(&node)
        .into_iter()
        .filter(|l| !l.starts_with("lease"))
        .collect();
    assert!(left.is_empty(), "left after GC:\n{}", left.join("\n"));
}

#[test]
fn our_del_cleans_up_a_go_attachment_whose_namespace_is_already_gone() {
    netns_tests::skip_unless_root!();
    // The Go plugin's own DEL leaks its iptables rules here: it finds them through the pod's
    // addresses.
    let node = Node::new("sw-go-gone");
    let conf = full_config(&node, "brsw2", "10.60.2.0/24");
    let a = node.pod("a");
    go_add(&node, &a, &conf);
    let (id, path) = (a.id.clone(), a.ns.path_str().to_string());
    a.ns.delete().expect("delete the pod's netns");
    let out = node.call_raw("DEL", &id, &path, IFNAME, &conf, "");
    assert!(out.status.success(), "{}", describe_output(&out));
    assert_nothing_left(&node, "after our DEL without the namespace");
}

#[test]
fn our_gc_removes_what_go_attachments_that_are_gone_left_behind() {
    netns_tests::skip_unless_root!();
    let node = Node::new("sw-go-gc");
    // static IPAM keeps no state: Debian's host-local 1.1.1 has no GC of its own.
    let static_ipam = |ip: &str| json!({"type": "static", "addresses": [{"address": ip}]});
    let mut conf = config(
        "brsw3",
        json!({"macspoofchk": true, "ipMasq": true, "ipam": static_ipam("10.60.3.2/24")}),
    );
    let (keep, lost) = (node.pod("keep"), node.pod("lost"));
    go_add(&node, &keep, &conf);
    let mut lost_conf = conf.clone();
    lost_conf["ipam"] = static_ipam("10.60.3.3/24");
    go_add(&node, &lost, &lost_conf);
    lost.ns.delete().expect("delete the lost pod's netns");
    // The kernel takes the veth away with the namespace, a moment later.
    let one_left = || node.host.new_veths().len() == 1;
    assert!(netns_tests::wait_for(
        std::time::Duration::from_secs(5),
        one_left
    ));

    conf["cniVersion"] = json!("1.1.0");
    conf["cni.dev/valid-attachments"] = json!([{"containerID": keep.id, "ifname": IFNAME}]);
    let out = node.call_raw("GC", "", "", "", &conf, "");
    assert!(out.status.success(), "{}", describe_output(&out));

    let left = traces(&node).join("\n");
    assert!(!left.contains(&lost.id), "{left}");
    assert!(
        left.contains(&format!("cni-br-iface-{}-{IFNAME}", keep.id)),
        "{left}"
    );
    let chain = |id: &str| format!("CNI-{}", sha512_prefix(&format!("net-brsw3{id}"), 24));
    let (keep_chain, lost_chain) = (chain(&keep.id), chain(&lost.id));
    assert!(left.contains(&keep_chain), "{left}");
    assert!(!left.contains(&lost_chain), "{left}");

    // And the one still listed goes with our DEL.
    conf["cniVersion"] = json!("1.0.0");
    conf.as_object_mut()
        .map(|c| c.remove("cni.dev/valid-attachments"));
    node.del(&keep, &conf);
    assert_nothing_left(&node, "after GC and DEL");
}

/// `printf %s TEXT | sha512sum`, first `n` hex digits: computed apart from the plugin's code.
fn sha512_prefix(text: &str, n: usize) -> String {
    let out = std::process::Command::new("sh")
        .args(["-c", "printf %s \"$1\" | sha512sum", "sh", text])
        .output()
        .expect("sha512sum");
    String::from_utf8_lossy(&out.stdout)[..n].to_string()
}

/// What a reference plugin from 1.6 on makes for one address with the nftables backend
/// (pkg/ip/ipmasq_nftables_linux.go): its table, chains and the attachment's rule.
fn newer_go_masquerade(
    network: &str,
    ifname: &str,
    container_id: &str,
    ip: &str,
    subnet: &str,
) -> String {
    let hash = format!(
        "{}-{}",
        sha512_prefix(network, 16),
        sha512_prefix(&format!("{ifname}:{container_id}"), 16)
    );
    let comment = format!("{hash}, net: {network}, if: {ifname}, id: {container_id}");
    let t = "inet cni_plugins_masquerade";
    format!(
        "add table {t} {{ comment \"Masquerading for plugins from github.com/containernetworking/plugins\" ; }}\n\
         add chain {t} masq_checks {{ comment \"Masquerade traffic from certain IPs to any (non-multicast) IP outside their subnet\" ; }}\n\
         add chain {t} postrouting {{ type nat hook postrouting priority 100 ; }}\n\
         flush chain {t} postrouting\n\
         add rule {t} postrouting ip daddr == 224.0.0.0/4 return\n\
         add rule {t} postrouting ip6 daddr == ff00::/8 return\n\
         add rule {t} postrouting goto masq_checks\n\
         add rule {t} masq_checks ip saddr == {ip} ip daddr != {subnet} masquerade comment \"{comment}\"\n"
    )
}

#[test]
fn our_del_and_gc_remove_the_nftables_masquerade_rules_of_newer_go_releases() {
    netns_tests::skip_unless_root!();
    let node = Node::new("sw-go-nft");
    let mut conf = config(
        "brsw4",
        json!({"ipMasq": true, "ipam": node.host_local("10.60.4.0/24")}),
    );
    let network = "net-brsw4";
    let (a, b, c) = (node.pod("a"), node.pod("b"), node.pod("c"));
    let ns = node.host.netns();
    for (pod, ip) in [(&a, "10.60.4.2"), (&b, "10.60.4.3"), (&c, "10.60.4.4")] {
        let script = newer_go_masquerade(network, IFNAME, &pod.id, ip, "10.60.4.0/24");
        let mut cmd = ns.command("nft");
        cmd.args(["-f", "-"]);
        let out = netns_tests::run_command(cmd, script.as_bytes());
        assert!(out.status.success(), "{}", describe_output(&out));
    }
    assert_eq!(node.ruleset().matches("masquerade comment").count(), 3);

    // DEL of a (gone) attachment of a: its rule only.
    node.del(&a, &conf);
    let rules = node.ruleset();
    assert_eq!(rules.matches("masquerade comment").count(), 2, "{rules}");
    assert!(!rules.contains(&a.id), "{rules}");

    // GC keeps b, the only one listed.
    conf["cniVersion"] = json!("1.1.0");
    conf["cni.dev/valid-attachments"] = json!([{"containerID": b.id, "ifname": IFNAME}]);
    let out = node.call_raw("GC", "", "", "", &conf, "");
    assert!(out.status.success(), "{}", describe_output(&out));
    let rules = node.ruleset();
    assert_eq!(rules.matches("masquerade comment").count(), 1, "{rules}");
    assert!(rules.contains(&b.id) && !rules.contains(&c.id), "{rules}");
}

#[test]
fn our_check_passes_for_a_go_attachment() {
    netns_tests::skip_unless_root!();
    let node = Node::new("sw-go-check");
    let conf = full_config(&node, "brsw5", "10.60.5.0/24");
    let a = node.pod("a");
    let result = go_add(&node, &a, &conf);
    let out = node.check(&a, &conf, &result);
    assert!(out.status.success(), "{}", describe_output(&out));
    // And it still notices a broken one.
    a.ns.exec_ok(
        "ip",
        &["link", "set", IFNAME, "address", "02:00:00:00:be:ef"],
    );
    assert!(!node.check(&a, &conf, &result).status.success());
}

#[test]
fn go_check_and_del_work_on_our_attachment_and_our_gc_removes_what_go_del_leaves() {
    netns_tests::skip_unless_root!();
    let node = Node::new("sw-ours-go");
    let mut conf = full_config(&node, "brsw6", "10.60.6.0/24");
    let a = node.pod("a");
    let result = node.add(&a, &conf);
    let mut check = conf.clone();
    check["prevResult"] = result.clone();
    go_ok(
        &node.call_go("CHECK", &a, &check),
        "CHECK of our attachment",
    );
    go_ok(&node.call_go("DEL", &a, &conf), "DEL of our attachment");
    assert!(a.ns.link(IFNAME).is_none(), "net1 left in the pod");
    // The Go plugin knows nothing of our nftables chains: they stay until our GC. The veth,
    // the lease and the iptables chain left for it are gone.
    let left = traces(&node);
    assert!(
        !left.is_empty()
            && left
                .iter()
                .all(|l| l.starts_with("nft: ") && !l.contains("CNI-")),
        "{}",
        left.join("\n")
    );
    conf["cniVersion"] = json!("1.1.0");
    conf["cni.dev/valid-attachments"] = json!([]);
    let out = node.call_raw("GC", "", "", "", &conf, "");
    assert!(out.status.success(), "{}", describe_output(&out));
    assert_nothing_left(&node, "after Go DEL and our GC");
}

#[test]
fn our_add_takes_an_address_whose_masquerade_a_go_del_left_behind() {
    netns_tests::skip_unless_root!();
    let node = Node::new("sw-reuse");
    // One address only: the second attachment gets the first one's.
    let mut ipam = node.host_local("10.60.7.0/24");
    ipam["rangeStart"] = json!("10.60.7.2");
    ipam["rangeEnd"] = json!("10.60.7.2");
    let conf = config("brsw7", json!({"ipMasq": true, "ipam": ipam}));
    let (a, b) = (node.pod("a"), node.pod("b"));
    node.add(&a, &conf);
    go_ok(&node.call_go("DEL", &a, &conf), "DEL of our attachment");
    let result = node.add(&b, &conf);
    assert_eq!(result["ips"][0]["address"], "10.60.7.2/24");
    let rules = node.ruleset();
    assert_eq!(rules.matches("masquerade comment").count(), 1, "{rules}");
    node.del(&b, &conf);
    assert_nothing_left(&node, "after the DEL");
}
