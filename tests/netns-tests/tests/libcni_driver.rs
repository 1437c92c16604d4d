//! Plugins driven through libcni (our Go driver over Debian's libcni 1.1.2), the code path of
//! containerd, CRI-O and Multus. Everything host-side happens in a throwaway host sandbox netns.
//! Run as root: `cargo test -p netns-tests`.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use netns_tests::{
    expect_failure, expect_success, files_under, host_local_leases, leftover_netns, unique_name,
    wait_for, HostSandbox, LibcniAttachment, Netns, PluginDir, PodIdentity, TempDir,
};
use serde_json::{json, Value};

const BRIDGE: &str = "cnitestbr0";
const IFNAME: &str = "net1";

/// A cniVersion 1.0.0 network list: Go `bridge` with host-local IPAM (state in `ipam_dir`),
/// followed by `chained` plugins.
fn bridge_conflist(network: &str, subnet: &str, ipam_dir: &Path, chained: &[Value]) -> Value {
    let mut plugins = vec![json!({
        "type": "bridge",
        "bridge": BRIDGE,
        "isGateway": true,
        "ipam": {
            "type": "host-local",
            "dataDir": ipam_dir,
            "ranges": [[{ "subnet": subnet }]]
        }
    })];
    plugins.extend(chained.iter().cloned());
    json!({ "cniVersion": "1.0.0", "name": network, "plugins": plugins })
}

/// The interface called `name` in an ADD result.
fn result_interface<'a>(result: &'a Value, name: &str) -> &'a Value {
    result["interfaces"]
        .as_array()
        .and_then(|ifs| ifs.iter().find(|i| i["name"] == name))
        .unwrap_or_else(|| panic!("no interface {name:?} in the ADD result: {result:#}"))
}

/// The gateway of the first IP in an ADD result.
fn result_gateway(result: &Value) -> IpAddr {
    result["ips"][0]["gateway"]
        .as_str()
        .and_then(|g| g.parse().ok())
        .unwrap_or_else(|| panic!("no ips[0].gateway in the ADD result: {result:#}"))
}

/// Checks that nothing of the attachment is left: no `net1` in the pod, no veth in the host
/// sandbox and none enslaved to the bridge, no libcni cache entry, no host-local lease.
fn assert_attachment_gone(
    when: &str,
    host: &HostSandbox,
    pod: Option<&Netns>,
    att: &LibcniAttachment,
    ipam_dir: &Path,
) {
    if let Some(pod) = pod {
        assert!(
            pod.link(IFNAME).is_none(),
            "{when}: {IFNAME} still exists in the pod netns"
        );
    }
    // veth teardown in the kernel can finish shortly after the DEL returns (or after a netns
    // is deleted), so give it a moment before judging.
    wait_for(Duration::from_secs(5), || host.new_veths().is_empty());
    host.assert_no_new_veths(when);
    let ports = host.ports_of(BRIDGE);
    assert!(
        ports.is_empty(),
        "{when}: ports left on {BRIDGE}: {:?}",
        ports.iter().map(|l| &l.ifname).collect::<Vec<_>>()
    );
    assert!(
        !att.cache_entry().exists(),
        "{when}: libcni cache entry {} still exists",
        att.cache_entry().display()
    );
    let leases = host_local_leases(ipam_dir, att.network_name());
    assert!(
        leases.is_empty(),
        "{when}: host-local still holds leases: {leases:?}"
    );
}

fn pod_identity(container_id: &str) -> PodIdentity {
    PodIdentity {
        namespace: "ns".to_owned(),
        name: "pod".to_owned(),
        infra_container_id: container_id.to_owned(),
        uid: "0b6a4d2e-5d1c-4bd4-9a0e-6a3b1c2d3e4f".to_owned(),
    }
}

/// A pod namespace and a throwaway host namespace, a conflist of Go `bridge` with host-local
/// followed by `chained` (built with the work dir at hand), and the libcni attachment of the pod
/// to it, with the CNI_ARGS Multus passes.
struct Fixture {
    att: LibcniAttachment,
    pod: Netns,
    host: HostSandbox,
    ipam_dir: PathBuf,
    container_id: String,
    work: TempDir,
    _plugins: PluginDir,
}

fn fixture(
    tag: &str,
    plugins: PluginDir,
    network: &str,
    subnet: &str,
    chained: impl FnOnce(&TempDir) -> Vec<Value>,
) -> Fixture {
    let host = HostSandbox::new(tag);
    let pod = Netns::new(&format!("{tag}-pod"));
    let work = TempDir::new(tag);
    let ipam_dir = work.join("ipam");
    let chained = chained(&work);
    let conflist = work.write_json(
        "net.conflist",
        &bridge_conflist(network, subnet, &ipam_dir, &chained),
    );
    let container_id = unique_name(tag);
    let att = LibcniAttachment::new(
        &conflist,
        &[plugins.path()],
        &work.join("cache"),
        pod.path_str(),
        &container_id,
        IFNAME,
    )
    .in_sandbox(&host)
    .cni_args(&pod_identity(&container_id).multus_cni_args());
    Fixture {
        att,
        pod,
        host,
        ipam_dir,
        container_id,
        work,
        _plugins: plugins,
    }
}

#[test]
fn go_bridge_then_our_tuning_sets_mac_through_runtime_config() {
    netns_tests::skip_unless_root!();
    let tag = "bridge-tuning-mac";
    // Go bridge + host-local, OUR tuning (fails here, with build instructions, if not built).
    let plugins = PluginDir::new(tag)
        .with_go(&["bridge", "host-local"])
        .with_ours(&["tuning"]);
    bridge_then_tuning_sets_mac_through_runtime_config(tag, plugins);
}

#[test]
fn our_bridge_then_our_tuning_sets_mac_through_runtime_config() {
    netns_tests::skip_unless_root!();
    let tag = "our-bridge-tuning-mac";
    let plugins = PluginDir::new(tag)
        .with_go(&["host-local"])
        .with_ours(&["bridge", "tuning"]);
    bridge_then_tuning_sets_mac_through_runtime_config(tag, plugins);
}

/// A conflist of `bridge` (with host-local) then `tuning` with the `mac` capability, through
/// libcni with Multus's CNI_ARGS: the pod's interface gets the MAC; CHECK passes; DEL, twice,
/// leaves nothing.
fn bridge_then_tuning_sets_mac_through_runtime_config(tag: &str, plugins: PluginDir) {
    const MAC: &str = "c2:11:22:33:44:55";
    let Fixture {
        att,
        pod,
        host,
        ipam_dir,
        container_id,
        work,
        _plugins,
    } = fixture(tag, plugins, "cnitest-mac", "10.61.0.0/24", |work| {
        vec![json!({
            "type": "tuning",
            "capabilities": { "mac": true },
            // Go tuning keeps its restore state here; default would be /run/cni/tuning on the host.
            "dataDir": work.join("tuning"),
        })]
    });
    let att = att.cap_args(json!({ "mac": MAC }));
    let tuning_dir = work.join("tuning");
    let pod_name = pod.name().to_owned();

    // What CRI-O does at config load: VERSION on every plugin, collecting capabilities.
    let caps = expect_success(&att.validate(), "libcni ValidateNetworkList");
    let caps: Vec<String> = serde_json::from_str(&caps).expect("validate prints a JSON list");
    assert!(caps.iter().any(|c| c == "mac"), "capabilities: {caps:?}");

    // ADD
    let result = att.add_ok();
    assert_eq!(result["cniVersion"], "1.0.0", "{result:#}");
    let net1 = result_interface(&result, IFNAME);
    assert_eq!(net1["mac"], MAC, "ADD result: {result:#}");
    assert_eq!(net1["sandbox"], pod.path_str(), "ADD result: {result:#}");
    let link = pod.link(IFNAME).expect("net1 exists in the pod after ADD");
    assert_eq!(link.mac().as_deref(), Some(MAC), "{link:?}");
    assert!(link.is_up(), "{link:?}");
    let addrs = pod.addresses(IFNAME);
    assert!(
        addrs.iter().any(|a| a.starts_with("10.61.0.")),
        "addresses of net1: {addrs:?}"
    );

    // Host side: exactly one veth, on the bridge, in the sandbox only.
    let veths = host.new_veths();
    assert_eq!(veths.len(), 1, "veths in the host sandbox: {veths:?}");
    assert_eq!(veths[0].master.as_deref(), Some(BRIDGE), "{:?}", veths[0]);
    result_interface(&result, &veths[0].ifname);

    // State: libcni cache entry and the lease, owned by our container ID.
    assert!(
        att.cache_entry().is_file(),
        "missing {}",
        att.cache_entry().display()
    );
    let leases = host_local_leases(&ipam_dir, att.network_name());
    assert_eq!(leases.len(), 1, "{leases:?}");
    assert!(leases[0].1.contains(&container_id), "{leases:?}");

    // Traffic only to the gateway address on the sandbox's bridge (a namespace we created).
    let ping = pod.ping(result_gateway(&result));
    expect_success(&ping, "ping from the pod to the bridge gateway");

    // CHECK, DEL, DEL again.
    expect_success(&att.check(), "libcni CHECK");
    expect_success(&att.del(), "libcni DEL");
    assert_attachment_gone("after DEL", &host, Some(&pod), &att, &ipam_dir);
    let tuning_left = files_under(&tuning_dir);
    assert!(
        tuning_left.is_empty(),
        "tuning state left after DEL: {tuning_left:?}"
    );
    expect_success(&att.del(), "second libcni DEL");
    assert_attachment_gone("after the second DEL", &host, Some(&pod), &att, &ipam_dir);

    pod.delete().expect("pod netns deleted");
    assert!(leftover_netns(&pod_name).is_empty());
}

#[test]
fn go_bridge_alone_through_libcni_leaves_nothing_behind() {
    netns_tests::skip_unless_root!();
    let tag = "bridge-alone";
    let plugins = PluginDir::new(tag).with_go(&["bridge", "host-local"]);
    let Fixture {
        att,
        pod,
        host,
        ipam_dir,
        // Bound, not `..`: the work dir holds the conflist and must live to the end.
        work: _work,
        _plugins,
        ..
    } = fixture(tag, plugins, "cnitest-plain", "10.62.0.0/24", |_| {
        Vec::new()
    });
    let pod_name = pod.name().to_owned();
    let host_name = host.netns().name().to_owned();

    let result = att.add_ok();
    let net1 = result_interface(&result, IFNAME);
    let link = pod.link(IFNAME).expect("net1 exists in the pod after ADD");
    assert_eq!(link.mac(), net1["mac"].as_str().map(str::to_owned));
    assert_eq!(host.new_veths().len(), 1);
    assert!(host.link(BRIDGE).is_some(), "bridge created in the sandbox");
    assert!(att.cache_entry().is_file());
    assert_eq!(host_local_leases(&ipam_dir, att.network_name()).len(), 1);
    expect_success(
        &pod.ping(result_gateway(&result)),
        "ping from the pod to the bridge gateway",
    );

    expect_success(&att.check(), "libcni CHECK");
    expect_success(&att.del(), "libcni DEL");
    assert_attachment_gone("after DEL", &host, Some(&pod), &att, &ipam_dir);
    expect_success(&att.del(), "second libcni DEL");

    pod.delete().expect("pod netns deleted");
    drop(host);
    assert!(leftover_netns(&pod_name).is_empty());
    assert!(leftover_netns(&host_name).is_empty());
}

#[test]
fn go_bridge_del_after_pod_netns_is_gone_releases_everything() {
    netns_tests::skip_unless_root!();
    let tag = "bridge-netns-gone";
    let plugins = PluginDir::new(tag).with_go(&["bridge", "host-local"]);
    let Fixture {
        att,
        pod,
        host,
        ipam_dir,
        // Bound, not `..`: the work dir holds the conflist and must live to the end.
        work: _work,
        _plugins,
        ..
    } = fixture(tag, plugins, "cnitest-gone", "10.63.0.0/24", |_| Vec::new());

    att.add_ok();
    assert_eq!(host_local_leases(&ipam_dir, att.network_name()).len(), 1);

    // The pod is gone before the runtime gets to DEL (CNI_NETNS now names nothing).
    pod.delete().expect("pod netns deleted");
    expect_success(&att.del(), "libcni DEL after the pod netns is gone");
    assert_attachment_gone("after DEL without netns", &host, None, &att, &ipam_dir);
    expect_success(&att.del(), "second libcni DEL");
}

#[test]
fn libcni_rejects_invalid_ifname_and_container_id_before_calling_plugins() {
    netns_tests::skip_unless_root!();
    let tag = "libcni-validation";
    let plugins = PluginDir::new(tag).with_go(&["bridge", "host-local"]);
    let host = HostSandbox::new(tag);
    let pod = Netns::new(&format!("{tag}-pod"));
    let work = TempDir::new(tag);
    let ipam_dir = work.join("ipam");
    let conflist = work.write_json(
        "net.conflist",
        &bridge_conflist("cnitest-invalid", "10.64.0.0/24", &ipam_dir, &[]),
    );
    let cache = work.join("cache");
    let good_id = unique_name(tag);

    // (container ID, ifname, expected CNI error code, what libcni says)
    let cases = [
        (good_id.as_str(), "", 4, "interface name is empty"),
        (good_id.as_str(), "net1-too-long-xx", 4, "too long"),
        (good_id.as_str(), "net/1", 4, "contains / or :"),
        (good_id.as_str(), "net:1", 4, "contains / or :"),
        (good_id.as_str(), "net 1", 4, "whitespace"),
        (good_id.as_str(), "..", 4, ". or .."),
        ("bad id!", IFNAME, 4, "invalid characters in containerID"),
        ("", IFNAME, 3, "missing containerID"),
    ];
    for (container_id, ifname, code, message) in cases {
        let att = LibcniAttachment::new(
            &conflist,
            &[plugins.path()],
            &cache,
            pod.path_str(),
            container_id,
            ifname,
        )
        .in_sandbox(&host);
        let what = format!("ADD with container ID {container_id:?} and ifname {ifname:?}");
        let stderr = expect_failure(&att.add(), &what);
        assert!(
            stderr.contains(message) && stderr.contains(&format!("[CNI error code {code}]")),
            "{what}: expected code {code} and {message:?}, got: {stderr}"
        );
        // No plugin ran: no bridge, no veth, no lease, no cache entry.
        let created = host.new_links();
        assert!(created.is_empty(), "{what}: links created: {created:?}");
        assert!(
            host_local_leases(&ipam_dir, att.network_name()).is_empty(),
            "{what}: a lease was taken"
        );
        assert!(
            files_under(&cache).is_empty(),
            "{what}: libcni cached something"
        );
        assert_eq!(pod.links().len(), 1, "{what}: the pod netns gained a link");
    }
}

#[test]
fn libcni_reports_a_missing_plugin_binary() {
    netns_tests::skip_unless_root!();
    let tag = "libcni-missing";
    let plugins = PluginDir::new(tag).with_go(&["bridge", "host-local"]);
    let host = HostSandbox::new(tag);
    let pod = Netns::new(&format!("{tag}-pod"));
    let work = TempDir::new(tag);
    let ipam_dir = work.join("ipam");
    let conflist = work.write_json(
        "net.conflist",
        &bridge_conflist(
            "cnitest-missing",
            "10.65.0.0/24",
            &ipam_dir,
            &[json!({ "type": "cnitest-no-such-plugin" })],
        ),
    );
    let container_id = unique_name(tag);
    let att = LibcniAttachment::new(
        &conflist,
        &[plugins.path()],
        &work.join("cache"),
        pod.path_str(),
        &container_id,
        IFNAME,
    )
    .in_sandbox(&host);

    let stderr = expect_failure(&att.validate(), "validate with a missing plugin");
    assert!(stderr.contains("cnitest-no-such-plugin"), "{stderr}");

    // libcni runs the bridge, fails on the missing second plugin and caches nothing.
    let stderr = expect_failure(&att.add(), "ADD with a missing chained plugin");
    assert!(
        stderr.contains("failed to find plugin \"cnitest-no-such-plugin\""),
        "{stderr}"
    );
    assert!(!att.cache_entry().exists());
    // DEL goes in reverse order, so it stops at the missing plugin too (the bridge's veth and
    // lease stay until the plugin is installed); the sandbox and temp dir guards remove them.
    let stderr = expect_failure(&att.del(), "DEL with a missing chained plugin");
    assert!(stderr.contains("cnitest-no-such-plugin"), "{stderr}");
}
