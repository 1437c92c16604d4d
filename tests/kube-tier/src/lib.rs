//! The cluster test tier: a real Kubernetes of N nodes (two by default) built from Debian's
//! packages (scripts/kube-build), each node in network, mount and UTS namespaces of its own, the
//! control plane in another, started by the tests (or `kube-tier up`) and torn down by them,
//! with the project's image built from its Containerfile and served by a real registry.
//! containerd's pod network is our `bridge` and `tuning`, so every pod the tests start gets its
//! interface from our plugins.
//!
//! `tests/cluster.rs` holds the tests; `cargo test -p kube-tier --test cluster` runs them.

pub mod apiextensions;
pub mod cli;
pub mod cluster;
pub mod daemon;
pub mod host;
pub mod image;
pub mod measure;
pub mod metrics;
pub mod network;
pub mod node;
pub mod operator;
pub mod ovs;
pub mod pki;
pub mod stand_in;

pub use cluster::Cluster;

use std::path::PathBuf;

/// The workspace root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map(PathBuf::from)
        .unwrap_or_default()
}

/// A count from the environment variable `name` (a benchmark's size), else `default`.
pub fn env_count(name: &str, default: usize) -> anyhow::Result<usize> {
    use anyhow::Context;
    match std::env::var(name) {
        Ok(v) => v.parse().with_context(|| format!("{name}={v}")),
        Err(_) => Ok(default),
    }
}

/// Where scripts/kube-build put the Kubernetes binaries (`KUBE_TIER_BIN` overrides).
pub fn kube_bin() -> anyhow::Result<PathBuf> {
    if let Ok(dir) = std::env::var("KUBE_TIER_BIN") {
        return Ok(PathBuf::from(dir));
    }
    let out = daemon::run(
        std::process::Command::new("bash")
            .arg(repo().join("scripts/kube-build"))
            .arg("--print"),
    )?;
    Ok(PathBuf::from(out.trim()).join("bin"))
}
