//! tuning in real network namespaces: what ADD sets, what DEL restores, CHECK, GC, rollback.

mod common;

use common::{call, stdout_json, Attachment, IFNAME};
use netns_tests::{expect_failure, expect_success, go_plugin_dir};
use serde_json::{json, Value};

#[test]
fn add_sets_link_attributes_and_del_restores_them() {
    netns_tests::skip_unless_root!();
    let a = Attachment::new("tuning-link");
    let before = a.ns.link(IFNAME).expect("net1 exists");
    let conf = a.config(json!({
        "mac": "02:11:22:33:44:55", "mtu": 1400, "promisc": true, "allmulti": true, "txQLen": 5000
    }));

    expect_success(&a.call("ADD", &conf), "ADD");
    let set = a.ns.link(IFNAME).expect("net1 exists");
    assert_eq!(set.mac().as_deref(), Some("02:11:22:33:44:55"));
    assert_eq!(set.mtu, Some(1400));
    assert!(set.promiscuity.unwrap_or(0) > 0, "promisc not set");
    assert!(
        set.flags.iter().any(|f| f == "ALLMULTI"),
        "allmulti not set"
    );
    assert_eq!(set.other["txqlen"], 5000);

    expect_success(&a.call("DEL", &conf), "DEL");
    let after = a.ns.link(IFNAME).expect("net1 exists");
    assert_eq!(after.mac(), before.mac());
    assert_eq!(after.mtu, before.mtu);
    assert_eq!(after.promiscuity, before.promiscuity);
    assert_eq!(after.flags, before.flags);
    assert_eq!(after.other["txqlen"], before.other["txqlen"]);
    assert!(
        a.state_files().is_empty(),
        "state left: {:?}",
        a.state_files()
    );
}

#[test]
fn add_writes_sysctls_in_the_container_only_and_del_restores_them() {
    netns_tests::skip_unless_root!();
    let a = Attachment::new("tuning-sysctl");
    let host_forwarding = std::fs::read_to_string("/proc/sys/net/ipv4/ip_forward").expect("host");
    let before_iface = a.sysctl("net/ipv4/conf/net1/forwarding");
    let before_ns = a.sysctl("net/ipv4/ip_forward");
    let flipped = |v: &str| if v == "1" { "0" } else { "1" };
    let conf = a.config(json!({"sysctl": {
        "net.ipv4.conf.IFNAME.forwarding": flipped(&before_iface),
        "net.ipv4.ip_forward": flipped(&before_ns),
    }}));

    expect_success(&a.call("ADD", &conf), "ADD");
    assert_eq!(
        a.sysctl("net/ipv4/conf/net1/forwarding"),
        flipped(&before_iface)
    );
    assert_eq!(a.sysctl("net/ipv4/ip_forward"), flipped(&before_ns));
    assert_eq!(
        std::fs::read_to_string("/proc/sys/net/ipv4/ip_forward").expect("host"),
        host_forwarding,
        "the host's sysctl changed"
    );

    expect_success(&a.call("DEL", &conf), "DEL");
    assert_eq!(a.sysctl("net/ipv4/conf/net1/forwarding"), before_iface);
    assert_eq!(a.sysctl("net/ipv4/ip_forward"), before_ns);
}

#[test]
fn add_passes_prev_result_on_with_the_new_mac() {
    netns_tests::skip_unless_root!();
    let a = Attachment::new("tuning-prev");
    for version in ["0.3.1", "0.4.0", "1.0.0", "1.1.0"] {
        let mut conf = a.config(json!({"mac": "02:00:00:00:00:07"}));
        conf["cniVersion"] = json!(version);
        conf["prevResult"] = a.prev_result(version);
        let out = a.call("ADD", &conf);
        expect_success(&out, "ADD");
        let result = stdout_json(&out);
        assert_eq!(result["cniVersion"], version);
        assert_eq!(result["interfaces"][0]["mac"], "02:00:00:00:00:07");
        assert_eq!(result["ips"][0]["address"], "10.99.0.2/24");
        expect_success(&a.call("DEL", &conf), "DEL");
    }
}

#[test]
fn check_passes_after_add_and_fails_when_the_mtu_drifts() {
    netns_tests::skip_unless_root!();
    let a = Attachment::new("tuning-check");
    let conf = a.config(json!({"mtu": 1300, "sysctl": {"net.ipv4.conf.IFNAME.forwarding": "1"}}));
    let out = a.call("ADD", &conf);
    expect_success(&out, "ADD");
    let mut check_conf = conf.clone();
    check_conf["prevResult"] = stdout_json(&out);

    expect_success(&a.call("CHECK", &check_conf), "CHECK right after ADD");
    a.ns.exec_ok("ip", &["link", "set", IFNAME, "mtu", "1280"]);
    let out = a.call("CHECK", &check_conf);
    expect_failure(&out, "CHECK after the mtu drifted");
    assert!(stdout_json(&out)["msg"]
        .as_str()
        .unwrap_or_default()
        .contains("mtu"));
    expect_success(&a.call("DEL", &conf), "DEL");
}

#[test]
fn del_succeeds_when_the_netns_is_gone_and_forgets_the_state() {
    netns_tests::skip_unless_root!();
    let a = Attachment::new("tuning-gone");
    let conf = a.config(json!({"mtu": 1400}));
    expect_success(&a.call("ADD", &conf), "ADD");
    assert_eq!(a.state_files().len(), 1);
    let path = a.ns.path_str().to_string();
    let Attachment {
        ns,
        data_dir,
        container_id,
    } = a;
    ns.delete().expect("netns deleted");

    let out = call("DEL", &container_id, &path, &conf, &[]);
    expect_success(&out, "DEL after the netns was deleted");
    assert!(netns_tests::files_under(data_dir.path()).is_empty());
    expect_success(
        &call("DEL", &container_id, "", &conf, &[]),
        "DEL without a netns",
    );
}

#[test]
fn del_keeps_an_unreadable_state_file_and_succeeds_as_the_go_plugin_does() {
    netns_tests::skip_unless_root!();
    let a = Attachment::new("tuning-corrupt-del");
    // 1.0.0, which every Go release under test speaks (Debian's 1.1.1 stops there).
    let mut conf = a.config(json!({"mtu": 1400}));
    conf["cniVersion"] = json!("1.0.0");
    conf["prevResult"] = a.prev_result("1.0.0");
    expect_success(&a.call("ADD", &conf), "ADD");
    let [state] = a.state_files().try_into().expect("one state file");
    let path = a.data_dir.path().join(&state);
    let go = netns_tests::go_reference("tuning");
    let go_dir = go.parent().expect("the Go tuning has a directory");
    let label = format!("Go tuning {}", netns_tests::go_release_label(&go));
    // The same corrupt file for each: what each DEL does with it, and whether it is still there.
    let outcome = |out: std::process::Output| {
        std::fs::read_to_string(&path).ok().map(|left| {
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            (out.status.success(), left, stderr)
        })
    };
    std::fs::write(&path, "{not json").expect("corrupt the state");
    let ours = outcome(a.call("DEL", &conf));
    std::fs::write(&path, "{not json").expect("corrupt the state");
    let theirs = outcome(call_go_in(go_dir, &a, "DEL", &conf));

    let (ok, left, stderr) = ours.expect("our DEL removed the file");
    assert!(ok, "our DEL failed: {stderr}");
    assert_eq!(left, "{not json");
    assert!(
        stderr.contains("is corrupt") && stderr.contains("kept"),
        "not reported: {stderr}"
    );
    let (ok, left, stderr) = theirs.unwrap_or_else(|| panic!("the {label} DEL removed the file"));
    assert!(ok, "the {label} DEL failed: {stderr}");
    assert_eq!(left, "{not json", "{label}");
}

#[test]
fn add_sets_an_unreadable_earlier_backup_aside_instead_of_writing_over_it() {
    netns_tests::skip_unless_root!();
    let a = Attachment::new("tuning-corrupt-add");
    let conf = a.config(json!({"mtu": 1400}));
    expect_success(&a.call("ADD", &conf), "ADD");
    let [state] = a.state_files().try_into().expect("one state file");
    std::fs::write(a.data_dir.path().join(&state), "{not json").expect("corrupt the state");
    let out = a.call("ADD", &conf);
    expect_success(&out, "ADD over an unreadable backup");
    assert!(String::from_utf8_lossy(&out.stderr).contains("is corrupt"));
    let aside = a
        .data_dir
        .path()
        .join(format!("{}.unreadable", state.display()));
    assert_eq!(
        std::fs::read_to_string(&aside).expect("set aside"),
        "{not json"
    );
    expect_success(&a.call("DEL", &conf), "DEL");
}

#[test]
fn gc_leaves_unreadable_state_files() {
    netns_tests::skip_unless_root!();
    let (keep, _lose, mut conf, _) = two_attachments_sharing_a_data_dir("tuning-corrupt-gc");
    let dir = keep.data_dir.path();
    let mut before = netns_tests::files_under(dir);
    for file in &before {
        std::fs::write(dir.join(file), "{not json").expect("corrupt the state");
    }
    conf.as_object_mut().map(|c| c.remove("prevResult"));
    conf["cni.dev/valid-attachments"] =
        json!([{"containerID": keep.container_id, "ifname": IFNAME}]);
    expect_success(&call("GC", "", "", &conf, &[]), "GC");
    // The directory is shared: an unreadable file may be another network's live attachment.
    let mut left = netns_tests::files_under(dir);
    before.sort();
    left.sort();
    assert_eq!(left, before);
}

#[test]
fn gc_never_removes_files_it_did_not_write() {
    netns_tests::skip_unless_root!();
    let a = Attachment::new("tuning-gc-foreign");
    let dir = a.data_dir.path();
    std::fs::create_dir_all(dir).expect("data dir");
    let foreign = [
        ("passwd", "root:x:0:0:root:/root:/bin/bash\n"),
        ("bridge", "\x7fELF not a state file"),
        ("10-net.conflist", "{}"),
        ("other_net1.json", "{\"network\": 7}"),
        (".hidden.tmp", "x"),
    ];
    for (name, content) in foreign {
        std::fs::write(dir.join(name), content).expect("foreign file");
    }
    let mut conf = a.config(json!({}));
    conf.as_object_mut().map(|c| c.remove("prevResult"));
    conf["cni.dev/valid-attachments"] = json!([]);
    expect_success(&call("GC", "", "", &conf, &[]), "GC");
    for (name, content) in foreign {
        let now = std::fs::read_to_string(dir.join(name));
        assert_eq!(now.ok().as_deref(), Some(content), "{name}");
    }
}

#[test]
fn del_succeeds_when_the_link_is_gone_and_twice() {
    netns_tests::skip_unless_root!();
    let a = Attachment::new("tuning-nolink");
    let conf = a.config(json!({"mtu": 1400}));
    expect_success(&a.call("ADD", &conf), "ADD");
    a.ns.exec_ok("ip", &["link", "del", IFNAME]);
    expect_success(&a.call("DEL", &conf), "DEL without the link");
    expect_success(&a.call("DEL", &conf), "second DEL");
    assert!(a.state_files().is_empty());
}

#[test]
fn failed_add_rolls_back_what_it_already_changed() {
    netns_tests::skip_unless_root!();
    let a = Attachment::new("tuning-rollback");
    // net1 as a macvlan, whose MTU cannot exceed its parent's 1500: the mac and the sysctl are
    // applied, then the kernel refuses the MTU, which is in range for the config.
    a.ns.exec_ok("ip", &["link", "del", IFNAME]);
    a.ns.exec_ok(
        "ip",
        &[
            "link", "add", "parent1", "type", "veth", "peer", "name", "parent2",
        ],
    );
    a.ns.exec_ok(
        "ip",
        &[
            "link", "add", IFNAME, "link", "parent1", "type", "macvlan", "mode", "bridge",
        ],
    );
    a.ns.exec_ok("ip", &["link", "set", IFNAME, "up"]);
    let before = a.ns.link(IFNAME).expect("net1");
    let before_fwd = a.sysctl("net/ipv4/conf/net1/forwarding");
    let conf = a.config(json!({
        "mac": "02:aa:bb:cc:dd:ee",
        "mtu": 9000,
        "sysctl": {"net.ipv4.conf.IFNAME.forwarding": if before_fwd == "1" { "0" } else { "1" }}
    }));
    let out = a.call("ADD", &conf);
    expect_failure(&out, "ADD with an MTU the kernel refuses");
    assert!(stdout_json(&out)["msg"]
        .as_str()
        .unwrap_or_default()
        .contains("mtu"));
    let after = a.ns.link(IFNAME).expect("net1");
    assert_eq!(after.mac(), before.mac(), "mac not rolled back");
    assert_eq!(
        a.sysctl("net/ipv4/conf/net1/forwarding"),
        before_fwd,
        "sysctl not rolled back"
    );
    assert!(a.state_files().is_empty(), "state left after a failed ADD");
}

#[test]
fn gc_forgets_only_this_networks_attachments_not_in_the_valid_list() {
    netns_tests::skip_unless_root!();
    let (keep, _lose, mut conf, lose_conf) = two_attachments_sharing_a_data_dir("tuning-gc");
    let dir = keep.data_dir.path();
    let mut other_net = lose_conf.clone();
    other_net["name"] = json!("othernet");
    let other = Attachment::new("tuning-gc-other");
    other_net["prevResult"] = other.prev_result("1.1.0");
    expect_success(&other.call("ADD", &other_net), "ADD on another network");
    assert_eq!(netns_tests::files_under(dir).len(), 3);

    conf.as_object_mut().map(|c| c.remove("prevResult"));
    conf["cni.dev/valid-attachments"] =
        json!([{"containerID": keep.container_id, "ifname": IFNAME}]);
    let out = call("GC", "", "", &conf, &[]);
    expect_success(&out, "GC");
    assert!(out.stdout.is_empty(), "GC printed something");
    let mut left: Vec<String> = netns_tests::files_under(dir)
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    left.sort();
    let mut expected = vec![
        format!("{}_{IFNAME}.json", keep.container_id),
        format!("{}_{IFNAME}.json", other.container_id),
    ];
    expected.sort();
    assert_eq!(left, expected);
}

#[test]
fn mac_precedence_is_args_cni_over_runtime_config_over_cni_args_over_config() {
    netns_tests::skip_unless_root!();
    let a = Attachment::new("tuning-macprec");
    let mut conf = a.config(json!({"mac": "02:00:00:00:00:01"}));
    let env = [("CNI_ARGS", "IgnoreUnknown=1;MAC=02:00:00:00:00:02")];
    let mac_after_add = |conf: &Value| {
        expect_success(&a.call_with("ADD", conf, &env), "ADD");
        let mac = a.ns.link(IFNAME).and_then(|l| l.mac());
        expect_success(&a.call("DEL", conf), "DEL");
        mac.unwrap_or_default()
    };
    assert_eq!(mac_after_add(&conf), "02:00:00:00:00:02");
    conf["runtimeConfig"] = json!({"mac": "02:00:00:00:00:03"});
    assert_eq!(mac_after_add(&conf), "02:00:00:00:00:03");
    conf["args"] = json!({"cni": {"mac": "02:00:00:00:00:04"}});
    assert_eq!(mac_after_add(&conf), "02:00:00:00:00:04");
}

/// Debian's Go tuning 1.1.1 (it speaks up to 1.0.0), called like ours, same state directory.
fn call_go(a: &Attachment, verb: &str, conf: &Value) -> std::process::Output {
    call_go_in(&go_plugin_dir(), a, verb, conf)
}

/// The Go tuning in `dir`, called like ours, same state directory.
fn call_go_in(
    dir: &std::path::Path,
    a: &Attachment,
    verb: &str,
    conf: &Value,
) -> std::process::Output {
    netns_tests::run_plugin(
        dir,
        "tuning",
        &[
            ("CNI_COMMAND", verb),
            ("CNI_CONTAINERID", &a.container_id),
            ("CNI_NETNS", a.ns.path_str()),
            ("CNI_IFNAME", IFNAME),
            ("CNI_PATH", "/usr/lib/cni"),
        ],
        &conf.to_string(),
    )
}

/// Everything either implementation sets, in a 1.0.0 config; the sysctl value differs from
/// the current one.
fn switch_config(a: &Attachment, with_txqlen: bool) -> Value {
    let fwd = if a.sysctl("net/ipv4/conf/net1/forwarding") == "1" {
        "0"
    } else {
        "1"
    };
    let mut conf = a.config(json!({
        "mtu": 1234, "mac": "02:12:34:56:78:9a", "promisc": true, "allmulti": true,
        "sysctl": {"net.ipv4.conf.IFNAME.forwarding": fwd}
    }));
    if with_txqlen {
        conf["txQLen"] = json!(4321);
    }
    conf["cniVersion"] = json!("1.0.0");
    conf["prevResult"] = a.prev_result("1.0.0");
    conf
}

/// What tuning may change on net1, for before/after comparisons.
fn link_state(a: &Attachment) -> (Option<String>, Option<u32>, Option<u32>, bool, Value) {
    let l = a.ns.link(IFNAME).expect("net1");
    let allmulti = l.flags.iter().any(|f| f == "ALLMULTI");
    (
        l.mac(),
        l.mtu,
        l.promiscuity,
        allmulti,
        l.other["txqlen"].clone(),
    )
}

#[test]
fn our_check_and_del_work_on_state_the_reference_plugin_saved() {
    netns_tests::skip_unless_root!();
    let a = Attachment::new("tuning-fromgo");
    let before = link_state(&a);
    let fwd_before = a.sysctl("net/ipv4/conf/net1/forwarding");
    let conf = switch_config(&a, false);
    let out = call_go(&a, "ADD", &conf);
    expect_success(&out, "Go tuning ADD");
    assert_eq!(a.ns.link(IFNAME).expect("net1").mtu, Some(1234));
    assert_eq!(a.state_files().len(), 1, "Go saved no state");

    let mut check = conf.clone();
    check["prevResult"] = stdout_json(&out);
    expect_success(&a.call("CHECK", &check), "our CHECK of the Go attachment");
    // Its state names no network, and the directory is shared by every network: GC, which is
    // about one network, cannot tell whose it is and leaves it to DEL.
    let mut gc = conf.clone();
    gc["cniVersion"] = json!("1.1.0");
    gc.as_object_mut().map(|c| c.remove("prevResult"));
    gc["cni.dev/valid-attachments"] = json!([]);
    expect_success(&call("GC", "", "", &gc, &[]), "our GC");
    assert_eq!(
        a.state_files().len(),
        1,
        "GC removed state it cannot attribute"
    );
    expect_success(&a.call("DEL", &conf), "our DEL");
    assert_eq!(link_state(&a), before, "link attributes not restored");
    assert!(a.state_files().is_empty(), "state left");
    // The reference plugin saves no sysctl, so none can be restored: the value it wrote stays
    // in the pod's namespace (its own DEL leaves it too).
    assert_ne!(a.sysctl("net/ipv4/conf/net1/forwarding"), fwd_before);
}

#[test]
fn the_reference_plugins_check_and_del_work_on_state_we_saved() {
    netns_tests::skip_unless_root!();
    let a = Attachment::new("tuning-togo");
    let (mac, mtu, promisc, allmulti, txqlen) = link_state(&a);
    let fwd_before = a.sysctl("net/ipv4/conf/net1/forwarding");
    let conf = switch_config(&a, true);
    let out = a.call("ADD", &conf);
    expect_success(&out, "our ADD");
    let mut check = conf.clone();
    check["prevResult"] = stdout_json(&out);
    check.as_object_mut().map(|c| c.remove("txQLen"));
    // Its CHECK does not replace IFNAME in sysctl keys (fixed in later releases).
    let sysctl = check["sysctl"]["net.ipv4.conf.IFNAME.forwarding"].clone();
    check["sysctl"] = json!({"net.ipv4.conf.net1.forwarding": sysctl});
    expect_success(&call_go(&a, "CHECK", &check), "Go CHECK of our attachment");

    expect_success(&call_go(&a, "DEL", &conf), "Go DEL");
    let (mac2, mtu2, promisc2, allmulti2, txqlen2) = link_state(&a);
    assert_eq!(
        (mac2, mtu2, promisc2, allmulti2),
        (mac, mtu, promisc, allmulti)
    );
    assert!(a.state_files().is_empty(), "the Go DEL kept our state file");
    // 1.1.1 knows neither txQLen nor saved sysctls: both keep what our ADD set.
    assert_eq!(txqlen2, json!(4321));
    assert_ne!(txqlen2, txqlen);
    assert_ne!(a.sysctl("net/ipv4/conf/net1/forwarding"), fwd_before);
}

#[test]
fn status_reports_50_when_the_state_directory_cannot_be_written() {
    netns_tests::skip_unless_root!();
    let a = Attachment::new("tuning-status");
    let mut conf = a.config(json!({}));
    conf.as_object_mut().map(|c| c.remove("prevResult"));
    expect_success(&call("STATUS", "", "", &conf, &[]), "STATUS");
    // Allowed by the node, but a file stands where a directory must be made.
    let blocker = a.data_dir.path().join("a-file");
    std::fs::create_dir_all(a.data_dir.path()).expect("data dir");
    std::fs::write(&blocker, "").expect("a file in the way");
    conf["dataDir"] = json!(blocker.join("state"));
    let out = call("STATUS", "", "", &conf, &[]);
    expect_failure(&out, "STATUS with an unwritable dataDir");
    assert_eq!(stdout_json(&out)["code"], 50);
    assert!(!blocker.join("state").exists());
}

#[test]
fn an_add_whose_result_cannot_be_printed_changes_nothing() {
    netns_tests::skip_unless_root!();
    // A 0.2.0 result is made of IP addresses; this prevResult (an L2 attachment's) has none.
    let a = Attachment::new("tuning-legacy");
    let before = a.ns.link(IFNAME).expect("net1");
    let mut conf = a.config(json!({"mtu": 1400, "mac": "02:00:00:00:00:09"}));
    conf["cniVersion"] = json!("0.2.0");
    conf["prevResult"] = json!({"cniVersion": "0.2.0", "dns": {}});
    let out = a.call("ADD", &conf);
    expect_failure(&out, "ADD in 0.2.0 without addresses");
    assert_eq!(stdout_json(&out)["code"], 1);
    let after = a.ns.link(IFNAME).expect("net1");
    assert_eq!(after.mtu, before.mtu);
    assert_eq!(after.mac(), before.mac());
    assert!(a.state_files().is_empty(), "state saved for a refused ADD");
}

/// Two attachments of one network after ADD (mtu 1400), both saving their state in the first
/// one's data directory, and the two configs.
fn two_attachments_sharing_a_data_dir(tag: &str) -> (Attachment, Attachment, Value, Value) {
    let keep = Attachment::new(&format!("{tag}-keep"));
    let lose = Attachment::new(&format!("{tag}-lose"));
    let conf = keep.config(json!({"mtu": 1400}));
    expect_success(&keep.call("ADD", &conf), "ADD keep");
    let mut lose_conf = lose.config(json!({"mtu": 1400}));
    lose_conf["dataDir"] = json!(keep.data_dir.path());
    expect_success(&lose.call("ADD", &lose_conf), "ADD lose");
    (keep, lose, conf, lose_conf)
}

#[test]
fn an_add_waits_while_the_node_agent_collects_garbage() {
    netns_tests::skip_unless_root!();
    let a = Attachment::new("tuning-gc-lock");
    let conf = a.config(json!({"mtu": 1400}));
    let lock_dir = netns_tests::TempDir::new("tuning-gc-lock");
    let lock = lock_dir.join("gc.lock");
    let lock_env = lock.display().to_string();
    let held = cni_common::gc_lock::exclusive(&lock, std::time::Duration::ZERO).expect("lock");
    std::thread::scope(|s| {
        let add = s.spawn(|| a.call_with("ADD", &conf, &[("CNI_GC_LOCK", &lock_env)]));
        std::thread::sleep(std::time::Duration::from_millis(500));
        assert!(!add.is_finished(), "ADD ran during a collection");
        assert!(
            a.state_files().is_empty(),
            "ADD changed the node during a collection"
        );
        drop(held);
        expect_success(&add.join().expect("ADD"), "ADD after the collection");
    });
    assert_eq!(a.state_files().len(), 1);
    expect_success(&a.call("DEL", &conf), "DEL");
}

#[test]
fn gc_reports_each_state_file_it_collects() {
    netns_tests::skip_unless_root!();
    let (keep, lose, mut conf, _) = two_attachments_sharing_a_data_dir("tuning-gc-report");
    conf.as_object_mut().map(|c| c.remove("prevResult"));
    conf["cni.dev/valid-attachments"] =
        json!([{"containerID": keep.container_id, "ifname": IFNAME}]);
    let out = call("GC", "", "", &conf, &[("CNI_LOG", "info")]);
    expect_success(&out, "GC");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let reported: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("collected: "))
        .collect();
    assert_eq!(reported.len(), 1, "{stderr}");
    assert!(
        reported[0].ends_with(&format!(
            "collected: tuning state {}_{IFNAME}.json",
            lose.container_id
        )),
        "{stderr}"
    );
}
