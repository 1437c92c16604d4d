//! A NetworkAttachmentDefinition author is not root: every field that names a path or a socket,
//! given a hostile value, is refused by every verb of every plugin before the node is touched.
//!
//! The plugins run in a node of this test's own: a process in a fresh network namespace and a
//! private mount namespace where `/etc`, `/opt`, `/var/lib` and `/run` are overlays whose writes
//! land in a tmpfs (so nothing reaches the machine's files), with canary files in the sensitive
//! directories. After the corpus: every canary is as it was, the overlays' upper layers hold
//! exactly what the set-up wrote, `/` lists the same entries, and every call ended within 5 s
//! with code 7 (6 for bytes that are not UTF-8) and an error naming the field.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use netns_tests::{our_plugin_dir, root_or_skip, TempDir};
use serde_json::{json, Value};
use wait_timeout::ChildExt;

/// Every call must end within this, with its error.
const DEADLINE: Duration = Duration::from_secs(5);
const VERBS: [&str; 5] = ["ADD", "CHECK", "DEL", "GC", "STATUS"];
/// The overlaid trees, and the canaries in them (the sensitive directories a config may name).
const OVERLAID: [&str; 4] = ["/etc", "/opt", "/var/lib", "/run"];
const CANARY_DIRS: [&str; 8] = [
    "/etc",
    "/etc/cni/net.d",
    "/etc/kubernetes",
    "/opt/cni/bin",
    "/var/lib/cni",
    "/var/lib/cni/networks",
    "/run/cni",
    "/run/cni/tuning",
];
/// Made by the set-up in the allowed directories: a link out of a state root, and what ovs-cni's
/// flat-file directory must never read (a FIFO, a link to /dev/zero, a file too large).
const SETUP: &str = r#"
set -eu
mount -t tmpfs none /mnt
for d in etc opt var/lib run; do
  u=/mnt/$(echo $d | tr / _)
  mkdir -p $u/upper $u/work
  mount -t overlay overlay -o lowerdir=/$d,upperdir=$u/upper,workdir=$u/work /$d
done
for d in /etc /etc/cni/net.d /etc/kubernetes /opt/cni/bin /var/lib/cni /var/lib/cni/networks /run/cni /run/cni/tuning; do
  mkdir -p $d
  echo "canary of $d" > $d/canary
done
ln -s /etc /run/cni/to-etc
# What every ADD opens (cni_common::gc_lock), there on any node that ever ran one.
touch /run/cni/gc.lock
mkdir -p /etc/cni/net.d/ovs.d
mkfifo /etc/cni/net.d/ovs.d/fifo.conf
ln -s /dev/zero /etc/cni/net.d/ovs.d/zero.conf
head -c 1000000 /dev/zero | tr '\0' ' ' > /etc/cni/net.d/ovs.d/huge.conf
echo ready
exec sleep 600
"#;

/// The test's node: a process holding the namespaces, ended (by its pid) on drop.
struct Node {
    holder: Child,
}

impl Node {
    fn start() -> Node {
        let mut holder = Command::new("unshare")
            .args([
                "--mount",
                "--net",
                "--propagation",
                "private",
                "--",
                "sh",
                "-c",
                SETUP,
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("unshare");
        let mut ready = [0u8; 6];
        let out = holder.stdout.as_mut().expect("stdout");
        out.read_exact(&mut ready).expect("the node's set-up");
        assert_eq!(&ready, b"ready\n");
        Node { holder }
    }

    fn pid(&self) -> u32 {
        self.holder.id()
    }

    /// A path as the node sees it.
    fn view(&self, path: &str) -> PathBuf {
        PathBuf::from(format!("/proc/{}/root{path}", self.pid()))
    }

    /// Every file under the overlays' upper layers, with its size and content hash: what the
    /// node's processes wrote to /etc, /opt, /var/lib and /run.
    fn writes(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut all = BTreeMap::new();
        for tree in OVERLAID {
            let upper = self.view(&format!("/mnt/{}/upper", tree[1..].replace('/', "_")));
            collect(&upper, &upper, &mut all);
        }
        all
    }

    /// Runs `plugin` in the node as a runtime would, with the default node policy.
    fn call(&self, plugin: &str, verb: &str, stdin: &[u8]) -> Call {
        let netns = format!("/proc/{}/ns/net", self.pid());
        let mut child = Command::new("nsenter")
            .arg(format!("--target={}", self.pid()))
            .args(["--mount", "--net", "--"])
            .arg(our_plugin_dir().join(plugin))
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .env("CNI_COMMAND", verb)
            .env("CNI_CONTAINERID", "hostile-1")
            .env("CNI_NETNS", netns)
            .env("CNI_IFNAME", "net1")
            .env("CNI_PATH", "/usr/lib/cni")
            // No policy file: the defaults, as on a node where the agent wrote none.
            .env("CNI_NODE_POLICY", "/nonexistent/node-policy.json")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("nsenter");
        let started = Instant::now();
        let _ = child.stdin.take().expect("stdin").write_all(stdin);
        let status = match child.wait_timeout(DEADLINE).expect("wait") {
            Some(status) => status,
            None => {
                let _ = child.kill();
                let _ = child.wait();
                return Call {
                    took: started.elapsed(),
                    code: None,
                    msg: "did not end within 5 s; killed".into(),
                };
            }
        };
        let took = started.elapsed();
        let mut stdout = String::new();
        let _ = child
            .stdout
            .take()
            .expect("stdout")
            .read_to_string(&mut stdout);
        let error: Value = serde_json::from_str(&stdout).unwrap_or(Value::Null);
        Call {
            took,
            code: (!status.success())
                .then(|| error["code"].as_u64())
                .flatten(),
            msg: format!("{} {}", error["msg"], error["details"]),
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.holder.kill();
        let _ = self.holder.wait();
    }
}

fn collect(base: &Path, dir: &Path, into: &mut BTreeMap<PathBuf, Vec<u8>>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let rel = path.strip_prefix(base).expect("below").to_path_buf();
        let kind = entry.file_type().expect("type");
        if kind.is_dir() {
            into.insert(rel.clone(), b"dir".to_vec());
            collect(base, &path, into);
        } else if kind.is_file() {
            into.insert(rel, std::fs::read(&path).unwrap_or_default());
        } else {
            into.insert(rel, format!("{kind:?}").into_bytes());
        }
    }
}

struct Call {
    took: Duration,
    code: Option<u64>,
    msg: String,
}

/// One hostile value for one field of one plugin.
struct Case {
    plugin: &'static str,
    field: &'static str,
    /// The request, as bytes (some are not UTF-8).
    stdin: Vec<u8>,
    /// 7 (invalid config), or 6 (not decodable at all).
    code: u64,
}

fn base_config(plugin: &str) -> Value {
    let prev = json!({"cniVersion": "1.1.0", "interfaces": [{"name": "net1", "sandbox": "/x"}]});
    let mut conf = match plugin {
        "tuning" => json!({"type": "tuning", "mtu": 1400}),
        "ovs" => json!({"type": "ovs", "bridge": "br-hostile"}),
        "bridge" => json!({"type": "bridge", "bridge": "br-hostile"}),
        "macvtap" => json!({"type": "macvtap", "master": "eth0"}),
        other => panic!("no config for {other}"),
    };
    conf["cniVersion"] = json!("1.1.0");
    conf["name"] = json!("hostile");
    conf["prevResult"] = prev;
    conf["cni.dev/valid-attachments"] = json!([]);
    conf
}

fn corpus(hanging_socket: &str) -> Vec<Case> {
    let long = format!("/run/cni/{}", "a/".repeat(3000));
    let long_name = format!("/run/cni/{}", "b".repeat(300));
    let paths: Vec<String> = [
        "/",
        "/etc",
        "/opt/cni/bin",
        "/etc/cni/net.d",
        "/etc/kubernetes",
        "/run/cni/../../etc",
        "/run/cni/to-etc",
        "/run/cni/to-etc/sub",
        "/var/lib/cni/networks",
        "/dev/zero",
        "relative/dir",
        &long,
        &long_name,
    ]
    .map(String::from)
    .to_vec();
    let mut cases = Vec::new();
    let mut add = |plugin: &'static str, field: &'static str, value: Value| {
        let mut conf = base_config(plugin);
        match field {
            "ipam.type" => conf["ipam"] = json!({"type": value}),
            _ => conf[field] = value,
        }
        cases.push(Case {
            plugin,
            field,
            stdin: serde_json::to_vec(&conf).expect("json"),
            code: 7,
        });
    };
    for p in &paths {
        add("tuning", "dataDir", json!(p));
        add("ovs", "configuration_path", json!(p));
    }
    for p in [
        "/etc/passwd",
        "/etc/cni/net.d/ovs.d/fifo.conf",
        "/etc/cni/net.d/ovs.d/zero.conf",
        "/etc/cni/net.d/ovs.d/huge.conf",
        hanging_socket,
    ] {
        add("ovs", "configuration_path", json!(p));
    }
    for s in [
        format!("unix:{hanging_socket}"),
        hanging_socket.to_string(),
        "tcp:127.0.0.1:6640".into(),
        "tcp:[::1]:6641".into(),
        "unix:/etc/passwd".into(),
        "unix:/var/run/openvswitch/../../../tmp/x.sock".into(),
        format!("unix:{long}"),
    ] {
        add("ovs", "socket_file", json!(s));
    }
    for plugin in ["bridge", "macvtap", "ovs"] {
        for t in ["/bin/sh", "../../../bin/sh", "..", "host-local/../../sh"] {
            add(plugin, "ipam.type", json!(t));
        }
    }
    // Not UTF-8: refused as undecodable before any field is read.
    for (plugin, field) in [("tuning", "dataDir"), ("ovs", "configuration_path")] {
        let mut stdin = serde_json::to_vec(&base_config(plugin)).expect("json");
        stdin.pop();
        stdin.extend_from_slice(format!(",\"{field}\":\"/run/cni/").as_bytes());
        stdin.extend_from_slice(&[0xff, 0xfe, b'"', b'}']);
        cases.push(Case {
            plugin,
            field,
            stdin,
            code: 6,
        });
    }
    cases
}

/// A unix socket that accepts every connection and never answers, as a hostile endpoint would;
/// it stops accepting after a minute, when the test is long over.
fn hanging_socket(dir: &TempDir) -> PathBuf {
    let path = dir.join("hang.sock");
    let listener = UnixListener::bind(&path).expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    std::thread::spawn(move || {
        let mut held = Vec::new();
        let until = Instant::now() + Duration::from_secs(60);
        while Instant::now() < until && held.len() < 1000 {
            match listener.accept() {
                Ok((conn, _)) => held.push(conn),
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    });
    path
}

#[test]
fn every_hostile_path_or_socket_is_refused_by_every_verb_and_the_node_is_untouched() {
    if !root_or_skip() {
        return;
    }
    let tmp = TempDir::new("confinement");
    let socket = hanging_socket(&tmp);
    let node = Node::start();
    let before = node.writes();
    let root_before: Vec<_> = std::fs::read_dir(node.view("/"))
        .expect("/")
        .flatten()
        .map(|e| e.file_name())
        .collect();

    let cases = corpus(&socket.display().to_string());
    let mut failures = Vec::new();
    let mut slowest = Duration::ZERO;
    let mut calls = 0;
    for case in &cases {
        for verb in VERBS {
            let call = node.call(case.plugin, verb, &case.stdin);
            calls += 1;
            slowest = slowest.max(call.took);
            let named = case.code == 6 || call.msg.contains(case.field);
            if call.code != Some(case.code) || !named || call.took >= DEADLINE {
                failures.push(format!(
                    "{} {verb} {}={}: code {:?} in {:?}: {}",
                    case.plugin,
                    case.field,
                    String::from_utf8_lossy(&case.stdin)
                        .split(&format!("\"{}\":", case.field.trim_start_matches("ipam.")))
                        .nth(1)
                        .unwrap_or("?")
                        .chars()
                        .take(60)
                        .collect::<String>(),
                    call.code,
                    call.took,
                    call.msg.chars().take(200).collect::<String>()
                ));
            }
        }
    }
    let after = node.writes();
    let root_after: Vec<_> = std::fs::read_dir(node.view("/"))
        .expect("/")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    eprintln!(
        "hostile corpus: {} cases x {} verbs = {calls} calls, {} refused as expected, slowest {slowest:?}",
        cases.len(),
        VERBS.len(),
        calls - failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {calls} calls were not refused as they must be:\n{}",
        failures.len(),
        failures.join("\n")
    );
    for dir in CANARY_DIRS {
        let canary = std::fs::read_to_string(node.view(&format!("{dir}/canary")));
        assert_eq!(
            canary.ok(),
            Some(format!("canary of {dir}\n")),
            "{dir}/canary"
        );
    }
    let changed: Vec<_> = after
        .iter()
        .filter(|(path, content)| before.get(*path) != Some(*content))
        .map(|(path, _)| path.display().to_string())
        .chain(
            before
                .keys()
                .filter(|path| !after.contains_key(*path))
                .map(|path| format!("{} (removed)", path.display())),
        )
        .collect();
    assert!(changed.is_empty(), "written on the node: {changed:?}");
    assert_eq!(root_before, root_after, "entries of / changed");
}

/// What users copy into `/opt/cni/bin` (the README's `target/cni-bin/*`, the aarch64 build, the
/// image's plugin directories) holds the plugins and nothing that widens what a config may name:
/// the tests' node policy, which allows `/tmp`, is theirs alone (`CNI_NODE_POLICY`).
#[test]
fn the_built_plugin_directories_hold_no_node_policy() {
    // The x86_64 build must be there: this checks it, it does not skip it.
    netns_tests::our_plugin("bridge");
    let target = netns_tests::target_dir();
    let dirs = [
        our_plugin_dir(),
        target.join("aarch64/cni-bin"),
        target.join("image/amd64/plugins"),
        target.join("image/arm64/plugins"),
    ];
    let found: Vec<PathBuf> = dirs
        .iter()
        .map(|d| d.join("node-policy.json"))
        .filter(|p| p.exists())
        .collect();
    assert!(
        found.is_empty(),
        "a node policy among the built plugins: {found:?}"
    );
}
