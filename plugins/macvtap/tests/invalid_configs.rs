//! Invalid configs: each is refused with its code (7 for the plugin's own fields, naming the
//! field) and changes nothing, in the host namespace or the pod. Every case breaks one thing in
//! a config that works, so "nothing changed" shows that validation comes before any change.

mod common;

use common::{config, stdout_json, Node, PARENT, PARENT_PEER};
use netns_tests::expect_success;
use serde_json::{json, Value};

struct Case {
    name: &'static str,
    /// Merged into the valid base config; `null` removes a key.
    patch: Value,
    /// CNI_ARGS, instead of the default `IgnoreUnknown=1`.
    cni_args: Option<&'static str>,
    code: u64,
    /// Must appear in the message.
    names: &'static str,
}

fn case(name: &'static str, patch: Value, code: u64, names: &'static str) -> Case {
    Case {
        name,
        patch,
        cni_args: None,
        code,
        names,
    }
}

fn cases() -> Vec<Case> {
    let mut cases = vec![
        case(
            "deviceID and master together",
            json!({"deviceID": "dp0Mvp1"}),
            7,
            "deviceID",
        ),
        case(
            "runtimeConfig.deviceID and master together",
            json!({"runtimeConfig": {"deviceID": "dp0Mvp1"}}),
            7,
            "deviceID",
        ),
        case(
            "neither deviceID nor master",
            json!({"master": null}),
            7,
            "master",
        ),
        case("mode source", json!({"mode": "source"}), 7, "mode"),
        case("mode in capitals", json!({"mode": "BRIDGE"}), 7, "mode"),
        case("mode not a string", json!({"mode": 1}), 7, "mode"),
        case(
            "mode with deviceID",
            json!({"master": null, "deviceID": "dp0Mvp1", "mode": "vepa"}),
            7,
            "mode",
        ),
        case(
            "master with a slash",
            json!({"master": "eth0/x"}),
            7,
            "master",
        ),
        case(
            "master longer than 15",
            json!({"master": "mvparent0000000x"}),
            7,
            "master",
        ),
        case("master not a string", json!({"master": 5}), 7, "master"),
        case(
            "master missing on the node",
            json!({"master": "nosuchlink0"}),
            7,
            "master",
        ),
        case(
            "deviceID not a string",
            json!({"master": null, "deviceID": 42}),
            7,
            "deviceID",
        ),
        case(
            "deviceID longer than any device plugin makes",
            json!({"master": null, "deviceID": "x".repeat(254)}),
            7,
            "deviceID",
        ),
        case(
            "deviceID naming a veth",
            json!({"master": null, "deviceID": PARENT_PEER}),
            7,
            "deviceID",
        ),
        case("mtu below 68", json!({"mtu": 67}), 7, "mtu"),
        case("mtu above 65535", json!({"mtu": 65536}), 7, "mtu"),
        case("mtu negative", json!({"mtu": -1}), 7, "mtu"),
        case("mtu as a string", json!({"mtu": "1400"}), 7, "mtu"),
        case("mtu fractional", json!({"mtu": 1400.5}), 7, "mtu"),
        case("owner as a name", json!({"owner": "qemu"}), 7, "owner"),
        case("owner negative", json!({"owner": -1}), 7, "owner"),
        case(
            "owner is chown's 'unchanged'",
            json!({"owner": 4294967295u64}),
            7,
            "owner",
        ),
        case("group as a name", json!({"group": "kvm"}), 7, "group"),
        case(
            "group above 32 bits",
            json!({"group": 4294967296u64}),
            7,
            "group",
        ),
        case(
            "promiscMode as a string",
            json!({"promiscMode": "true"}),
            7,
            "promiscMode",
        ),
        case("mac malformed", json!({"mac": "zz:zz"}), 7, "mac"),
        case(
            "mac multicast",
            json!({"mac": "01:00:5e:00:00:01"}),
            7,
            "mac",
        ),
        case(
            "mac all zero",
            json!({"mac": "00:00:00:00:00:00"}),
            7,
            "mac",
        ),
        case(
            "runtimeConfig.mac malformed",
            json!({"runtimeConfig": {"mac": "02:00"}}),
            7,
            "runtimeConfig.mac",
        ),
        case(
            "args.cni.mac not a string",
            json!({"args": {"cni": {"mac": 2}}}),
            7,
            "args.cni.mac",
        ),
        // A result in 0.2.0 must carry an IP: refused up front rather than after the work.
        case(
            "0.2.0 without ipam",
            json!({"cniVersion": "0.2.0"}),
            1,
            "0.2.0",
        ),
        // Valid in itself, but not on this parent.
        case("mtu above the parent's", json!({"mtu": 9000}), 7, "mtu"),
    ];
    cases.push(Case {
        cni_args: Some("IgnoreUnknown=1;MAC=02:00:00:00:00"),
        ..case("CNI_ARGS MAC malformed", json!({}), 7, "CNI_ARGS MAC")
    });
    cases.push(Case {
        cni_args: Some("FOO=bar"),
        ..case(
            "unknown CNI_ARGS without IgnoreUnknown",
            json!({}),
            4,
            "FOO",
        )
    });
    cases
}

fn patched(base: &Value, patch: &Value) -> Value {
    let mut conf = base.clone();
    if let (Some(c), Some(p)) = (conf.as_object_mut(), patch.as_object()) {
        for (k, v) in p {
            if v.is_null() {
                c.remove(k);
            } else {
                c.insert(k.clone(), v.clone());
            }
        }
    }
    conf
}

#[test]
fn every_invalid_config_gets_its_code_naming_the_field_and_changes_nothing() {
    netns_tests::skip_unless_root!();
    let node = Node::new("mvt-invalid");
    let pod = node.pod("mvt-invalid");
    let base = config("1.1.0", json!({"master": PARENT, "mtu": 1400}));
    let snapshot = || (node.host.links(), pod.ns.links());
    let names = |(host, ctr): &(Vec<netns_tests::Link>, Vec<netns_tests::Link>)| {
        let names = |links: &[netns_tests::Link]| {
            links
                .iter()
                .map(|l| format!("{}:{}", l.ifname, l.ifindex))
                .collect::<Vec<_>>()
        };
        (names(host), names(ctr))
    };
    let before = names(&snapshot());

    let mut failures = Vec::new();
    for case in cases() {
        let conf = patched(&base, &case.patch);
        let env: Vec<(&str, &str)> = case.cni_args.map(|a| ("CNI_ARGS", a)).into_iter().collect();
        let out = node.call_with("ADD", &pod, &conf, &env);
        let verdict = if out.status.success() {
            Some("exited 0".to_string())
        } else {
            let v = stdout_json(&out);
            let msg = v["msg"].as_str().unwrap_or_default();
            if v["code"].as_u64() != Some(case.code) {
                Some(format!("expected code {}, got {v}", case.code))
            } else if !msg.contains(case.names) {
                Some(format!("message does not name {:?}: {msg}", case.names))
            } else {
                None
            }
        };
        if let Some(problem) = verdict {
            failures.push(format!("{}: {problem}", case.name));
        }
        if names(&snapshot()) != before {
            failures.push(format!("{}: changed the namespaces", case.name));
            // Put things back so that the next case is judged on its own.
            expect_success(
                &node.call("DEL", &pod, &base),
                "DEL after a case that changed things",
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // The base config itself is valid: the cases break configs that would have worked.
    expect_success(&node.call("ADD", &pod, &base), "ADD of the base config");
    expect_success(&node.call("DEL", &pod, &base), "DEL of the base config");
}
