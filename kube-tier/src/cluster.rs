//! A single-node cluster: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
//! containerd and the kubelet, plus the image registry, all in the node's namespace, with private
//! directories under one base directory. Started by [`Cluster::start`], torn down on drop: every
//! pid it started, every mount under its directory, the sandboxes' namespaces, the cgroups, the
//! Node object.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::daemon::{run, run_with_stdin, wait_for, Daemon};
use crate::image::{self, Builder, BUSYBOX_IMAGE, REGISTRY_ADDR, REGISTRY_NAME};
use crate::node::{Node, NODE_IP, POD_BRIDGE, POD_SUBNET, SERVICE_SUBNET};
use crate::ovs::Ovs;
use crate::pki;

pub const APISERVER_PORT: u16 = 6443;
const ETCD_CLIENT: &str = "http://127.0.0.1:2379";
/// The Node's name: the API server reaches the kubelet (logs, exec) by it.
pub const NODE_NAME: &str = "localhost";

pub struct Cluster {
    base: PathBuf,
    bin: PathBuf,
    kubeconfig: PathBuf,
    cni_bin: PathBuf,
    cni_conf: PathBuf,
    daemons: Vec<Daemon>,
    builder: Builder,
    node: Node,
    ovs: Option<Ovs>,
    started: Instant,
    torn_down: bool,
}

impl Cluster {
    /// Starts the cluster and waits until the Node is Ready. `bin` holds the Kubernetes binaries
    /// (scripts/kube-build), `repo` is the workspace (for the Containerfile and its binaries).
    pub fn start(bin: &Path, repo: &Path) -> Result<Cluster> {
        let started = Instant::now();
        for b in [
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "kubelet",
            "kubectl",
        ] {
            if !bin.join(b).is_file() {
                bail!(
                    "{} is missing: run scripts/kube-build",
                    bin.join(b).display()
                );
            }
        }
        let base = std::env::temp_dir().join(format!("kube-tier-{}", std::process::id()));
        let node = Node::create(&format!("kube-tier-{}", std::process::id()), APISERVER_PORT)?;
        let mut cluster = Cluster {
            kubeconfig: base.join("admin.kubeconfig"),
            cni_bin: base.join("cni/bin"),
            cni_conf: base.join("cni/net.d"),
            builder: Builder::new(&base.join("buildah")),
            bin: bin.to_path_buf(),
            base,
            daemons: Vec::new(),
            node,
            ovs: None,
            started,
            torn_down: false,
        };
        // From here on, a failure drops the cluster: teardown undoes what was started.
        std::fs::create_dir_all(cluster.base.join("logs"))?;
        cluster.boot(repo)?;
        Ok(cluster)
    }

    fn boot(&mut self, repo: &Path) -> Result<()> {
        let logs = self.base.join("logs");
        let pki = pki::create(&self.base.join("pki"))?;
        std::fs::write(
            &self.kubeconfig,
            pki::kubeconfig(&pki, &format!("https://127.0.0.1:{APISERVER_PORT}")),
        )?;

        let mut etcd = Command::new("etcd");
        etcd.arg("--data-dir")
            .arg(self.base.join("etcd"))
            .args([
                "--listen-client-urls",
                ETCD_CLIENT,
                "--advertise-client-urls",
                ETCD_CLIENT,
            ])
            .args(["--listen-peer-urls", "http://127.0.0.1:2380"])
            .args(["--initial-advertise-peer-urls", "http://127.0.0.1:2380"])
            .args(["--initial-cluster", "default=http://127.0.0.1:2380"])
            .args(["--log-level", "warn"]);
        self.spawn("etcd", etcd, &logs)?;
        wait_for("etcd to listen", Duration::from_secs(30), || {
            Ok(std::net::TcpStream::connect("127.0.0.1:2379")
                .ok()
                .map(drop))
        })?;

        let mut api = Command::new(self.bin.join("kube-apiserver"));
        api.args(["--etcd-servers", ETCD_CLIENT, "--bind-address", "127.0.0.1"])
            .arg(format!("--secure-port={APISERVER_PORT}"))
            .arg(format!("--advertise-address={NODE_IP}"))
            .arg("--tls-cert-file")
            .arg(&pki.apiserver_cert)
            .arg("--tls-private-key-file")
            .arg(&pki.apiserver_key)
            .arg("--client-ca-file")
            .arg(&pki.ca_cert)
            .arg("--token-auth-file")
            .arg(&pki.token_file)
            .arg("--service-account-key-file")
            .arg(&pki.sa_pub)
            .arg("--service-account-signing-key-file")
            .arg(&pki.sa_key)
            .args(["--service-account-issuer", "https://kubernetes.default.svc"])
            .args(["--authorization-mode", "RBAC", "--allow-privileged=true"])
            // Endpoints cannot point at loopback; pods reach the API through the node's DNAT.
            .args(["--endpoint-reconciler-type", "none"])
            .arg(format!("--service-cluster-ip-range={SERVICE_SUBNET}"))
            .args(["--kubelet-preferred-address-types", "Hostname"])
            .args(["--v", "1"]);
        self.spawn("kube-apiserver", api, &logs)?;
        let kubectl = self.kubectl_command();
        wait_for(
            "the API server to be ready",
            Duration::from_secs(90),
            || {
                self.check_daemons()?;
                let mut k = kubectl_clone(&kubectl);
                Ok(run(k.args(["get", "--raw", "/readyz"])).ok().map(drop))
            },
        )?;

        let mut cm = Command::new(self.bin.join("kube-controller-manager"));
        cm.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--service-account-private-key-file")
            .arg(&pki.sa_key)
            .arg("--root-ca-file")
            .arg(&pki.ca_cert)
            .args([
                "--controllers",
                "*",
                "--leader-elect=false",
                "--bind-address",
                "127.0.0.1",
            ])
            .args([
                "--port",
                "0",
                "--use-service-account-credentials=false",
                "--v",
                "1",
            ]);
        self.spawn("kube-controller-manager", cm, &logs)?;
        let mut sched = Command::new(self.bin.join("kube-scheduler"));
        sched.arg("--kubeconfig").arg(&self.kubeconfig).args([
            "--leader-elect=false",
            "--bind-address",
            "127.0.0.1",
            "--port",
            "0",
            "--v",
            "1",
        ]);
        self.spawn("kube-scheduler", sched, &logs)?;

        let registry = image::start_registry(&self.base.join("registry"), &logs)?;
        self.daemons.push(registry);
        self.builder.busybox(&self.base)?;
        self.build_plugins_image(repo, &plugins_image_default(repo)?)?;

        self.ovs = Some(Ovs::start(&self.base.join("ovs"), &logs)?);
        self.provision_cni(repo)?;
        self.start_containerd(&logs)?;
        self.start_kubelet(&logs)?;
        wait_for("the Node to be Ready", Duration::from_secs(120), || {
            self.check_daemons()?;
            let node = self.get_json(&["get", "node", NODE_NAME])?;
            Ok(condition_status(&node, "Ready")
                .filter(|s| s == "True")
                .map(drop))
        })?;
        eprintln!(
            "kube-tier: node {NODE_NAME} Ready {:.1} s after start ({})",
            self.started.elapsed().as_secs_f64(),
            self.base.display()
        );
        Ok(())
    }

    /// The node's primary pod network, as a node image would provision it: a conflist of our
    /// `bridge` and `tuning` with Debian's `host-local` (and `loopback`), and the plugins themselves put in place
    /// by our installer (what the linux-bridge DaemonSet's init container runs). The DaemonSet
    /// finds them recorded as its own and takes them over.
    fn provision_cni(&self, repo: &Path) -> Result<()> {
        std::fs::create_dir_all(&self.cni_bin)?;
        std::fs::create_dir_all(&self.cni_conf)?;
        run(Command::new(repo.join("target/installer/cni-installer"))
            .args(["install", "--from"])
            .arg(repo.join("target/cni-bin"))
            .arg("--to")
            .arg(&self.cni_bin)
            .args(["--plugins", "bridge,tuning"])
            // tuning keeps its state in the tier's own directory, which the node allows.
            .arg("--allow-state-dir")
            .arg(self.base.join("cni/state")))?;
        // containerd brings every sandbox's loopback up through the `loopback` plugin.
        for plugin in ["host-local", "loopback"] {
            std::fs::copy(
                Path::new("/usr/lib/cni").join(plugin),
                self.cni_bin.join(plugin),
            )
            .with_context(|| format!("copy Debian's {plugin} (containernetworking-plugins)"))?;
        }
        let conflist = serde_json::json!({
            "cniVersion": "1.0.0",
            "name": "kube-tier",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": POD_BRIDGE,
                    "isGateway": true,
                    "isDefaultGateway": true,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": POD_SUBNET, "gateway": NODE_IP}]],
                        "dataDir": self.base.join("cni/ipam"),
                    }
                },
                {
                    "type": "tuning",
                    "sysctl": {"net.ipv4.conf.IFNAME.accept_redirects": "0"},
                    "dataDir": self.base.join("cni/state/tuning"),
                }
            ]
        });
        std::fs::write(
            self.cni_conf.join("10-kube-tier.conflist"),
            serde_json::to_vec_pretty(&conflist)?,
        )?;
        Ok(())
    }

    /// Kills `name` (`containerd` or `kubelet`) with SIGKILL, as a crash does: containerd's
    /// shims, and the plugins it runs, go on.
    pub fn crash(&mut self, name: &str) -> Result<()> {
        let at = self
            .daemons
            .iter()
            .position(|d| d.name() == name)
            .with_context(|| format!("{name} is not running"))?;
        self.daemons.remove(at).crash();
        Ok(())
    }

    /// Starts `name` (`containerd` or `kubelet`) again after [`Cluster::crash`], as its service
    /// manager would; containerd once its socket is back.
    pub fn start_again(&mut self, name: &str) -> Result<()> {
        let logs = self.base.join("logs");
        match name {
            "containerd" => {
                let _ = std::fs::remove_file(self.containerd_socket());
                self.start_containerd(&logs)
            }
            "kubelet" => self.start_kubelet(&logs),
            _ => bail!("{name} cannot be started again"),
        }
    }

    fn start_containerd(&mut self, logs: &Path) -> Result<()> {
        let dir = self.base.join("containerd");
        std::fs::create_dir_all(&dir)?;
        let config = dir.join("config.toml");
        std::fs::write(
            &config,
            format!(
                r#"version = 2
root = "{root}"
state = "{state}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "{sock}"
[plugins."io.containerd.internal.v1.opt"]
  path = "{opt}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{BUSYBOX_IMAGE}"
  # Root here lacks CAP_SYS_RESOURCE: runc could not lower its own oom_score_adj.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{bin}"
    conf_dir = "{conf}"
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."{REGISTRY_NAME}"]
    endpoint = ["http://{REGISTRY_ADDR}"]
"#,
                root = dir.join("root").display(),
                state = dir.join("state").display(),
                sock = self.containerd_socket().display(),
                opt = dir.join("opt").display(),
                bin = self.cni_bin.display(),
                conf = self.cni_conf.display(),
            ),
        )?;
        let mut cmd = Command::new("containerd");
        cmd.arg("--config").arg(&config);
        self.spawn("containerd", cmd, logs)?;
        let sock = self.containerd_socket();
        wait_for("containerd's socket", Duration::from_secs(30), || {
            self.check_daemons()?;
            Ok(sock.exists().then_some(()))
        })
    }

    fn start_kubelet(&mut self, logs: &Path) -> Result<()> {
        let dir = self.base.join("kubelet");
        std::fs::create_dir_all(&dir)?;
        let config = dir.join("config.yaml");
        std::fs::write(
            &config,
            "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n\
             cgroupDriver: cgroupfs\nfailSwapOn: false\naddress: 127.0.0.1\nreadOnlyPort: 0\n\
             healthzBindAddress: 127.0.0.1\nnodeStatusUpdateFrequency: 2s\nsyncFrequency: 10s\n\
             authentication:\n  anonymous:\n    enabled: true\n  webhook:\n    enabled: false\n\
             authorization:\n  mode: AlwaysAllow\n\
             evictionHard:\n  memory.available: 100Mi\n  nodefs.available: 1%\n  \
             imagefs.available: 1%\n  nodefs.inodesFree: 1%\n\
             imageGCHighThresholdPercent: 100\nimageGCLowThresholdPercent: 99\n",
        )?;
        let mut cmd = Command::new(self.bin.join("kubelet"));
        cmd.args(["--container-runtime", "remote"])
            .arg(format!(
                "--container-runtime-endpoint=unix://{}",
                self.containerd_socket().display()
            ))
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--config")
            .arg(&config)
            .arg("--root-dir")
            .arg(dir.join("root"))
            .arg("--cert-dir")
            .arg(dir.join("pki"))
            .args([
                "--hostname-override",
                NODE_NAME,
                "--node-ip",
                NODE_IP,
                "--v",
                "1",
            ]);
        self.spawn("kubelet", cmd, logs)
    }

    fn spawn(&mut self, name: &str, cmd: Command, logs: &Path) -> Result<()> {
        self.daemons.push(Daemon::spawn(name, cmd, logs)?);
        Ok(())
    }

    /// Fails when any of the cluster's processes has exited.
    pub fn check_daemons(&mut self) -> Result<()> {
        for d in &mut self.daemons {
            d.check_running()?;
        }
        Ok(())
    }

    pub fn containerd_socket(&self) -> PathBuf {
        self.base.join("containerd/containerd.sock")
    }

    pub fn base(&self) -> &Path {
        &self.base
    }

    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The node's CNI plugin directory (containerd's `bin_dir`).
    pub fn cni_bin_dir(&self) -> &Path {
        &self.cni_bin
    }

    pub fn cni_conf_dir(&self) -> &Path {
        &self.cni_conf
    }

    pub fn node(&self) -> &Node {
        &self.node
    }

    /// Open vSwitch on the node (userspace datapath).
    pub fn ovs(&self) -> &Ovs {
        self.ovs.as_ref().expect("started with the cluster")
    }

    pub fn builder(&self) -> &Builder {
        &self.builder
    }

    /// Builds the project's image from its Containerfile and pushes it as `tag`: an index of
    /// its amd64 and arm64 images when scripts/build-plugins staged both.
    pub fn build_plugins_image(&self, repo: &Path, tag: &str) -> Result<()> {
        let containerfile = repo.join("Containerfile");
        if repo.join("target/image/arm64").is_dir() {
            self.builder.build_index_and_push(
                &containerfile,
                repo,
                tag,
                &["linux/amd64", "linux/arm64"],
            )
        } else {
            self.builder.build_and_push(&containerfile, repo, tag)
        }
    }

    fn kubectl_command(&self) -> Command {
        let mut cmd = Command::new(self.bin.join("kubectl"));
        cmd.arg("--kubeconfig").arg(&self.kubeconfig);
        cmd
    }

    /// `kubectl ARGS`: its stdout, or an error with its stderr.
    pub fn kubectl(&self, args: &[&str]) -> Result<String> {
        run(self.kubectl_command().args(args))
    }

    /// `kubectl ARGS` with `input` on stdin (`apply -f -`).
    pub fn kubectl_stdin(&self, args: &[&str], input: &str) -> Result<String> {
        run_with_stdin(self.kubectl_command().args(args), input.as_bytes())
    }

    /// `kubectl ARGS -o json`, parsed.
    pub fn get_json(&self, args: &[&str]) -> Result<Value> {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        let text = self.kubectl(&all)?;
        serde_json::from_str(&text).context("parse kubectl's JSON")
    }

    /// The log of one of the cluster's processes (`kubelet`, `containerd`, ...), its last lines.
    pub fn log_tail(&self, name: &str, lines: usize) -> String {
        crate::daemon::tail(&self.base.join("logs").join(format!("{name}.log")), lines)
    }

    /// Stops everything; returns what could not be cleaned up. Runs once: later calls (and the
    /// drop after an explicit call) do nothing.
    pub fn teardown(&mut self) -> Vec<String> {
        if std::mem::replace(&mut self.torn_down, true) {
            return Vec::new();
        }
        let mut errors = Vec::new();
        // Workloads first, so the kubelet runs every CNI DEL while the plugins are still there.
        let _ = self.kubectl(&[
            "delete",
            "networkaddonsconfigs",
            "--all",
            "--wait=false",
            "--timeout=20s",
        ]);
        let _ = self.kubectl(&[
            "delete",
            "daemonsets,deployments",
            "--all",
            "--all-namespaces",
            "--timeout=30s",
        ]);
        let _ = self.kubectl(&[
            "delete",
            "pods",
            "--all",
            "--all-namespaces",
            "--grace-period=1",
            "--timeout=60s",
        ]);
        for name in ["kubelet", "kube-scheduler", "kube-controller-manager"] {
            self.stop_daemon(name);
        }
        // What the kubelet did not stop: the sandboxes (and their CNI DEL) through containerd.
        self.stop_sandboxes(&mut errors);
        let _ = self.kubectl(&["delete", "node", NODE_NAME, "--timeout=20s"]);
        for name in ["containerd", "kube-apiserver", "etcd", "registry"] {
            self.stop_daemon(name);
        }
        self.daemons.clear();
        if let Some(mut ovs) = self.ovs.take() {
            ovs.stop();
        }
        self.kill_shims(&mut errors);
        errors.extend(unmount_under(&self.base));
        errors.extend(self.node.teardown());
        if errors.is_empty() {
            if let Err(e) = std::fs::remove_dir_all(&self.base) {
                errors.push(format!("remove {}: {e}", self.base.display()));
            }
        }
        errors
    }

    fn stop_daemon(&mut self, name: &str) {
        if let Some(d) = self.daemons.iter_mut().find(|d| d.name() == name) {
            d.stop(Duration::from_secs(15));
        }
    }

    /// Deletes pod `namespace/pod` (its sandbox and its containers) behind the CRI's back: their
    /// tasks killed and their containers deleted through containerd's own API, as `ctr` in a
    /// cleanup script does, while the kubelet is down (so it never asks the CRI to stop them).
    /// The CRI forgets them at its next start, and no CNI DEL is ever made for the sandbox. The
    /// sandbox's ID.
    pub fn delete_pod_behind_the_runtime(&self, namespace: &str, pod: &str) -> Result<String> {
        let of_pod = format!(
            "labels.\"io.kubernetes.pod.name\"=={pod},labels.\"io.kubernetes.pod.namespace\"=={namespace}"
        );
        let sandbox = format!("{of_pod},labels.\"io.cri-containerd.kind\"==sandbox");
        let list = |filter: &str| -> Result<Vec<String>> {
            let out = run(self.ctr().args(["containers", "list", "-q", filter]))?;
            Ok(out.split_whitespace().map(str::to_string).collect())
        };
        let sandbox = match &list(&sandbox)?[..] {
            [id] => id.clone(),
            other => bail!(
                "pod {namespace}/{pod} has {} sandboxes: {other:?}",
                other.len()
            ),
        };
        let ids = list(&of_pod)?;
        for id in &ids {
            let _ = run(self.ctr().args(["tasks", "kill", "-s", "SIGKILL", id]));
        }
        // The CRI deletes the tasks that exited; whoever does, they go.
        wait_for("the pod's tasks to go", Duration::from_secs(30), || {
            for id in &ids {
                let _ = run(self.ctr().args(["tasks", "delete", id]));
            }
            let tasks = run(self.ctr().args(["tasks", "list", "-q"]))?;
            Ok((!tasks.lines().any(|t| ids.iter().any(|id| t.trim() == id))).then_some(()))
        })?;
        for id in &ids {
            run(self.ctr().args(["containers", "delete", id]))?;
        }
        Ok(sandbox)
    }

    fn ctr(&self) -> Command {
        let mut cmd = Command::new("ctr");
        cmd.arg("--address")
            .arg(self.containerd_socket())
            .args(["--namespace", "k8s.io"]);
        cmd
    }

    /// Kills and deletes every task containerd still runs.
    fn stop_sandboxes(&self, errors: &mut Vec<String>) {
        let Ok(tasks) = run(self.ctr().args(["tasks", "list", "-q"])) else {
            return;
        };
        for id in tasks.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let _ = run(self.ctr().args(["tasks", "kill", "-s", "SIGKILL", id]));
            let _ = wait_for("a task to stop", Duration::from_secs(10), || {
                Ok(run(self.ctr().args(["tasks", "delete", id])).ok().map(drop))
            });
        }
        if let Ok(left) = run(self.ctr().args(["tasks", "list", "-q"])) {
            if !left.trim().is_empty() {
                errors.push(format!("containerd tasks left: {}", left.trim()));
            }
        }
    }

    /// containerd's shims outlive containerd: end those of this cluster (found by its socket).
    fn kill_shims(&self, errors: &mut Vec<String>) {
        let sock = self.containerd_socket();
        let sock = sock.to_string_lossy();
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return;
        };
        for e in dir.flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
                continue;
            };
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains("containerd-shim") && cmdline.contains(sock.as_ref()) {
                if let Err(err) = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                ) {
                    errors.push(format!("kill shim {pid}: {err}"));
                }
            }
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let errors = self.teardown();
        for e in &errors {
            eprintln!("kube-tier: teardown: {e}");
        }
    }
}

/// `PLUGINS_IMAGE`'s default in deploy/operator.yaml: the image the manifests name as they are.
pub fn plugins_image_default(repo: &Path) -> Result<String> {
    let text = std::fs::read_to_string(repo.join("deploy/operator.yaml"))?;
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() == "- name: PLUGINS_IMAGE" {
            if let Some(value) = lines.next().and_then(|l| l.trim().strip_prefix("value: ")) {
                return Ok(value.trim_matches('"').to_string());
            }
        }
    }
    bail!("deploy/operator.yaml sets no PLUGINS_IMAGE")
}

/// The `status` of condition `type_` of an object with `status.conditions`.
pub fn condition_status(obj: &Value, type_: &str) -> Option<String> {
    condition(obj, type_).and_then(|c| c["status"].as_str().map(str::to_string))
}

pub fn condition<'a>(obj: &'a Value, type_: &str) -> Option<&'a Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// Unmounts (lazily) everything mounted under `dir`, deepest first.
fn unmount_under(dir: &Path) -> Vec<String> {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return vec!["read /proc/self/mountinfo".to_string()];
    };
    let prefix = dir.to_string_lossy().into_owned();
    let mut points: Vec<String> = info
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(|p| p.replace("\\040", " "))
        .filter(|p| p.starts_with(&prefix))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.len()));
    points.dedup();
    let mut errors = Vec::new();
    for p in points {
        if let Err(e) = nix::mount::umount2(p.as_str(), nix::mount::MntFlags::MNT_DETACH) {
            if e != nix::errno::Errno::EINVAL && e != nix::errno::Errno::ENOENT {
                errors.push(format!("umount {p}: {e}"));
            }
        }
    }
    errors
}

fn kubectl_clone(cmd: &Command) -> Command {
    let mut c = Command::new(cmd.get_program());
    c.args(cmd.get_args());
    c
}
