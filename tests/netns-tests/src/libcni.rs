//! The libcni driver (`libcni-driver/main.go`): building it, and driving one attachment through
//! it the way containerd, CRI-O and Multus call plugins.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

use crate::netns::HostSandbox;
use crate::paths::{target_dir, workspace_root};
use crate::process::{describe_output, expect_success, run_command, PLUGIN_ENV_PATH};
use crate::real_kernel_tier;

/// GOPATH holding Debian's libcni source (`golang-github-appc-cni-dev`).
const DEBIAN_GOPATH: &str = "/usr/share/gocode";
const LIBCNI_API_GO: &str =
    "/usr/share/gocode/src/github.com/containernetworking/cni/libcni/api.go";

/// Builds `libcni-driver/main.go` against Debian's libcni (GOPATH mode, offline) into
/// `<target>/libcni-driver`, once per test process, and returns its path.
///
/// # Panics
/// If `go` (package `golang-go`) or the libcni source (package `golang-github-appc-cni-dev`)
/// is missing, or if the build fails.
pub fn build_libcni_driver() -> PathBuf {
    static DRIVER: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match DRIVER.get_or_init(build_driver_uncached) {
        Ok(path) => path.clone(),
        Err(e) => panic!("{e}"),
    }
}

fn build_driver_uncached() -> Result<PathBuf, String> {
    // Inside the real-kernel guest (software-emulated, so a Go build is slow there) the driver
    // the host built before booting it is used as it is.
    let built = target_dir().join("libcni-driver");
    if real_kernel_tier::in_guest() && built.is_file() {
        return Ok(built);
    }
    let go_ok = Command::new("go")
        .arg("version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !go_ok {
        return Err(
            "the libcni driver needs the Go toolchain: `go` is not on PATH. \
                    Install it with `apt-get install -y golang-go`."
                .to_owned(),
        );
    }
    if !Path::new(LIBCNI_API_GO).exists() {
        return Err(format!(
            "the libcni driver needs Debian's libcni source ({LIBCNI_API_GO} is missing). \
             Install it with `apt-get install -y golang-github-appc-cni-dev`."
        ));
    }

    let target = target_dir();
    std::fs::create_dir_all(&target)
        .map_err(|e| format!("cannot create {}: {e}", target.display()))?;
    let out = target.join("libcni-driver");
    // Build to a private name then rename, so concurrent test processes never run (or write
    // over) a half-written binary.
    let tmp = target.join(format!("libcni-driver.tmp.{}", std::process::id()));
    let gocache = target.join("libcni-driver-gocache");

    let mut cmd = Command::new("go");
    cmd.current_dir(workspace_root())
        .args(["build", "-o"])
        .arg(&tmp)
        .arg("./tests/netns-tests/libcni-driver")
        .env("GOPATH", DEBIAN_GOPATH)
        .env("GO111MODULE", "off")
        .env("GOFLAGS", "")
        .env("GOCACHE", &gocache)
        .env("GOPROXY", "off")
        .env("CGO_ENABLED", "0");
    let result = run_command(cmd, b"");
    if !result.status.success() {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!(
            "building the libcni driver failed (GOPATH={DEBIAN_GOPATH} GO111MODULE=off \
             go build ./tests/netns-tests/libcni-driver):\n{}",
            describe_output(&result)
        ));
    }
    std::fs::rename(&tmp, &out)
        .map_err(|e| format!("cannot rename {} to {}: {e}", tmp.display(), out.display()))?;
    Ok(out)
}

/// Kubernetes pod identity, turned into CNI_ARGS the way Multus passes them to delegates.
#[derive(Debug, Clone)]
pub struct PodIdentity {
    pub namespace: String,
    pub name: String,
    pub infra_container_id: String,
    pub uid: String,
}

impl PodIdentity {
    /// `IgnoreUnknown=true;K8S_POD_NAMESPACE=..;K8S_POD_NAME=..;K8S_POD_INFRA_CONTAINER_ID=..;
    /// K8S_POD_UID=..`, in Multus's order.
    pub fn multus_cni_args(&self) -> String {
        format!(
            "IgnoreUnknown=true;K8S_POD_NAMESPACE={};K8S_POD_NAME={};\
             K8S_POD_INFRA_CONTAINER_ID={};K8S_POD_UID={}",
            self.namespace, self.name, self.infra_container_id, self.uid
        )
    }
}

/// One attachment (network list × container × ifname) driven through libcni, like a runtime
/// does: ADD, CHECK and DEL all use the same parameters and a private result cache.
#[derive(Debug, Clone)]
pub struct LibcniAttachment {
    driver: PathBuf,
    sandbox: Option<String>,
    conflist: PathBuf,
    network_name: String,
    plugin_path: Vec<PathBuf>,
    cache_dir: PathBuf,
    netns: String,
    container_id: String,
    ifname: String,
    cni_args: Option<String>,
    cap_args: Option<Value>,
}

impl LibcniAttachment {
    /// An attachment of the network list in `conflist` to `netns_path` as `ifname`, searching
    /// plugins in `plugin_path` and caching results in `cache_dir`. Builds the driver if needed.
    ///
    /// # Panics
    /// If the driver cannot be built or the conflist cannot be read.
    pub fn new(
        conflist: &Path,
        plugin_path: &[&Path],
        cache_dir: &Path,
        netns_path: &str,
        container_id: &str,
        ifname: &str,
    ) -> LibcniAttachment {
        let text = std::fs::read_to_string(conflist)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", conflist.display()));
        let parsed: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is not JSON: {e}", conflist.display()));
        let network_name = parsed
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        LibcniAttachment {
            driver: build_libcni_driver(),
            sandbox: None,
            conflist: conflist.to_path_buf(),
            network_name,
            plugin_path: plugin_path.iter().map(|p| p.to_path_buf()).collect(),
            cache_dir: cache_dir.to_path_buf(),
            netns: netns_path.to_owned(),
            container_id: container_id.to_owned(),
            ifname: ifname.to_owned(),
            cni_args: None,
            cap_args: None,
        }
    }

    /// Runs the driver (hence every plugin) inside `sandbox`, as if it were the host.
    pub fn in_sandbox(mut self, sandbox: &HostSandbox) -> LibcniAttachment {
        self.sandbox = Some(sandbox.netns().name().to_owned());
        self
    }

    /// CNI_ARGS (`K=V;K=V`).
    pub fn cni_args(mut self, args: &str) -> LibcniAttachment {
        self.cni_args = Some(args.to_owned());
        self
    }

    /// Capability args (a JSON object), passed to plugins as `runtimeConfig` if they declare the
    /// capability.
    pub fn cap_args(mut self, args: Value) -> LibcniAttachment {
        self.cap_args = Some(args);
        self
    }

    /// The network name from the conflist.
    pub fn network_name(&self) -> &str {
        &self.network_name
    }

    /// The libcni result cache file of this attachment:
    /// `<cache>/results/<network>-<containerID>-<ifname>`.
    pub fn cache_entry(&self) -> PathBuf {
        self.cache_dir.join("results").join(format!(
            "{}-{}-{}",
            self.network_name, self.container_id, self.ifname
        ))
    }

    /// `libcni-driver add`; on success stdout is the result JSON.
    pub fn add(&self) -> Output {
        self.run("add")
    }

    /// `libcni-driver add`, asserting success; returns the parsed result.
    ///
    /// # Panics
    /// If ADD fails or prints something that is not JSON.
    pub fn add_ok(&self) -> Value {
        let stdout = expect_success(&self.add(), "libcni ADD");
        serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("ADD result is not JSON: {e}\n{stdout}"))
    }

    /// `libcni-driver check`.
    pub fn check(&self) -> Output {
        self.run("check")
    }

    /// `libcni-driver del`.
    pub fn del(&self) -> Output {
        self.run("del")
    }

    /// `libcni-driver validate` (VERSION on every plugin, as CRI-O does at config load); on
    /// success stdout is the JSON list of enabled capabilities.
    pub fn validate(&self) -> Output {
        let mut cmd = self.base_command("validate");
        cmd.arg("--plugin-path").arg(self.joined_plugin_path());
        run_command(cmd, b"")
    }

    fn joined_plugin_path(&self) -> String {
        self.plugin_path
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(":")
    }

    fn base_command(&self, verb: &str) -> Command {
        let mut cmd = match &self.sandbox {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).arg(&self.driver);
                c
            }
            None => Command::new(&self.driver),
        };
        // libcni hands the plugins its own environment: the tests' node policy among it.
        cmd.env_clear()
            .env("PATH", PLUGIN_ENV_PATH)
            .env(crate::NODE_POLICY_ENV, crate::test_node_policy());
        cmd.arg(verb).arg("--conflist").arg(&self.conflist);
        cmd
    }

    fn run(&self, verb: &str) -> Output {
        let mut cmd = self.base_command(verb);
        cmd.args(["--netns", &self.netns])
            .args(["--container-id", &self.container_id])
            .args(["--ifname", &self.ifname])
            .arg("--plugin-path")
            .arg(self.joined_plugin_path())
            .arg("--cache-dir")
            .arg(&self.cache_dir);
        if let Some(args) = &self.cni_args {
            cmd.args(["--cni-args", args]);
        }
        if let Some(caps) = &self.cap_args {
            cmd.args(["--cap-args", &caps.to_string()]);
        }
        run_command(cmd, b"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multus_cni_args_order() {
        let pod = PodIdentity {
            namespace: "ns".into(),
            name: "pod".into(),
            infra_container_id: "abc".into(),
            uid: "u-1".into(),
        };
        assert_eq!(
            pod.multus_cni_args(),
            "IgnoreUnknown=true;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=pod;\
             K8S_POD_INFRA_CONTAINER_ID=abc;K8S_POD_UID=u-1"
        );
    }
}
