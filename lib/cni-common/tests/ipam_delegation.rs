//! IPAM delegation against Debian's Go `host-local` and `static` plugins, and a recording fake
//! that shows what a delegate receives.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use cni_common::args::CniArgs;
use cni_common::config::NetConf;
use cni_common::env::CmdArgs;
use cni_common::ipam::{exec_add, exec_check, exec_del, exec_gc, exec_status};
use cni_common::skel::Request;
use cni_common::version::{negotiate, Command};
use cni_common::{Code, Rollback};
use serde_json::{json, Value};

const GO_PLUGINS: &str = "/usr/lib/cni";

struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let p = std::env::temp_dir().join(format!("ipam-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("temp dir");
        Dir(p)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn request(command: Command, conf: &Value, path: &[&Path]) -> Request<Value> {
    assert!(
        Path::new(GO_PLUGINS).join("host-local").is_file(),
        "Debian's Go IPAM plugins are missing: apt-get install containernetworking-plugins"
    );
    let stdin = conf.to_string().into_bytes();
    let typed: NetConf<Value> = NetConf::parse(&stdin).expect("config parses");
    let version = negotiate(&typed.cni_version, &typed.cni_versions).expect("version");
    Request {
        cmd: CmdArgs {
            command,
            container_id: "ipamtest".into(),
            // IPAM plugins never enter it, but Go's skel requires CNI_NETNS on ADD and CHECK.
            netns: "/run/netns/ipamtest-unused".into(),
            ifname: "net1".into(),
            args: CniArgs::parse("IgnoreUnknown=1;K8S_POD_NAME=p").expect("args"),
            path: path.iter().map(|p| p.to_path_buf()).collect(),
        },
        conf: typed,
        version,
        prev_result: None,
        stdin,
        raw: conf.clone(),
    }
}

fn host_local_conf(data_dir: &Path) -> Value {
    json!({
        "cniVersion": "1.0.0", "name": "ipamnet", "type": "bridge",
        "ipam": {"type": "host-local", "subnet": "10.77.0.0/24", "dataDir": data_dir}
    })
}

fn leases(data_dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(data_dir.join("ipamnet")) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("10."))
        .collect()
}

#[test]
fn host_local_add_check_del_through_the_delegate() {
    let dir = Dir::new("hostlocal");
    let conf = host_local_conf(&dir.0);
    let go = Path::new(GO_PLUGINS);
    let add = request(Command::Add, &conf, &[go]);
    let mut rollback = Rollback::new();
    let result = exec_add("host-local", &add, &mut rollback).expect("IPAM ADD");
    rollback.commit();
    assert_eq!(result.ips.len(), 1);
    assert!(result.ips[0].address.to_string().starts_with("10.77.0."));
    assert_eq!(leases(&dir.0).len(), 1);

    exec_check("host-local", &request(Command::Check, &conf, &[go])).expect("IPAM CHECK");
    exec_del("host-local", &request(Command::Del, &conf, &[go])).expect("IPAM DEL");
    assert!(leases(&dir.0).is_empty(), "lease left after DEL");
}

#[test]
fn an_uncommitted_lease_is_released_when_dropped() {
    let dir = Dir::new("rollback");
    let conf = host_local_conf(&dir.0);
    let add = request(Command::Add, &conf, &[Path::new(GO_PLUGINS)]);
    {
        let mut rollback = Rollback::new();
        exec_add("host-local", &add, &mut rollback).expect("IPAM ADD");
        assert_eq!(leases(&dir.0).len(), 1);
        // An error after IPAM ADD: the rollback goes out of scope uncommitted.
    }
    assert!(leases(&dir.0).is_empty(), "the failed ADD kept its address");
}

#[test]
fn static_ipam_returns_the_configured_address_in_the_config_version() {
    let conf = json!({
        "cniVersion": "0.4.0", "name": "staticnet", "type": "bridge",
        "ipam": {"type": "static", "addresses": [{"address": "192.0.2.10/24", "gateway": "192.0.2.1"}]}
    });
    let add = request(Command::Add, &conf, &[Path::new(GO_PLUGINS)]);
    let mut rollback = Rollback::new();
    let result = exec_add("static", &add, &mut rollback).expect("static ADD");
    rollback.commit();
    assert_eq!(result.ips[0].address.to_string(), "192.0.2.10/24");
    assert_eq!(
        result.ips[0].gateway.map(|g| g.to_string()).as_deref(),
        Some("192.0.2.1")
    );
}

#[test]
fn a_delegate_error_keeps_its_code_and_message() {
    let dir = Dir::new("bad");
    let conf = json!({
        "cniVersion": "1.0.0", "name": "ipamnet", "type": "bridge",
        "ipam": {"type": "host-local", "subnet": "not-a-subnet", "dataDir": dir.0}
    });
    let add = request(Command::Add, &conf, &[Path::new(GO_PLUGINS)]);
    let e = exec_add("host-local", &add, &mut Rollback::new()).expect_err("IPAM ADD fails");
    assert_ne!(
        e.code(),
        Code::Ipam,
        "the delegate's own code was lost: {e}"
    );
    assert!(e.msg().contains("host-local"), "{e}");
    assert!(e.msg().contains("not-a-subnet"), "{e}");
}

#[test]
fn a_missing_delegate_is_code_101_naming_the_path() {
    let conf = host_local_conf(Path::new("/nonexistent"));
    let empty = Dir::new("empty");
    let add = request(Command::Add, &conf, &[&empty.0]);
    let e = exec_add("host-local", &add, &mut Rollback::new()).expect_err("not found");
    assert_eq!(e.code(), Code::Ipam);
    assert!(e.msg().contains(&empty.0.display().to_string()), "{e}");
}

/// A delegate that records its environment and stdin, so we see exactly what it is given.
fn recording_delegate(dir: &Path) -> PathBuf {
    let script = dir.join("recorder");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nif [ \"$CNI_COMMAND\" = VERSION ]; then echo '{{\"cniVersion\":\"1.1.0\",\"supportedVersions\":[\"1.0.0\",\"1.1.0\"]}}'; exit 0; fi\nenv | grep '^CNI_' | sort > {d}/env.$CNI_COMMAND\ncat > {d}/stdin.$CNI_COMMAND\n",
            d = dir.display()
        ),
    )
    .expect("write script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    script
}

#[test]
fn status_and_gc_reach_the_delegate_with_the_same_environment_and_whole_config() {
    let dir = Dir::new("recorder");
    recording_delegate(&dir.0);
    let conf = json!({
        "cniVersion": "1.1.0", "name": "ipamnet", "type": "bridge", "bridge": "br9",
        "ipam": {"type": "recorder"},
        "cni.dev/valid-attachments": [{"containerID": "a", "ifname": "net1"}]
    });
    exec_status("recorder", &request(Command::Status, &conf, &[&dir.0])).expect("STATUS");
    exec_gc("recorder", &request(Command::Gc, &conf, &[&dir.0])).expect("GC");
    for verb in ["STATUS", "GC"] {
        let env = std::fs::read_to_string(dir.0.join(format!("env.{verb}"))).expect("env recorded");
        assert!(env.contains(&format!("CNI_COMMAND={verb}\n")), "{env}");
        assert!(env.contains("CNI_CONTAINERID=ipamtest\n"), "{env}");
        assert!(
            env.contains("CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAME=p\n"),
            "{env}"
        );
        let stdin: Value = serde_json::from_slice(
            &std::fs::read(dir.0.join(format!("stdin.{verb}"))).expect("stdin recorded"),
        )
        .expect("stdin is the JSON config");
        assert_eq!(stdin, conf, "the delegate must get the whole config");
    }
}

#[test]
fn status_and_gc_skip_a_delegate_older_than_spec_1_1() {
    // Debian's host-local 1.1.1 stops at 1.0.0 and would fail on verbs it does not know.
    // A lease directory the node's default policy allows (this process has no policy file);
    // with no lease to release, nothing is made there.
    let leases = PathBuf::from(format!("/run/cni/ipam-test-old-{}", std::process::id()));
    let mut conf = host_local_conf(&leases);
    conf["cniVersion"] = json!("1.1.0");
    conf["cni.dev/valid-attachments"] = json!([]);
    let path = [Path::new(GO_PLUGINS)];
    exec_status("host-local", &request(Command::Status, &conf, &path)).expect("STATUS");
    exec_gc("host-local", &request(Command::Gc, &conf, &path)).expect("GC");
}
