//! Self-tests of the harness: namespace guards, the host sandbox and direct plugin execution
//! (env + stdin, as a runtime does), validated against Debian's Go reference plugins.
//! Run as root: `cargo test -p netns-tests`.

use netns_tests::{
    expect_failure, expect_success, go_plugin_dir, host_local_leases, leftover_netns, netns_exists,
    run_plugin, run_plugin_in, unique_name, HostSandbox, Netns, PluginDir, TempDir,
};
use serde_json::{json, Value};

#[test]
fn netns_guard_creates_and_removes_the_namespace() {
    netns_tests::skip_unless_root!();
    let ns = Netns::new("guard");
    let name = ns.name().to_owned();
    assert!(netns_exists(&name));
    assert_eq!(ns.path_str(), format!("/run/netns/{name}"));
    let links = ns.links();
    assert_eq!(links.len(), 1, "a fresh netns has only lo: {links:?}");
    assert!(links[0].is_up(), "lo is brought up: {links:?}");
    drop(ns);
    assert!(!netns_exists(&name));
    assert!(leftover_netns(&name).is_empty());

    // Also on a panic inside the test body.
    let name = std::panic::catch_unwind(|| {
        let ns = Netns::new("guard-panic");
        let name = ns.name().to_owned();
        std::panic::panic_any(name);
    })
    .expect_err("the closure panics")
    .downcast::<String>()
    .expect("the panic payload is the netns name");
    assert!(!netns_exists(&name), "{name} survived a panic");
}

#[test]
fn run_plugin_answers_version_probe_like_libcni_sends_it() {
    // libcni's VERSION probe: dummy env values and a cniVersion on stdin.
    let out = run_plugin(
        &go_plugin_dir(),
        "bridge",
        &[
            ("CNI_COMMAND", "VERSION"),
            ("CNI_NETNS", "dummy"),
            ("CNI_IFNAME", "dummy"),
            ("CNI_PATH", "dummy"),
        ],
        r#"{"cniVersion":"1.0.0"}"#,
    );
    let stdout = expect_success(&out, "bridge VERSION");
    let v: Value = serde_json::from_str(&stdout).expect("VERSION prints JSON");
    let supported = v["supportedVersions"]
        .as_array()
        .expect("supportedVersions");
    assert!(supported.iter().any(|s| s == "1.0.0"), "{v}");
}

#[test]
fn run_plugin_in_sandbox_drives_go_bridge_add_check_del() {
    netns_tests::skip_unless_root!();
    let tag = "direct-bridge";
    let plugins = PluginDir::new(tag).with_go(&["bridge", "host-local"]);
    let host = HostSandbox::new(tag);
    let pod = Netns::new(&format!("{tag}-pod"));
    let work = TempDir::new(tag);
    let ipam_dir = work.join("ipam");
    let container_id = unique_name(tag);
    let plugin_path = plugins.path().to_str().expect("ASCII temp path").to_owned();
    let conf = json!({
        "cniVersion": "1.0.0",
        "name": "cnitest-direct",
        "type": "bridge",
        "bridge": "cnitestbr1",
        "ipam": {
            "type": "host-local",
            "dataDir": ipam_dir,
            "ranges": [[{ "subnet": "10.66.0.0/24" }]]
        }
    });
    let env = |verb: &'static str| {
        vec![
            ("CNI_COMMAND", verb),
            ("CNI_CONTAINERID", container_id.as_str()),
            ("CNI_NETNS", pod.path_str()),
            ("CNI_IFNAME", "eth1"),
            ("CNI_ARGS", "IgnoreUnknown=1;K8S_POD_NAME=p"),
            ("CNI_PATH", plugin_path.as_str()),
        ]
    };

    let out = run_plugin_in(
        &host,
        plugins.path(),
        "bridge",
        &env("ADD"),
        &conf.to_string(),
    );
    let result: Value =
        serde_json::from_str(&expect_success(&out, "bridge ADD")).expect("ADD prints JSON");
    assert!(pod.link("eth1").is_some());
    assert_eq!(host.new_veths().len(), 1);
    assert_eq!(host_local_leases(&ipam_dir, "cnitest-direct").len(), 1);

    // CHECK needs prevResult, as a runtime supplies it.
    let mut with_prev = conf.clone();
    with_prev["prevResult"] = result;
    let out = run_plugin_in(
        &host,
        plugins.path(),
        "bridge",
        &env("CHECK"),
        &with_prev.to_string(),
    );
    expect_success(&out, "bridge CHECK");

    // Without CNI_NETNS, CHECK must fail (Go skel: code 4).
    let no_netns: Vec<_> = env("CHECK")
        .into_iter()
        .filter(|(k, _)| *k != "CNI_NETNS")
        .collect();
    let out = run_plugin_in(
        &host,
        plugins.path(),
        "bridge",
        &no_netns,
        &with_prev.to_string(),
    );
    expect_failure(&out, "bridge CHECK without CNI_NETNS");
    let err: Value = serde_json::from_slice(&out.stdout).expect("the error is JSON on stdout");
    assert_eq!(err["code"], 4, "{err}");

    for round in ["DEL", "second DEL"] {
        let out = run_plugin_in(
            &host,
            plugins.path(),
            "bridge",
            &env("DEL"),
            &with_prev.to_string(),
        );
        expect_success(&out, &format!("bridge {round}"));
        assert!(pod.link("eth1").is_none());
        host.assert_no_new_veths(round);
        assert!(host_local_leases(&ipam_dir, "cnitest-direct").is_empty());
    }
}
