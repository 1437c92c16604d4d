//! containerd: its configuration and start, and what the tier does through its own API (`ctr`)
//! behind the kubelet's back.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Result};

use super::{Cluster, CONTAINERD_SOCK};
use crate::daemon::{run, wait_for};
use crate::image::{BUSYBOX_IMAGE, REGISTRY_ADDR, REGISTRY_NAME};

impl Cluster {
    /// containerd on node `node`, at its default paths in the node's view (its root, state and
    /// socket, runc's state and the shims' sockets under `/run/containerd`), pods' networks from
    /// `/etc/cni/net.d` and `/opt/cni/bin`.
    pub(super) fn start_containerd(&mut self, node: usize, logs: &Path) -> Result<()> {
        let dir = self.nodes[node].dir().join("containerd");
        std::fs::create_dir_all(&dir)?;
        let config = dir.join("config.toml");
        std::fs::write(
            &config,
            format!(
                r#"version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "{CONTAINERD_SOCK}"
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
    bin_dir = "/opt/cni/bin"
    # The first conflist there, as on a real node: the pod network, or Multus' in front of it
    # once its daemon runs (extra networks come through Multus alone).
    conf_dir = "/etc/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."{REGISTRY_NAME}"]
    endpoint = ["http://{REGISTRY_ADDR}"]
"#,
                opt = dir.join("opt").display(),
            ),
        )?;
        let mut cmd = self.nodes[node].command("containerd");
        cmd.arg("--config").arg(&config);
        let name = self.daemon_name(node, "containerd");
        self.spawn(&name, cmd, logs)?;
        let sock = self.nodes[node].host_path(CONTAINERD_SOCK);
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
    pub fn delete_pod_behind_the_runtime(
        &self,
        node: usize,
        namespace: &str,
        pod: &str,
    ) -> Result<String> {
        let sandbox = self.sandbox_of(node, namespace, pod)?;
        let ids = self.containers(node, &of_pod(namespace, pod))?;
        for id in &ids {
            let _ = run(self.ctr(node).args(["tasks", "kill", "-s", "SIGKILL", id]));
        }
        // The CRI deletes the tasks that exited; whoever does, they go.
        wait_for("the pod's tasks to go", Duration::from_secs(30), || {
            for id in &ids {
                let _ = run(self.ctr(node).args(["tasks", "delete", id]));
            }
            let tasks = run(self.ctr(node).args(["tasks", "list", "-q"]))?;
            Ok((!tasks.lines().any(|t| ids.iter().any(|id| t.trim() == id))).then_some(()))
        })?;
        for id in &ids {
            run(self.ctr(node).args(["containers", "delete", id]))?;
        }
        Ok(sandbox)
    }

    /// The ID of the one sandbox containerd has for pod `namespace/pod` on node `node`.
    pub fn sandbox_of(&self, node: usize, namespace: &str, pod: &str) -> Result<String> {
        let filter = format!(
            "{},labels.\"io.cri-containerd.kind\"==sandbox",
            of_pod(namespace, pod)
        );
        match &self.containers(node, &filter)?[..] {
            [id] => Ok(id.clone()),
            other => bail!(
                "pod {namespace}/{pod} has {} sandboxes: {other:?}",
                other.len()
            ),
        }
    }

    /// How many of pod `namespace/pod`'s containers (its sandbox's pause container aside) have
    /// a running task on node `node`.
    pub fn running_containers(&self, node: usize, namespace: &str, pod: &str) -> Result<usize> {
        let filter = format!(
            "{},labels.\"io.cri-containerd.kind\"==container",
            of_pod(namespace, pod)
        );
        let ids = self.containers(node, &filter)?;
        // `ctr tasks list`: TASK PID STATUS
        let tasks = run(self.ctr(node).args(["tasks", "list"]))?;
        Ok(tasks
            .lines()
            .filter_map(|l| {
                let mut fields = l.split_whitespace();
                Some((fields.next()?, fields.nth(1)?))
            })
            .filter(|(id, status)| *status == "RUNNING" && ids.iter().any(|i| i == id))
            .count())
    }

    /// `ctr containers list -q <filter>` on node `node`.
    fn containers(&self, node: usize, filter: &str) -> Result<Vec<String>> {
        let out = run(self.ctr(node).args(["containers", "list", "-q", filter]))?;
        Ok(out.split_whitespace().map(str::to_string).collect())
    }

    /// `ctr` against node `node`'s containerd.
    pub(super) fn ctr(&self, node: usize) -> Command {
        let mut cmd = self.nodes[node].command("ctr");
        cmd.args(["--address", CONTAINERD_SOCK, "--namespace", "k8s.io"]);
        cmd
    }

    /// Kills and deletes every task node `node`'s containerd still runs.
    pub(super) fn stop_sandboxes(&self, node: usize, errors: &mut Vec<String>) {
        let Ok(tasks) = run(self.ctr(node).args(["tasks", "list", "-q"])) else {
            return;
        };
        for id in tasks.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let _ = run(self.ctr(node).args(["tasks", "kill", "-s", "SIGKILL", id]));
            let _ = wait_for("a task to stop", Duration::from_secs(10), || {
                Ok(run(self.ctr(node).args(["tasks", "delete", id]))
                    .ok()
                    .map(drop))
            });
        }
        if let Ok(left) = run(self.ctr(node).args(["tasks", "list", "-q"])) {
            if !left.trim().is_empty() {
                errors.push(format!(
                    "{}: containerd tasks left: {}",
                    self.nodes[node].name(),
                    left.trim()
                ));
            }
        }
    }
}

/// A `ctr` filter for the containers of pod `namespace/pod`.
fn of_pod(namespace: &str, pod: &str) -> String {
    format!(
        "labels.\"io.kubernetes.pod.name\"=={pod},labels.\"io.kubernetes.pod.namespace\"=={namespace}"
    )
}
