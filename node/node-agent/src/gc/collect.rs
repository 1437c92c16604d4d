//! One plugin's CNI GC, run as a runtime runs it: the plugin binary of the node, in the node's
//! file system (the agent's pod sees the node's root at `host_root` and enters it with chroot),
//! with the network's config, cniVersion 1.1.0 and the attachments to keep.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use cni_common::log::COLLECTED;
use serde_json::{json, Value};
use wait_timeout::ChildExt;

/// Where the node's plugins are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The node's `/` as this process sees it (`/` when it runs on the node itself).
    pub host_root: PathBuf,
    /// The CNI binary directory as the node sees it (CNI_PATH of the GC call).
    pub bin_dir: PathBuf,
}

/// What one GC call did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// What the plugin reported it removed.
    pub collected: Vec<String>,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

/// How long one plugin's GC may take before it is killed: it lists and deletes, no more.
pub const GC_TIMEOUT: Duration = Duration::from_secs(60);

/// `conf` (one plugin's config, with the network's name) as a GC request keeping `valid`.
pub fn gc_request(conf: &Value, valid: &BTreeSet<(String, String)>) -> Value {
    let mut request = conf.clone();
    let attachments: Vec<Value> = valid
        .iter()
        .map(|(container_id, ifname)| json!({"containerID": container_id, "ifname": ifname}))
        .collect();
    // GC is a verb of 1.1.0; our plugins read every older config the same way.
    request["cniVersion"] = json!("1.1.0");
    request["cni.dev/valid-attachments"] = Value::Array(attachments);
    request
}

/// Runs plugin `plugin`'s GC on the node with `request`.
pub fn run_gc(node: &Node, plugin: &str, request: &Value, timeout: Duration) -> Outcome {
    let failed = |why: String| Outcome {
        collected: Vec::new(),
        error: Some(why),
    };
    let binary = node.bin_dir.join(plugin);
    let mut cmd = Command::new(&binary);
    cmd.env_clear()
        .env(
            "PATH",
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        )
        .env("CNI_COMMAND", "GC")
        .env("CNI_PATH", &node.bin_dir)
        .env(cni_common::log::LOG_ENV, "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if node.host_root != Path::new("/") {
        // Made before the fork: nothing may allocate between fork and exec.
        let root = match std::ffi::CString::new(node.host_root.as_os_str().as_bytes()) {
            Ok(root) => root,
            Err(e) => return failed(format!("host root {}: {e}", node.host_root.display())),
        };
        // SAFETY: only async-signal-safe calls (chroot, chdir) between fork and exec, on
        // memory made before the fork.
        unsafe {
            cmd.pre_exec(move || {
                if libc::chroot(root.as_ptr()) != 0 || libc::chdir(c"/".as_ptr()) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => return failed(format!("running {}: {e}", binary.display())),
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(request.to_string().as_bytes());
    }
    // GC's output is a few lines: the pipes do not fill before it exits.
    let status = match child.wait_timeout(timeout) {
        Ok(Some(status)) => status,
        Ok(None) => {
            let _ = child.kill();
            let _ = child.wait();
            return failed(format!(
                "{plugin} GC did not end within {timeout:?}; killed"
            ));
        }
        Err(e) => return failed(format!("waiting for {plugin} GC: {e}")),
    };
    let (mut stdout, mut stderr) = (String::new(), String::new());
    if let Some(mut out) = child.stdout.take() {
        let _ = out.read_to_string(&mut stdout);
    }
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut stderr);
    }
    let collected = stderr
        .lines()
        .filter_map(|line| line.split_once(COLLECTED).map(|(_, what)| what.to_string()))
        .collect();
    let error = (!status.success()).then(|| {
        let reply: Value = serde_json::from_str(&stdout).unwrap_or(Value::Null);
        match reply["msg"].as_str() {
            Some(msg) => format!("{plugin} GC failed (code {}): {msg}", reply["code"]),
            None => format!("{plugin} GC failed ({status}): {}", stderr.trim()),
        }
    });
    Outcome { collected, error }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `run_gc` of a script just written: another test thread forking meanwhile may hold the
    /// script open for writing a moment longer, which exec refuses (ETXTBSY); a real plugin is
    /// written long before it runs.
    fn run_fresh_script(node: &Node, plugin: &str, timeout: Duration) -> Outcome {
        for _ in 0..50 {
            let outcome = run_gc(node, plugin, &json!({}), timeout);
            if !outcome
                .error
                .as_deref()
                .is_some_and(|e| e.contains("Text file busy"))
            {
                return outcome;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("{plugin} stayed busy");
    }

    #[test]
    fn a_request_is_the_config_at_1_1_0_with_the_attachments_to_keep() {
        let conf = json!({"cniVersion": "0.3.1", "name": "net", "type": "bridge", "bridge": "br1"});
        let valid = BTreeSet::from([("c1".to_string(), "net1".to_string())]);
        assert_eq!(
            gc_request(&conf, &valid),
            json!({"cniVersion": "1.1.0", "name": "net", "type": "bridge", "bridge": "br1",
                   "cni.dev/valid-attachments": [{"containerID": "c1", "ifname": "net1"}]})
        );
    }

    #[test]
    fn what_a_plugin_reports_collected_and_its_error_are_read_back() {
        let dir = tempfile::tempdir().expect("tmp");
        let plugin = dir.path().join("fake");
        std::fs::write(
            &plugin,
            "#!/bin/sh\ncat >/dev/null\n\
             echo ' INFO fake: collected: port veth1' >&2\n\
             echo ' INFO fake: collected: state c1_net1.json' >&2\n\
             echo '{\"code\": 11, \"msg\": \"OVSDB is away\"}'\nexit 1\n",
        )
        .expect("fake plugin");
        std::fs::set_permissions(&plugin, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("chmod");
        let node = Node {
            host_root: PathBuf::from("/"),
            bin_dir: dir.path().to_path_buf(),
        };
        let outcome = run_fresh_script(&node, "fake", GC_TIMEOUT);
        assert_eq!(outcome.collected, ["port veth1", "state c1_net1.json"]);
        assert_eq!(
            outcome.error.as_deref(),
            Some("fake GC failed (code 11): OVSDB is away")
        );
    }

    #[test]
    fn a_gc_that_hangs_is_killed_after_its_timeout() {
        let dir = tempfile::tempdir().expect("tmp");
        let plugin = dir.path().join("slow");
        std::fs::write(&plugin, "#!/bin/sh\nexec sleep 30\n").expect("slow plugin");
        std::fs::set_permissions(&plugin, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("chmod");
        let node = Node {
            host_root: PathBuf::from("/"),
            bin_dir: dir.path().to_path_buf(),
        };
        let started = std::time::Instant::now();
        let outcome = run_fresh_script(&node, "slow", Duration::from_millis(200));
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(outcome.error.is_some_and(|e| e.contains("killed")));
    }
}
