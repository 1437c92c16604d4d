//! KubeMacPool's allocator on the cluster tier, two tables:
//! - admission: a pod create's time in the API server (its audit log's received-to-complete),
//!   `BENCH_CREATES` creates (default 200) in an opted-in namespace, where the webhook gives the
//!   pod a MAC, against as many in a namespace without the webhook, interleaved in blocks of 10;
//!   the managers deployed in the cluster as the operator renders them; then where the added
//!   time goes, from the API server's metric of its webhook calls and the managers' metric of
//!   their own answers, read around each block;
//! - start at scale: how long a manager takes from its start to `/readyz` answering 200, and
//!   its memory then, with `BENCH_VMS` VirtualMachines and `BENCH_PODS` pods (default 10,000
//!   each, every one holding a MAC) already in the API. Upstream's figure to stand beside (it
//!   cannot run here): about 80 s at 10,000 VMs (k8snetworkplumbingwg/kubemacpool#555), its
//!   webhook refusing every admission meanwhile. The manager and the cert manager run as
//!   processes of this benchmark against the tier's API server (the binaries
//!   scripts/build-plugins put in target/operator/), so the time is the process's own: exec to
//!   the first 200 of `/readyz`, read over HTTPS every 20 ms.
//!
//! `cargo bench -p kube-tier --bench kubemacpool_start` as root, after scripts/build-plugins
//! and scripts/kube-build.

mod admission;
mod start;

use std::process::{Child, Command, ExitCode};

use anyhow::{bail, Context, Result};

use kube_tier::Cluster;

/// The namespace of the start benchmark's objects and processes.
const NAMESPACE: &str = "kmp-bench";

fn main() -> ExitCode {
    match bench() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            println!("kubemacpool start: FAILED: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn bench() -> Result<()> {
    if !nix::unistd::Uid::effective().is_root() {
        bail!("the benchmark needs root (it runs a cluster)");
    }
    let creates = kube_tier::env_count("BENCH_CREATES", 200)?.max(20);
    let vms = kube_tier::env_count("BENCH_VMS", 10_000)?;
    let pods = kube_tier::env_count("BENCH_PODS", 10_000)?;
    let repo = kube_tier::repo();
    let binary = repo.join("target/operator/kubemacpool");
    if !binary.is_file() {
        bail!("{} is missing: run scripts/build-plugins", binary.display());
    }
    let mut cluster = Cluster::start(&kube_tier::kube_bin()?, &repo, 1)?;
    let mut children = Vec::new();
    let result = admission::admission(&cluster, creates)
        .and_then(|()| start::run(&cluster, &binary, vms, pods, &mut children));
    for mut c in children {
        stop(&mut c);
    }
    // One deletecollection each, in the API server: the teardown's pod by pod deletion of
    // 10,000 pods would take minutes.
    for collection in [
        format!("/api/v1/namespaces/{NAMESPACE}/pods"),
        format!("/apis/kubevirt.io/v1/namespaces/{NAMESPACE}/virtualmachines"),
    ] {
        let _ = cluster.kubectl(&["delete", "--raw", &collection]);
    }
    for e in cluster.teardown() {
        eprintln!("kube-tier: teardown: {e}");
    }
    result
}

fn stop(child: &mut Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let _ = child.wait();
}

/// Starts `binary` against the tier's API server; its log goes to `<base>/<name>.log`.
fn spawn(cluster: &Cluster, binary: &std::path::Path, args: &[&str], name: &str) -> Result<Child> {
    let log = std::fs::File::create(cluster.base().join(format!("{name}.log")))?;
    Command::new(binary)
        .args(args)
        .env("KUBECONFIG", cluster.kubeconfig())
        .env("POD_NAMESPACE", NAMESPACE)
        .env("POD_NAME", name)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))
}

fn get(url: &str) -> Option<String> {
    let out = Command::new("curl")
        .args(["-ksf", "--max-time", "1", url])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}
