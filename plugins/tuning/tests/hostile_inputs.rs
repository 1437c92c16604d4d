//! Malformed and hostile configs and environments (hostile_inputs.json): each one gets the spec's
//! JSON error with the expected code and a non-zero exit, never a panic, and changes nothing:
//! not the container's links or sysctls, not the host's, not the state directory.
//!
//! Every case breaks one thing in a config that would otherwise change the MTU and a sysctl, so
//! "nothing changed" shows that validation happens before the first change.

mod common;

use std::collections::BTreeMap;
use std::process::Command;

use common::{stdout_json, tuning_binary, Attachment, IFNAME};
use netns_tests::run_command;
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Debug, Deserialize)]
struct Case {
    name: String,
    /// Merged into the valid base config; `null` removes a key.
    #[serde(default)]
    patch: Option<Value>,
    /// Inserted as raw text into the base config (numbers JSON libraries cannot hold).
    #[serde(default)]
    rawpatch: Option<String>,
    /// The whole stdin, instead of a config.
    #[serde(default)]
    raw: Option<String>,
    /// Environment overrides; `null` unsets the variable.
    #[serde(default)]
    env: BTreeMap<String, Option<String>>,
    code: u64,
}

/// What "the host" and the container look like, as far as tuning could change them.
#[derive(Debug, PartialEq)]
struct Snapshot {
    container_links: String,
    container_sysctls: Vec<String>,
    host_links: String,
    host_sysctls: Vec<String>,
    state_files: usize,
}

fn snapshot(a: &Attachment) -> Snapshot {
    let host_read = |p: &str| std::fs::read_to_string(p).unwrap_or_else(|e| format!("{p}: {e}"));
    Snapshot {
        container_links: a.ns.exec_ok("ip", &["-d", "link", "show"]),
        container_sysctls: ["net/ipv4/conf/net1/forwarding", "net/ipv4/ip_forward"]
            .iter()
            .map(|p| a.sysctl(p))
            .collect(),
        host_links: String::from_utf8_lossy(
            &run_command(
                {
                    let mut c = Command::new("ip");
                    c.args(["-d", "link", "show"]);
                    c
                },
                b"",
            )
            .stdout,
        )
        .into_owned(),
        host_sysctls: [
            "/proc/sys/net/ipv4/ip_forward",
            "/proc/sys/kernel/hostname",
            "/proc/sys/kernel/core_pattern",
        ]
        .iter()
        .map(|p| host_read(p))
        .collect(),
        state_files: a.state_files().len(),
    }
}

fn describe_change(before: &Snapshot, now: &Snapshot) -> String {
    let mut what = Vec::new();
    if before.container_links != now.container_links {
        what.push("container links");
    }
    if before.container_sysctls != now.container_sysctls {
        what.push("container sysctls");
    }
    if before.host_links != now.host_links {
        what.push("host links");
    }
    if before.host_sysctls != now.host_sysctls {
        what.push("host sysctls");
    }
    if before.state_files != now.state_files {
        what.push("state files");
    }
    what.join(", ")
}

fn stdin_for(case: &Case, base: &Value) -> String {
    if let Some(raw) = &case.raw {
        return raw.clone();
    }
    let mut conf = base.clone();
    if let (Some(c), Some(Value::Object(patch))) = (conf.as_object_mut(), &case.patch) {
        for (k, v) in patch {
            if v.is_null() {
                c.remove(k);
            } else {
                c.insert(k.clone(), v.clone());
            }
        }
    }
    let text = conf.to_string();
    match &case.rawpatch {
        Some(extra) => format!("{{{extra},{}", &text[1..]),
        None => text,
    }
}

#[test]
fn every_hostile_input_gets_its_error_code_and_changes_nothing() {
    netns_tests::skip_unless_root!();
    let corpus: Vec<Case> =
        serde_json::from_str(include_str!("hostile_inputs.json")).expect("corpus parses");
    assert!(corpus.len() >= 30, "the corpus has {} cases", corpus.len());

    let a = Attachment::new("tuning-hostile");
    let forwarding = a.sysctl("net/ipv4/conf/net1/forwarding");
    let base = a.config(json!({
        "mtu": 1400,
        "sysctl": {"net.ipv4.conf.IFNAME.forwarding": if forwarding == "1" { "0" } else { "1" }}
    }));
    let before = snapshot(&a);

    let mut failures = Vec::new();
    for case in &corpus {
        let mut cmd = Command::new(tuning_binary());
        cmd.env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .env("CNI_COMMAND", "ADD")
            .env("CNI_CONTAINERID", &a.container_id)
            .env("CNI_NETNS", a.ns.path_str())
            .env("CNI_IFNAME", IFNAME)
            .env("CNI_PATH", "/usr/lib/cni")
            .env(
                netns_tests::NODE_POLICY_ENV,
                netns_tests::test_node_policy(),
            );
        for (k, v) in &case.env {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        let out = run_command(cmd, stdin_for(case, &base).as_bytes());
        let problem = if out.status.success() {
            Some("exited 0".to_string())
        } else if out.status.code().is_none() {
            Some(format!("killed by a signal ({})", out.status))
        } else {
            match serde_json::from_slice::<Value>(&out.stdout) {
                Err(e) => Some(format!("stdout is not one JSON value: {e}")),
                Ok(v) if v["code"].as_u64() != Some(case.code) || !v["msg"].is_string() => {
                    Some(format!("expected code {}, got {v}", case.code))
                }
                Ok(_) => None,
            }
        };
        if String::from_utf8_lossy(&out.stderr).contains("panicked") {
            failures.push(format!("{}: panicked", case.name));
        }
        if let Some(p) = problem {
            failures.push(format!("{}: {p}", case.name));
        }
        let now = snapshot(&a);
        if now != before {
            failures.push(format!(
                "{}: changed something: {}",
                case.name,
                describe_change(&before, &now)
            ));
            // Put things back so the next case is judged on its own.
            netns_tests::expect_success(
                &a.call("DEL", &base),
                "DEL after a case that changed things",
            );
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        corpus.len(),
        failures.join("\n")
    );

    // The base config itself is valid: the corpus breaks configs that would have worked.
    let out = a.call("ADD", &base);
    netns_tests::expect_success(&out, "ADD of the base config");
    assert_eq!(stdout_json(&out)["cniVersion"], "1.1.0");
    assert_ne!(snapshot(&a), before, "the base config changed nothing");
    netns_tests::expect_success(&a.call("DEL", &base), "DEL of the base config");
}
