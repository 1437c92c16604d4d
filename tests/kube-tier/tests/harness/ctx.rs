//! What every test is given: the cluster, the repository it was built from, and the
//! NetworkAddonsConfig applied last; with the plain kubectl calls and node01, the node the
//! scenarios that look at one node use.

use anyhow::Result;
use serde_json::Value;

use kube_tier::node::Node;
use kube_tier::Cluster;

use super::nac::AppliedConfig;

pub struct Ctx {
    pub cluster: Cluster,
    pub repo: std::path::PathBuf,
    /// The NetworkAddonsConfig [`Ctx::apply_nac`] applied last, as the API server then had it.
    pub(super) applied: std::sync::Mutex<Option<AppliedConfig>>,
    /// The scraper's token and when it was asked for ([`Ctx::scraper_token`]).
    pub(super) scraper: std::sync::Mutex<Option<(String, std::time::Instant)>>,
}

impl Ctx {
    pub fn new(cluster: Cluster, repo: std::path::PathBuf) -> Ctx {
        Ctx {
            cluster,
            repo,
            applied: std::sync::Mutex::new(None),
            scraper: std::sync::Mutex::new(None),
        }
    }

    pub fn kubectl(&self, args: &[&str]) -> Result<String> {
        self.cluster.kubectl(args)
    }

    pub fn get(&self, args: &[&str]) -> Result<Value> {
        self.cluster.get_json(args)
    }

    /// `kubectl apply -f -` of a manifest.
    pub fn apply(&self, yaml: &str) -> Result<String> {
        self.cluster.kubectl_stdin(&["apply", "-f", "-"], yaml)
    }

    pub fn exists(&self, kind: &str, name: &str, namespace: Option<&str>) -> Result<bool> {
        let mut args = vec!["get", kind, name, "--ignore-not-found", "-o", "name"];
        if let Some(ns) = namespace {
            args.extend(["-n", ns]);
        }
        Ok(!self.kubectl(&args)?.trim().is_empty())
    }

    /// node01, where the scenarios that look at one node run their pods.
    pub fn node01(&self) -> &Node {
        self.cluster.node(0)
    }

    /// node01's Node object.
    pub fn node(&self) -> Result<Value> {
        self.get(&["get", "node", self.node01().name()])
    }

    /// Runs `script` on node01 and returns its stdout.
    pub fn sh(&self, script: &str) -> Result<String> {
        self.node01().sh(script)
    }
}
