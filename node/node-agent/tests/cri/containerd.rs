//! A containerd of the test's own, and what it needs of the machine.

use super::*;

/// A containerd of the test's own: root, state, socket, config, runc root, CNI directories all
/// in a directory of its own, removed with it; the CRI plugin on. The machine's own paths
/// (/var/lib/containerd, /run/containerd, /etc/cni) are left alone.
pub struct Containerd {
    child: Child,
    dir: TestDir,
    /// Whether /run/containerd was there before: the shims make /run/containerd/s for their
    /// sockets (a path containerd 1.6 fixes), which is removed when empty unless it was.
    shim_dir_existed: bool,
}

impl Containerd {
    pub fn start() -> Containerd {
        let dir = TestDir::new("cri");
        let base = dir.path();
        let shim_dir_existed = Path::new(SHIM_DIR).exists();
        let config = base.join("config.toml");
        fs::write(
            &config,
            format!(
                r#"version = 2
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[plugins."io.containerd.internal.v1.opt"]
  path = "{opt}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  # Root here may lack CAP_SYS_RESOURCE, which raising oom_score_adj needs.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{runc}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{cni_bin}"
    conf_dir = "{cni_conf}"
"#,
                opt = base.join("opt").display(),
                runc = base.join("runc").display(),
                cni_bin = base.join("cni/bin").display(),
                cni_conf = base.join("cni/net.d").display(),
            ),
        )
        .expect("write containerd's config");
        let log = fs::File::create(base.join("containerd.log")).expect("create containerd.log");
        let child = Command::new("containerd")
            .arg("--config")
            .arg(&config)
            .arg("--root")
            .arg(base.join("root"))
            .arg("--state")
            .arg(base.join("state"))
            .arg("--address")
            .arg(base.join("containerd.sock"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start containerd");
        let mut containerd = Containerd {
            child,
            dir,
            shim_dir_existed,
        };
        containerd.wait_for_socket();
        containerd
    }

    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("containerd.sock")
    }

    /// Every sandbox, through the client under test; a failure fails the test.
    pub async fn list(&self) -> Vec<Sandbox> {
        cri::list_pod_sandboxes(&self.socket(), TIMEOUT)
            .await
            .unwrap_or_else(|err| panic!("{}\n{}", err.report(), self.log()))
    }

    /// Runs a sandbox in the node's network namespace, as the kubelet would; its ID. Tried
    /// again for a while: the CRI plugin learns of an image imported through containerd's
    /// events, and until then tries (and fails) to pull it.
    pub async fn run_sandbox(&self, name: &str, namespace: &str, uid: &str) -> String {
        let (socket, cgroup_parent) = (self.socket(), self.cgroup_parent());
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match kubelet::run_pod_sandbox(&socket, name, namespace, uid, &cgroup_parent).await {
                Ok(id) => return id,
                Err(status)
                    if Instant::now() < deadline && status.message().contains(PAUSE_IMAGE) =>
                {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(status) => panic!("RunPodSandbox: {status}\n{}", self.log()),
            }
        }
    }

    /// The sandboxes' parent cgroup, one of the test's own (cgroupfs: a path in each hierarchy).
    pub fn cgroup_parent(&self) -> String {
        let name = self.dir.path().file_name().expect("a name");
        format!("/{}", name.to_string_lossy())
    }

    /// Makes [`PAUSE_IMAGE`] (one static program that waits forever), as a docker archive, and
    /// imports it into the k8s.io namespace, where the CRI plugin finds its sandbox image.
    pub fn import_pause_image(&self) {
        let work = self.dir.sub("image");
        let rootfs = self.dir.sub("image/rootfs");
        let source = work.join("pause.rs");
        fs::write(&source, "fn main() { loop { std::thread::park(); } }\n")
            .expect("write pause.rs");
        run(Command::new("rustc")
            .args([
                "--edition",
                "2021",
                "-O",
                "-C",
                "target-feature=+crt-static",
                "-o",
            ])
            .arg(rootfs.join("pause"))
            .arg(&source));
        run(Command::new("tar")
            .args(["--owner=0", "--group=0", "--numeric-owner", "-C"])
            .arg(&rootfs)
            .args(["-cf"])
            .arg(work.join("layer.tar"))
            .arg("pause"));
        let layer = fs::read(work.join("layer.tar")).expect("read layer.tar");
        let diff_id = format!("sha256:{}", common::sha256_bytes(&layer));
        let config = serde_json::json!({
            "architecture": docker_arch(),
            "os": "linux",
            "config": {"Entrypoint": ["/pause"]},
            "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        });
        fs::write(work.join("config.json"), config.to_string()).expect("write config.json");
        let manifest = serde_json::json!([
            {"Config": "config.json", "RepoTags": [PAUSE_IMAGE], "Layers": ["layer.tar"]}
        ]);
        fs::write(work.join("manifest.json"), manifest.to_string()).expect("write manifest.json");
        run(Command::new("tar")
            .arg("-C")
            .arg(&work)
            .arg("-cf")
            .arg(work.join("image.tar"))
            .args(["manifest.json", "config.json", "layer.tar"]));
        run(Command::new("ctr")
            .arg("--address")
            .arg(self.socket())
            .args([
                "--namespace",
                "k8s.io",
                "images",
                "import",
                "--snapshotter",
                "overlayfs",
            ])
            .arg(work.join("image.tar")));
    }

    pub fn wait_for_socket(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.socket().exists() {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("containerd exited ({status}):\n{}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "containerd made no socket in 30 s:\n{}",
                self.log()
            );
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// containerd's log, its last lines, to explain a failure.
    pub fn log(&self) -> String {
        let log = fs::read_to_string(self.dir.path().join("containerd.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

impl Drop for Containerd {
    /// Stops containerd by its pid (SIGTERM, then SIGKILL after 10 s) and reaps it; the
    /// directory goes with `dir`.
    fn drop(&mut self) {
        let pid = Pid::from_raw(i32::try_from(self.child.id()).expect("a pid"));
        let _ = kill(pid, Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(10);
        while matches!(self.child.try_wait(), Ok(None)) {
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                break;
            }
            thread::sleep(Duration::from_millis(20));
        }
        self.remove_leftovers();
    }
}

impl Containerd {
    /// What a test that failed half-way leaves beside containerd, which the CRI would have
    /// removed: its containers (runc, in the runc root of its own), their shims (found by
    /// containerd's socket on their command line), mounts below the directory, and the parent
    /// cgroup. Nothing of the kind is left after a test that passed.
    pub fn remove_leftovers(&self) {
        let runc_root = self.dir.path().join("runc/k8s.io");
        for entry in fs::read_dir(&runc_root).into_iter().flatten().flatten() {
            let _ = Command::new("runc")
                .arg("--root")
                .arg(&runc_root)
                .args(["delete", "--force"])
                .arg(entry.file_name())
                .output();
        }
        let socket = self.socket().display().to_string();
        for pid in shims_of(&socket) {
            // A shim killed leaves its socket file; it is named by a hash, found here instead.
            let files = unix_sockets_of(pid);
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            for file in files.iter().filter(|f| f.starts_with(SHIM_DIR)) {
                let _ = fs::remove_file(file);
            }
        }
        let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let mut mounts: Vec<&str> = mountinfo
            .lines()
            .filter_map(|line| line.split(' ').nth(4))
            .filter(|point| Path::new(point).starts_with(self.dir.path()))
            .collect();
        mounts.reverse();
        for point in mounts {
            let _ = nix::mount::umount2(point, nix::mount::MntFlags::MNT_DETACH);
        }
        if !self.shim_dir_existed {
            // Fails, as it should, while any shim (of any containerd) still has its socket there.
            let _ = fs::remove_dir(Path::new(SHIM_DIR).join("s"));
            let _ = fs::remove_dir(SHIM_DIR);
        }
        for hierarchy in fs::read_dir("/sys/fs/cgroup")
            .into_iter()
            .flatten()
            .flatten()
        {
            let _ = fs::remove_dir(
                hierarchy
                    .path()
                    .join(self.cgroup_parent().trim_start_matches('/')),
            );
        }
    }
}

pub fn nanos_since_epoch() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after the epoch");
    i64::try_from(since.as_nanos()).expect("before 2262")
}

/// Where containerd 1.6's shims put their sockets (in `s/`), whatever containerd's own paths.
pub const SHIM_DIR: &str = "/run/containerd";

/// The sandbox image, which [`Containerd::import_pause_image`] makes.
pub const PAUSE_IMAGE: &str = "localhost/installer-cri/pause:1";

/// The shims started by the containerd at `socket` (which their command line names).
pub fn shims_of(socket: &str) -> Vec<i32> {
    let mut pids = Vec::new();
    for entry in fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        let shim = args
            .first()
            .is_some_and(|a| String::from_utf8_lossy(a).contains("containerd-shim"));
        if shim && args.contains(&socket.as_bytes()) {
            pids.push(pid);
        }
    }
    pids
}

/// The paths of the unix sockets process `pid` holds open.
pub fn unix_sockets_of(pid: i32) -> Vec<PathBuf> {
    let inodes: Vec<String> = fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|fd| fs::read_link(fd.path()).ok())
        .filter_map(|target| {
            let target = target.to_string_lossy().into_owned();
            Some(
                target
                    .strip_prefix("socket:[")?
                    .strip_suffix(']')?
                    .to_string(),
            )
        })
        .collect();
    // Num RefCount Protocol Flags Type St Inode Path
    let table = fs::read_to_string("/proc/net/unix").unwrap_or_default();
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (inode, path) = (fields.get(6)?, fields.get(7)?);
            inodes
                .iter()
                .any(|i| i == inode)
                .then(|| PathBuf::from(path))
        })
        .collect()
}

/// Runs `cmd`, failing the test unless it succeeds.
pub fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|err| panic!("{cmd:?}: {err}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// This machine's architecture as image configs name it.
pub fn docker_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// The version `containerd --version` prints: "containerd <repo> <version> <revision>".
pub fn containerd_version() -> String {
    let out = Command::new("containerd")
        .arg("--version")
        .output()
        .expect("run containerd --version");
    let line = String::from_utf8_lossy(&out.stdout).into_owned();
    line.split_whitespace()
        .nth(2)
        .unwrap_or_else(|| panic!("containerd --version printed {line:?}"))
        .to_string()
}
