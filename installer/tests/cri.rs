//! The CRI client against a real containerd (a private instance of each test's own, started and
//! stopped by the test) and against sockets that fail in each way a runtime's can.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cni_installer::cri::{self, Sandbox};
use cni_installer::error::CriError;
use cni_installer::Error;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use common::TestDir;

const TIMEOUT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn containerd_names_itself_and_its_version() {
    netns_tests::skip_unless_root!();
    let containerd = Containerd::start();

    let version = cri::version(&containerd.socket(), TIMEOUT)
        .await
        .unwrap_or_else(|err| panic!("{}\n{}", err.report(), containerd.log()));

    let expected = containerd_version();
    assert_eq!(version, format!("containerd {expected}"));
}

#[tokio::test]
async fn a_fresh_containerd_has_no_sandboxes() {
    netns_tests::skip_unless_root!();
    let containerd = Containerd::start();

    let sandboxes = containerd.list().await;

    assert_eq!(sandboxes, []);
}

#[tokio::test]
async fn a_sandbox_is_listed_ready_then_not_ready_once_stopped_and_no_more_once_removed() {
    netns_tests::skip_unless_root!();
    let containerd = Containerd::start();
    containerd.import_pause_image();
    let before = nanos_since_epoch();

    let id = containerd.run_sandbox("web-0", "default", "uid-0").await;
    let listed = containerd.list().await;
    let created_at = listed.first().map_or(0, |s| s.created_at);
    let sandbox = |ready| Sandbox {
        id: id.clone(),
        name: "web-0".to_string(),
        namespace: "default".to_string(),
        uid: "uid-0".to_string(),
        ready,
        created_at,
    };
    assert_eq!(listed, [sandbox(true)]);
    assert!(
        (before..=nanos_since_epoch()).contains(&created_at),
        "created_at {created_at} is not between {before} and now"
    );

    kubelet::stop_pod_sandbox(&containerd.socket(), &id)
        .await
        .unwrap_or_else(|status| panic!("StopPodSandbox: {status}\n{}", containerd.log()));
    assert_eq!(containerd.list().await, [sandbox(false)]);

    kubelet::remove_pod_sandbox(&containerd.socket(), &id)
        .await
        .unwrap_or_else(|status| panic!("RemovePodSandbox: {status}\n{}", containerd.log()));
    assert_eq!(containerd.list().await, []);
}

#[tokio::test]
async fn a_missing_socket_is_an_error_naming_it() {
    let dir = TestDir::new("cri-missing");
    let socket = dir.path().join("containerd.sock");

    let err = cri::list_pod_sandboxes(&socket, TIMEOUT)
        .await
        .expect_err("no list without a runtime");

    assert!(
        matches!(&err, Error::Cri { source: CriError::Connect(io), .. }
            if io.kind() == std::io::ErrorKind::NotFound),
        "{err:?}"
    );
    assert_eq!(
        err.report(),
        format!(
            "CRI ListPodSandbox on {}: connecting: No such file or directory (os error 2)",
            socket.display()
        )
    );
}

#[tokio::test]
async fn a_socket_nobody_listens_on_is_refused() {
    let dir = TestDir::new("cri-refused");
    let socket = dir.path().join("containerd.sock");
    // Bound and closed: the file stays, with no one behind it, as after a runtime's crash.
    drop(std::os::unix::net::UnixListener::bind(&socket).expect("bind"));

    let err = cri::version(&socket, TIMEOUT)
        .await
        .expect_err("no version from a dead socket");

    assert!(
        matches!(&err, Error::Cri { call: "Version", source: CriError::Connect(io), .. }
            if io.kind() == std::io::ErrorKind::ConnectionRefused),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_runtime_that_never_answers_times_out_within_the_timeout() {
    let dir = TestDir::new("cri-silent");
    let socket = dir.path().join("containerd.sock");
    let listener = tokio::net::UnixListener::bind(&socket).expect("bind");
    // Accepts, then holds the connection without a byte in answer.
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    let timeout = Duration::from_millis(500);

    let start = Instant::now();
    let err = cri::list_pod_sandboxes(&socket, timeout)
        .await
        .expect_err("no list from a silent runtime");

    let took = start.elapsed();
    assert!(
        matches!(&err, Error::Cri { source: CriError::Timeout(t), .. } if *t == timeout),
        "{err:?}"
    );
    assert!(
        took >= timeout && took < timeout + Duration::from_secs(2),
        "took {took:?}"
    );
    assert_eq!(
        err.report(),
        format!(
            "CRI ListPodSandbox on {}: no answer in 500ms",
            socket.display()
        )
    );
}

#[tokio::test]
async fn a_runtime_that_hangs_up_is_an_error() {
    let dir = TestDir::new("cri-hangup");
    let socket = dir.path().join("containerd.sock");
    let listener = tokio::net::UnixListener::bind(&socket).expect("bind");
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            drop(stream);
        }
    });

    let err = cri::list_pod_sandboxes(&socket, TIMEOUT)
        .await
        .expect_err("no list from a runtime that hangs up");

    assert!(
        matches!(
            &err,
            Error::Cri {
                source: CriError::Status(_) | CriError::Handshake(_),
                ..
            }
        ),
        "{err:?}"
    );
}

/// A containerd of the test's own: root, state, socket, config, runc root, CNI directories all
/// in a directory of its own, removed with it; the CRI plugin on. The machine's own paths
/// (/var/lib/containerd, /run/containerd, /etc/cni) are left alone.
struct Containerd {
    child: Child,
    dir: TestDir,
    /// Whether /run/containerd was there before: the shims make /run/containerd/s for their
    /// sockets (a path containerd 1.6 fixes), which is removed when empty unless it was.
    shim_dir_existed: bool,
}

impl Containerd {
    fn start() -> Containerd {
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

    fn socket(&self) -> PathBuf {
        self.dir.path().join("containerd.sock")
    }

    /// Every sandbox, through the client under test; a failure fails the test.
    async fn list(&self) -> Vec<Sandbox> {
        cri::list_pod_sandboxes(&self.socket(), TIMEOUT)
            .await
            .unwrap_or_else(|err| panic!("{}\n{}", err.report(), self.log()))
    }

    /// Runs a sandbox in the node's network namespace, as the kubelet would; its ID. Tried
    /// again for a while: the CRI plugin learns of an image imported through containerd's
    /// events, and until then tries (and fails) to pull it.
    async fn run_sandbox(&self, name: &str, namespace: &str, uid: &str) -> String {
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
    fn cgroup_parent(&self) -> String {
        let name = self.dir.path().file_name().expect("a name");
        format!("/{}", name.to_string_lossy())
    }

    /// Makes [`PAUSE_IMAGE`] (one static program that waits forever), as a docker archive, and
    /// imports it into the k8s.io namespace, where the CRI plugin finds its sandbox image.
    fn import_pause_image(&self) {
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

    fn wait_for_socket(&mut self) {
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
    fn log(&self) -> String {
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
    fn remove_leftovers(&self) {
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

fn nanos_since_epoch() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after the epoch");
    i64::try_from(since.as_nanos()).expect("before 2262")
}

/// Where containerd 1.6's shims put their sockets (in `s/`), whatever containerd's own paths.
const SHIM_DIR: &str = "/run/containerd";

/// The sandbox image, which [`Containerd::import_pause_image`] makes.
const PAUSE_IMAGE: &str = "localhost/installer-cri/pause:1";

/// The shims started by the containerd at `socket` (which their command line names).
fn shims_of(socket: &str) -> Vec<i32> {
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
fn unix_sockets_of(pid: i32) -> Vec<PathBuf> {
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
fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|err| panic!("{cmd:?}: {err}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// This machine's architecture as image configs name it.
fn docker_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// The version `containerd --version` prints: "containerd <repo> <version> <revision>".
fn containerd_version() -> String {
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

/// What the kubelet asks of the runtime to start and end a sandbox, which the installer never
/// does: a client of the test's own, with the CRI v1 messages it needs.
mod kubelet {
    use std::path::Path;

    use http::uri::{PathAndQuery, Uri};
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use tokio::net::UnixStream;

    /// A sandbox in the node's network namespace (no CNI), under `cgroup_parent`; its ID.
    pub async fn run_pod_sandbox(
        socket: &Path,
        name: &str,
        namespace: &str,
        uid: &str,
        cgroup_parent: &str,
    ) -> Result<String, tonic::Status> {
        let request = RunPodSandboxRequest {
            config: Some(PodSandboxConfig {
                metadata: Some(PodSandboxMetadata {
                    name: name.to_string(),
                    uid: uid.to_string(),
                    namespace: namespace.to_string(),
                    attempt: 0,
                }),
                linux: Some(LinuxPodSandboxConfig {
                    cgroup_parent: cgroup_parent.to_string(),
                    security_context: Some(LinuxSandboxSecurityContext {
                        namespace_options: Some(NamespaceOption {
                            network: NODE,
                            pid: POD,
                            ipc: NODE,
                        }),
                    }),
                }),
            }),
        };
        let answer: RunPodSandboxResponse = unary(socket, "RunPodSandbox", request).await?;
        Ok(answer.pod_sandbox_id)
    }

    pub async fn stop_pod_sandbox(socket: &Path, id: &str) -> Result<(), tonic::Status> {
        let request = PodSandboxId {
            pod_sandbox_id: id.to_string(),
        };
        let _: Empty = unary(socket, "StopPodSandbox", request).await?;
        Ok(())
    }

    pub async fn remove_pod_sandbox(socket: &Path, id: &str) -> Result<(), tonic::Status> {
        let request = PodSandboxId {
            pod_sandbox_id: id.to_string(),
        };
        let _: Empty = unary(socket, "RemovePodSandbox", request).await?;
        Ok(())
    }

    async fn unary<Req, Resp>(
        socket: &Path,
        method: &str,
        request: Req,
    ) -> Result<Resp, tonic::Status>
    where
        Req: prost::Message + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        let unavailable = |err: &dyn std::fmt::Display| tonic::Status::unavailable(err.to_string());
        let stream = UnixStream::connect(socket)
            .await
            .map_err(|e| unavailable(&e))?;
        let (sender, connection) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
                .await
                .map_err(|e| unavailable(&e))?;
        let connection = tokio::spawn(connection);
        let transport = tower::service_fn(move |req| {
            let mut sender = sender.clone();
            async move { sender.send_request(req).await }
        });
        let mut grpc =
            tonic::client::Grpc::with_origin(transport, Uri::from_static("http://localhost"));
        let path =
            PathAndQuery::try_from(format!("/runtime.v1.RuntimeService/{method}")).expect("a path");
        let answer = grpc
            .unary(
                tonic::Request::new(request),
                path,
                tonic_prost::ProstCodec::default(),
            )
            .await;
        connection.abort();
        answer.map(tonic::Response::into_inner)
    }

    /// NamespaceMode
    const POD: i32 = 0;
    const NODE: i32 = 2;

    #[derive(Clone, PartialEq, prost::Message)]
    struct RunPodSandboxRequest {
        #[prost(message, optional, tag = "1")]
        config: Option<PodSandboxConfig>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    struct PodSandboxConfig {
        #[prost(message, optional, tag = "1")]
        metadata: Option<PodSandboxMetadata>,
        #[prost(message, optional, tag = "8")]
        linux: Option<LinuxPodSandboxConfig>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    struct PodSandboxMetadata {
        #[prost(string, tag = "1")]
        name: String,
        #[prost(string, tag = "2")]
        uid: String,
        #[prost(string, tag = "3")]
        namespace: String,
        #[prost(uint32, tag = "4")]
        attempt: u32,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    struct LinuxPodSandboxConfig {
        #[prost(string, tag = "1")]
        cgroup_parent: String,
        #[prost(message, optional, tag = "2")]
        security_context: Option<LinuxSandboxSecurityContext>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    struct LinuxSandboxSecurityContext {
        #[prost(message, optional, tag = "1")]
        namespace_options: Option<NamespaceOption>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    struct NamespaceOption {
        #[prost(int32, tag = "1")]
        network: i32,
        #[prost(int32, tag = "2")]
        pid: i32,
        #[prost(int32, tag = "3")]
        ipc: i32,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    struct RunPodSandboxResponse {
        #[prost(string, tag = "1")]
        pod_sandbox_id: String,
    }

    /// StopPodSandboxRequest and RemovePodSandboxRequest alike.
    #[derive(Clone, PartialEq, prost::Message)]
    struct PodSandboxId {
        #[prost(string, tag = "1")]
        pod_sandbox_id: String,
    }

    /// StopPodSandboxResponse and RemovePodSandboxResponse.
    #[derive(Clone, PartialEq, prost::Message)]
    struct Empty {}
}
