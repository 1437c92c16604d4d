//! containerd: its configuration and start, and what the tier does through its own API (`ctr`)
//! behind the kubelet's back.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Result};

use super::Cluster;
use crate::daemon::{run, wait_for};
use crate::image::{BUSYBOX_IMAGE, REGISTRY_ADDR, REGISTRY_NAME};

impl Cluster {
    pub(super) fn start_containerd(&mut self, logs: &Path) -> Result<()> {
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
        # runc's state (the shim's default is /run/containerd/runc).
        Root = "{runc_root}"
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
                runc_root = dir.join("runc").display(),
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

    pub(super) fn ctr(&self) -> Command {
        let mut cmd = Command::new("ctr");
        cmd.arg("--address")
            .arg(self.containerd_socket())
            .args(["--namespace", "k8s.io"]);
        cmd
    }

    /// Kills and deletes every task containerd still runs.
    pub(super) fn stop_sandboxes(&self, errors: &mut Vec<String>) {
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
    pub(super) fn kill_shims(&self, errors: &mut Vec<String>) {
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
