//! A new image of the installer and plugins rolled out under running pods: the DaemonSet's
//! installer replaces the binaries the kubelet's CNI calls run, while pods come and go.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};

use kube_tier::daemon::{run, wait_for};

use super::operator::LINUX_BRIDGE_DS;
use super::pods::{churn_pods, create_pod, delete_pod, wait_pod_ip};
use crate::{check, Ctx, NAMESPACE, OPERATOR};

const NEW_IMAGE: &str = "localhost/secondary-cni/plugins:upgrade";

/// The amd64 root the Containerfile copies, in a build context of its own.
const STAGED: &str = "target/image/amd64";

/// A build context for the Containerfile whose `bridge` and `tuning` differ from the installed
/// ones (an extra ELF note section: same code, another sha256), everything else as built.
fn upgraded_context(ctx: &Ctx, dir: &Path) -> Result<()> {
    for sub in ["", "plugins"] {
        let from = ctx.repo.join(STAGED).join(sub);
        std::fs::create_dir_all(dir.join(STAGED).join(sub))?;
        for entry in std::fs::read_dir(&from)? {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                std::fs::copy(
                    entry.path(),
                    dir.join(STAGED).join(sub).join(entry.file_name()),
                )?;
            }
        }
    }
    let note = dir.join("note");
    std::fs::write(&note, "kube-tier upgrade\n")?;
    for plugin in ["bridge", "tuning"] {
        let bin = dir.join(STAGED).join("plugins").join(plugin);
        run(Command::new("objcopy")
            .arg(format!("--add-section=.note.kube-tier={}", note.display()))
            .arg(&bin))?;
    }
    Ok(())
}

fn sha256(path: &Path) -> Result<String> {
    let out = run(Command::new("sha256sum").arg(path))?;
    Ok(out
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string())
}

pub fn installer_upgrade(ctx: &mut Ctx) -> Result<()> {
    let ctx: &Ctx = ctx;
    ctx.apply_nac("linuxBridge: {}\n")?;
    ctx.kubectl_wait("Available", "240s")?;
    let dir = ctx.cluster.base().join("upgrade-context");
    upgraded_context(ctx, &dir)?;
    ctx.cluster
        .builder()
        .build_and_push(&ctx.repo.join("Containerfile"), &dir, NEW_IMAGE)?;
    let new_bridge = sha256(&dir.join(STAGED).join("plugins/bridge"))?;

    // Pods come and go on every node while the new image rolls out node by node: every ADD and
    // DEL must succeed.
    let stop = AtomicBool::new(false);
    let churn = std::thread::scope(|s| -> Result<usize> {
        let workers: Vec<_> = ctx
            .cluster
            .nodes()
            .iter()
            .map(|node| {
                let (node, stop) = (node.name(), &stop);
                s.spawn(move || churn_pods(ctx, &format!("churn-{node}"), node, 30, stop))
            })
            .collect();
        let rollout = (|| -> Result<()> {
            ctx.kubectl(&[
                "set",
                "env",
                &format!("deployment/{OPERATOR}"),
                "-n",
                NAMESPACE,
                &format!("PLUGINS_IMAGE={NEW_IMAGE}"),
            ])?;
            ctx.wait_rollout("deployment", OPERATOR)?;
            wait_for(
                "the DaemonSet to run the new image",
                Duration::from_secs(120),
                || {
                    let ds = ctx.get(&["get", "daemonset", LINUX_BRIDGE_DS, "-n", NAMESPACE])?;
                    Ok(ds["spec"]["template"]["spec"]["containers"][0]["image"]
                        .as_str()
                        .filter(|i| *i == NEW_IMAGE)
                        .map(drop))
                },
            )?;
            ctx.wait_rollout("daemonset", LINUX_BRIDGE_DS)
        })();
        stop.store(true, Ordering::Relaxed);
        let mut n = 0;
        for worker in workers {
            n += worker
                .join()
                .map_err(|_| anyhow::anyhow!("a churn thread panicked"))??;
        }
        rollout?;
        Ok(n)
    })?;
    check(churn > 0, || "no pod was created during the rollout".into())?;
    println!(
        "    {churn} pods created and deleted on {} nodes while the new image rolled out",
        ctx.cluster.nodes().len()
    );

    for node in ctx.cluster.nodes() {
        let installed = sha256(&node.host_path("/opt/cni/bin/bridge"))?;
        check(installed == new_bridge, || {
            format!("{}'s bridge is not the new image's", node.name())
        })?;
    }
    // A pod after the upgrade gets its network from what the DaemonSet installed.
    create_pod(ctx, "after-upgrade")?;
    wait_pod_ip(ctx, "after-upgrade")?;
    delete_pod(ctx, "after-upgrade")?;
    // The warnings about this scenario's pods: earlier scenarios' pods fail on purpose.
    let failures = ctx
        .kubectl(&[
            "get",
            "events",
            "-A",
            "--field-selector",
            "type=Warning",
            "-o",
            "custom-columns=POD:.involvedObject.name,REASON:.reason,MESSAGE:.message",
            "--no-headers",
        ])
        .context("list warning events")?;
    let cni_failures: Vec<&str> = failures
        .lines()
        .filter(|l| l.starts_with("churn-") || l.starts_with("after-upgrade "))
        .filter(|l| {
            l.contains("FailedCreatePodSandBox") || l.contains("FailedKillPod") || l.contains("CNI")
        })
        .collect();
    check(cni_failures.is_empty(), || {
        format!(
            "failed CNI calls ({churn} pods churned):\n{}",
            cni_failures.join("\n")
        )
    })
}
