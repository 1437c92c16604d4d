//! Harness for integration tests that run CNI plugins in real network namespaces.
//!
//! Everything here is test support code: the helpers panic with a descriptive message instead of
//! returning errors, so that a test fails loudly (and never skips) when the environment is not
//! what it needs. Resources are owned by guards ([`Netns`], [`HostSandbox`], [`TempDir`]) that
//! clean up in `Drop`, so a failing test leaves nothing behind.
//!
//! The host network is never touched: plugins that create bridges or veths in the "host"
//! namespace are run inside a throwaway [`HostSandbox`] (a named netns of its own), with the
//! container namespaces created beside it. All names include the test's tag and the process id,
//! so tests run in parallel safely.
//!
//! Two ways to call a plugin are provided:
//! - [`run_plugin`] / [`run_plugin_in`]: exec the binary exactly as a runtime does (CNI_* env,
//!   config on stdin), for spec-level checks;
//! - [`LibcniAttachment`]: go through the libcni driver (`libcni-driver/main.go`, built by
//!   [`build_libcni_driver`]), the code path containerd, CRI-O and Multus use.

pub mod bench;
pub mod openvswitch;
pub mod real_kernel_tier;

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::io::{Read, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;

/// Where Debian's `containernetworking-plugins` installs the Go reference plugins.
pub const GO_PLUGIN_DIR: &str = "/usr/lib/cni";

/// Env variable that overrides [`our_plugin_dir`].
pub const PLUGIN_DIR_ENV: &str = "CNI_TEST_PLUGIN_DIR";

/// GOPATH holding Debian's libcni source (`golang-github-appc-cni-dev`).
const DEBIAN_GOPATH: &str = "/usr/share/gocode";
const LIBCNI_API_GO: &str =
    "/usr/share/gocode/src/github.com/containernetworking/cni/libcni/api.go";

/// PATH given to plugins and to the driver (the rest of the environment is cleared).
const PLUGIN_ENV_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Upper bound for one plugin or driver invocation; a hung plugin fails the test.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

/// Prefix of every namespace, directory and container ID this harness creates.
pub const NAME_PREFIX: &str = "cnit";

// ---------------------------------------------------------------------------------------------
// Paths and environment

/// The Cargo workspace root (the parent of this crate).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("netns-tests lives inside the workspace directory")
        .to_path_buf()
}

/// The Cargo target directory: `$CARGO_TARGET_DIR` if set, else `<workspace>/target`.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                workspace_root().join(dir)
            }
        }
        _ => workspace_root().join("target"),
    }
}

/// Directory holding OUR plugin binaries: `$CNI_TEST_PLUGIN_DIR` if set, else
/// `<workspace>/target/cni-bin` (where the build script copies the static release binaries).
pub fn our_plugin_dir() -> PathBuf {
    match std::env::var_os(PLUGIN_DIR_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => workspace_root().join("target").join("cni-bin"),
    }
}

/// Directory holding Debian's Go reference plugins (`/usr/lib/cni`).
pub fn go_plugin_dir() -> PathBuf {
    PathBuf::from(GO_PLUGIN_DIR)
}

/// Path of one of OUR plugin binaries.
///
/// # Panics
/// If the binary is missing, with instructions on how to build it.
pub fn our_plugin(name: &str) -> PathBuf {
    let dir = our_plugin_dir();
    let path = dir.join(name);
    if !is_executable_file(&path) {
        panic!(
            "our plugin binary `{name}` is missing: {} does not exist or is not executable.\n\
             Build the project's static release binaries and copy them into {} \
             (the project's build script does this; by hand: `cargo build --release` in {} and \
             copy target/release/{name} to target/cni-bin/), or point {PLUGIN_DIR_ENV} at a \
             directory holding a `{name}` binary.",
            path.display(),
            dir.display(),
            workspace_root().display(),
        );
    }
    path
}

/// Path of one of Debian's Go reference plugins.
///
/// # Panics
/// If the binary is missing, naming the Debian package to install.
pub fn go_plugin(name: &str) -> PathBuf {
    let path = go_plugin_dir().join(name);
    if !is_executable_file(&path) {
        panic!(
            "Go reference plugin `{name}` is missing: {} does not exist. \
             Install it with `apt-get install -y containernetworking-plugins`.",
            path.display()
        );
    }
    path
}

fn is_executable_file(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Fails the test unless it runs as root (network namespaces need CAP_SYS_ADMIN/CAP_NET_ADMIN).
///
/// # Panics
/// If the effective uid is not 0.
pub fn require_root() {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|rest| rest.split_whitespace().nth(1))
        .map(str::to_owned);
    if euid.as_deref() != Some("0") {
        panic!(
            "netns-tests must run as root (they create network namespaces): \
             run `cargo test -p netns-tests` as root (effective uid is {euid:?})"
        );
    }
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A name unique to this process and call: `cnit-<tag>-<pid>-<n>`, with the tag reduced to
/// `[a-z0-9-]` and shortened. Valid as a netns name, a directory name and a CNI container ID.
pub fn unique_name(tag: &str) -> String {
    let mut clean: String = tag
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    clean.truncate(40);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{NAME_PREFIX}-{clean}-{}-{n}", std::process::id())
}

// ---------------------------------------------------------------------------------------------
// Running commands

/// Runs `cmd` with `stdin` fed to it, capturing stdout and stderr, and kills it (by its own pid)
/// if it runs longer than [`COMMAND_TIMEOUT`].
///
/// # Panics
/// If the command cannot be spawned or times out.
pub fn run_command(mut cmd: Command, stdin: &[u8]) -> Output {
    let desc = format!("{cmd:?}");
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot spawn {desc}: {e}"));

    let input = stdin.to_vec();
    let writer = child.stdin.take().map(|mut pipe| {
        thread::spawn(move || {
            // A plugin may exit without reading stdin (e.g. VERSION): ignore EPIPE.
            let _ = pipe.write_all(&input);
        })
    });
    let stdout = child.stdout.take().map(spawn_reader);
    let stderr = child.stderr.take().map(spawn_reader);

    let status = wait_with_deadline(&mut child, &desc);
    if let Some(w) = writer {
        let _ = w.join();
    }
    Output {
        status,
        stdout: stdout.map(join_reader).unwrap_or_default(),
        stderr: stderr.map(join_reader).unwrap_or_default(),
    }
}

fn spawn_reader<R: Read + Send + 'static>(mut pipe: R) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        buf
    })
}

fn join_reader(handle: thread::JoinHandle<Vec<u8>>) -> Vec<u8> {
    handle.join().unwrap_or_default()
}

fn wait_with_deadline(child: &mut Child, desc: &str) -> ExitStatus {
    let deadline = Instant::now() + COMMAND_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status,
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{desc} did not finish within {COMMAND_TIMEOUT:?}; killed it");
            }
            Err(e) => panic!("waiting for {desc}: {e}"),
        }
    }
}

/// Renders an [`Output`] for failure messages.
pub fn describe_output(out: &Output) -> String {
    format!(
        "exit status: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Asserts that `out` is a success and returns its stdout.
///
/// # Panics
/// If the exit status is non-zero.
pub fn expect_success(out: &Output, what: &str) -> String {
    if !out.status.success() {
        panic!("{what} failed:\n{}", describe_output(out));
    }
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Asserts that `out` is a failure and returns its stderr.
///
/// # Panics
/// If the exit status is zero.
pub fn expect_failure(out: &Output, what: &str) -> String {
    if out.status.success() {
        panic!("{what} unexpectedly succeeded:\n{}", describe_output(out));
    }
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs a program to completion and panics (showing its output) unless it succeeds.
fn run_checked(program: &str, args: &[&str]) -> String {
    let mut cmd = Command::new(program);
    cmd.args(args);
    let out = run_command(cmd, b"");
    expect_success(&out, &format!("`{program} {}`", args.join(" ")))
}

/// Polls `cond` every 20 ms until it holds or `timeout` passes; returns whether it held.
/// For kernel work that completes asynchronously (e.g. veth teardown after `ip netns del`).
pub fn wait_for(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(20));
    }
}

// ---------------------------------------------------------------------------------------------
// Temporary directories

/// A directory under the system temp dir, removed recursively on drop.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// Creates `$TMPDIR/cnit-<tag>-<pid>-<n>`.
    ///
    /// # Panics
    /// If the directory cannot be created.
    pub fn new(tag: &str) -> TempDir {
        let path = std::env::temp_dir().join(unique_name(tag));
        std::fs::create_dir_all(&path)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
        TempDir { path }
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `self.path().join(rel)`.
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.path.join(rel)
    }

    /// Writes `value` as pretty JSON to `<dir>/<file>` and returns the path.
    ///
    /// # Panics
    /// If the file cannot be written.
    pub fn write_json(&self, file: &str, value: &Value) -> PathBuf {
        let path = self.join(file);
        let text = serde_json::to_string_pretty(value).expect("a JSON value always serializes");
        std::fs::write(&path, text)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.path) {
            if e.kind() != std::io::ErrorKind::NotFound {
                eprintln!("netns-tests: cannot remove {}: {e}", self.path.display());
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Network namespaces

/// A named network namespace (`ip netns add`), deleted on drop.
#[derive(Debug)]
pub struct Netns {
    name: String,
    path: PathBuf,
    deleted: bool,
}

impl Netns {
    /// Creates a namespace named `cnit-<tag>-<pid>-<n>` and brings its loopback up.
    ///
    /// # Panics
    /// If not root or if `ip netns add` fails.
    pub fn new(tag: &str) -> Netns {
        require_root();
        let name = unique_name(tag);
        run_checked("ip", &["netns", "add", &name]);
        let ns = Netns {
            path: Path::new("/run/netns").join(&name),
            name,
            deleted: false,
        };
        run_checked("ip", &["-n", &ns.name, "link", "set", "lo", "up"]);
        ns
    }

    /// The namespace name (as known to `ip netns`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The bind-mount path, `/run/netns/<name>`: what a runtime passes as CNI_NETNS.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path as a `&str` (namespace names are ASCII).
    pub fn path_str(&self) -> &str {
        self.path.to_str().expect("netns paths are ASCII")
    }

    /// A [`Command`] that runs `program` inside this namespace (`ip netns exec <name> program`).
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.name]).arg(program);
        cmd
    }

    /// Runs `program args...` inside the namespace and returns its output (any exit status).
    pub fn exec(&self, program: &str, args: &[&str]) -> Output {
        let mut cmd = self.command(program);
        cmd.args(args);
        run_command(cmd, b"")
    }

    /// Runs `program args...` inside the namespace; panics unless it succeeds; returns stdout.
    pub fn exec_ok(&self, program: &str, args: &[&str]) -> String {
        let out = self.exec(program, args);
        expect_success(
            &out,
            &format!("`{program} {}` in netns {}", args.join(" "), self.name),
        )
    }

    /// Every link in the namespace (`ip -j -d link show`).
    pub fn links(&self) -> Vec<Link> {
        let json = run_checked("ip", &["-n", &self.name, "-j", "-d", "link", "show"]);
        parse_links(&json)
    }

    /// The link named `ifname`, if it exists.
    pub fn link(&self, ifname: &str) -> Option<Link> {
        self.links().into_iter().find(|l| l.ifname == ifname)
    }

    /// The addresses of `ifname` in CIDR form (`ip -j addr show dev`), without link-local ones.
    pub fn addresses(&self, ifname: &str) -> Vec<String> {
        let json = run_checked(
            "ip",
            &["-n", &self.name, "-j", "addr", "show", "dev", ifname],
        );
        let parsed: Vec<AddrInfoLink> = serde_json::from_str(&json)
            .unwrap_or_else(|e| panic!("cannot parse `ip -j addr` output: {e}\n{json}"));
        parsed
            .into_iter()
            .flat_map(|l| l.addr_info)
            .filter(|a| a.scope.as_deref() != Some("link"))
            .map(|a| format!("{}/{}", a.local, a.prefixlen))
            .collect()
    }

    /// Pings `addr` once from inside this namespace. Only call it with an address that lives in a
    /// namespace the test created.
    pub fn ping(&self, addr: IpAddr) -> Output {
        self.exec("ping", &["-c", "1", "-W", "5", &addr.to_string()])
    }

    /// Deletes the namespace now and reports failure instead of only logging it.
    ///
    /// # Errors
    /// The output of `ip netns del` when it fails.
    pub fn delete(mut self) -> Result<(), String> {
        self.deleted = true;
        delete_netns(&self.name)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if !self.deleted {
            if let Err(e) = delete_netns(&self.name) {
                eprintln!("netns-tests: {e}");
            }
        }
    }
}

fn delete_netns(name: &str) -> Result<(), String> {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "del", name]);
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run `ip netns del {name}`: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip netns del {name}` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Whether `/run/netns/<name>` exists.
pub fn netns_exists(name: &str) -> bool {
    Path::new("/run/netns").join(name).exists()
}

/// Named namespaces whose name starts with `prefix` (e.g. a test's `cnit-<tag>-<pid>` prefix).
pub fn leftover_netns(prefix: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/run/netns") else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with(prefix))
        .collect();
    names.sort();
    names
}

/// A throwaway namespace standing in for the host's: plugins that create bridges and veths in
/// "the host" are run inside it, so the real host network is never changed. It records the links
/// present at creation so a test can check that nothing was left behind.
#[derive(Debug)]
pub struct HostSandbox {
    ns: Netns,
    baseline: BTreeSet<String>,
}

impl HostSandbox {
    /// Creates the sandbox namespace (`cnit-<tag>-host-...`).
    pub fn new(tag: &str) -> HostSandbox {
        let ns = Netns::new(&format!("{tag}-host"));
        let baseline = ns.links().into_iter().map(|l| l.ifname).collect();
        HostSandbox { ns, baseline }
    }

    /// The sandbox namespace.
    pub fn netns(&self) -> &Netns {
        &self.ns
    }

    /// A [`Command`] running `program` inside the sandbox.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        self.ns.command(program)
    }

    /// Every link in the sandbox.
    pub fn links(&self) -> Vec<Link> {
        self.ns.links()
    }

    /// The link named `ifname` in the sandbox, if any.
    pub fn link(&self, ifname: &str) -> Option<Link> {
        self.ns.link(ifname)
    }

    /// Links created since the sandbox was made.
    pub fn new_links(&self) -> Vec<Link> {
        self.links()
            .into_iter()
            .filter(|l| !self.baseline.contains(&l.ifname))
            .collect()
    }

    /// veth links created since the sandbox was made.
    pub fn new_veths(&self) -> Vec<Link> {
        self.new_links()
            .into_iter()
            .filter(|l| l.kind() == Some("veth"))
            .collect()
    }

    /// Links enslaved to `master` in the sandbox.
    pub fn ports_of(&self, master: &str) -> Vec<Link> {
        self.links()
            .into_iter()
            .filter(|l| l.master.as_deref() == Some(master))
            .collect()
    }

    /// Panics if any veth appeared in the sandbox since its creation.
    pub fn assert_no_new_veths(&self, context: &str) {
        let veths = self.new_veths();
        assert!(
            veths.is_empty(),
            "{context}: veths left behind in the host sandbox {}: {:?}",
            self.ns.name(),
            veths.iter().map(|l| &l.ifname).collect::<Vec<_>>()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Link state (`ip -j -d link show`)

/// One link as reported by `ip -j -d link show`. Unlisted keys are kept in `other`.
#[derive(Debug, Clone, Deserialize)]
pub struct Link {
    pub ifindex: u32,
    pub ifname: String,
    #[serde(default)]
    pub flags: Vec<String>,
    #[serde(default)]
    pub mtu: Option<u32>,
    #[serde(default)]
    pub operstate: Option<String>,
    /// The master device (bridge) name, if enslaved.
    #[serde(default)]
    pub master: Option<String>,
    /// The MAC address.
    #[serde(default)]
    pub address: Option<String>,
    #[serde(default)]
    pub promiscuity: Option<u32>,
    #[serde(default)]
    pub link_netnsid: Option<i64>,
    #[serde(default)]
    pub linkinfo: Option<LinkInfo>,
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

/// The `linkinfo` object of `ip -d`.
#[derive(Debug, Clone, Deserialize)]
pub struct LinkInfo {
    #[serde(default)]
    pub info_kind: Option<String>,
    #[serde(default)]
    pub info_data: Option<Value>,
    #[serde(default)]
    pub info_slave_kind: Option<String>,
    #[serde(default)]
    pub info_slave_data: Option<Value>,
}

impl Link {
    /// The link kind (`veth`, `bridge`, `macvtap`, ...), if any.
    pub fn kind(&self) -> Option<&str> {
        self.linkinfo.as_ref()?.info_kind.as_deref()
    }

    /// Whether the administrative UP flag is set.
    pub fn is_up(&self) -> bool {
        self.flags.iter().any(|f| f == "UP")
    }

    /// The MAC address, lower-case.
    pub fn mac(&self) -> Option<String> {
        self.address.as_ref().map(|a| a.to_ascii_lowercase())
    }
}

/// Parses the output of `ip -j [-d] link show`.
///
/// # Panics
/// If the text is not the expected JSON.
pub fn parse_links(json: &str) -> Vec<Link> {
    serde_json::from_str(json)
        .unwrap_or_else(|e| panic!("cannot parse `ip -j -d link show` output: {e}\n{json}"))
}

#[derive(Debug, Deserialize)]
struct AddrInfoLink {
    #[serde(default)]
    addr_info: Vec<AddrInfo>,
}

#[derive(Debug, Deserialize)]
struct AddrInfo {
    local: String,
    prefixlen: u8,
    #[serde(default)]
    scope: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// Plugin directories and direct plugin execution

/// A private plugin directory of symlinks, so one test can pick exactly which implementation
/// serves each plugin type (e.g. Go `bridge` + `host-local`, OUR `tuning`) whatever else lives
/// in the source directories. libcni follows symlinks when it searches CNI_PATH.
#[derive(Debug)]
pub struct PluginDir {
    dir: TempDir,
}

impl PluginDir {
    /// An empty plugin directory.
    pub fn new(tag: &str) -> PluginDir {
        PluginDir {
            dir: TempDir::new(&format!("{tag}-bin")),
        }
    }

    /// Adds Debian's Go reference plugins `names`.
    ///
    /// # Panics
    /// If one is not installed.
    pub fn with_go(self, names: &[&str]) -> PluginDir {
        for name in names {
            self.link(name, &go_plugin(name));
        }
        self
    }

    /// Adds OUR plugins `names` (from [`our_plugin_dir`]).
    ///
    /// # Panics
    /// If one has not been built.
    pub fn with_ours(self, names: &[&str]) -> PluginDir {
        for name in names {
            self.link(name, &our_plugin(name));
        }
        self
    }

    /// Adds `target` under the name `name`.
    ///
    /// # Panics
    /// If the symlink cannot be created.
    pub fn with(self, name: &str, target: &Path) -> PluginDir {
        self.link(name, target);
        self
    }

    fn link(&self, name: &str, target: &Path) {
        let path = self.dir.join(name);
        std::os::unix::fs::symlink(target, &path).unwrap_or_else(|e| {
            panic!(
                "cannot link {} -> {}: {e}",
                path.display(),
                target.display()
            )
        });
    }

    /// The directory (use it as CNI_PATH).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Builds the command that execs `<dir>/<name>` the way a runtime does: an empty environment
/// except `PATH` and `env` (the CNI_* variables), optionally inside `sandbox`.
fn plugin_command(
    sandbox: Option<&Netns>,
    dir: &Path,
    name: &str,
    env: &[(&str, &str)],
) -> Command {
    let binary = dir.join(name);
    if !is_executable_file(&binary) {
        if dir == go_plugin_dir() {
            go_plugin(name);
        } else if dir == our_plugin_dir() {
            our_plugin(name);
        }
        panic!("plugin binary {} does not exist", binary.display());
    }
    let mut cmd = match sandbox {
        Some(ns) => ns.command(&binary),
        None => Command::new(&binary),
    };
    cmd.env_clear().env("PATH", PLUGIN_ENV_PATH);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Calls the plugin `<dir>/<name>` exactly as a runtime does: `env` holds the CNI_* variables
/// (CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME, CNI_ARGS, CNI_PATH), `stdin` the
/// request config. Runs in the caller's namespace: only use it for verbs or plugins that do not
/// change the host side (VERSION, plugins that only touch the container netns); otherwise use
/// [`run_plugin_in`].
///
/// # Panics
/// If the binary is missing (with build instructions) or cannot be run.
pub fn run_plugin(dir: &Path, name: &str, env: &[(&str, &str)], stdin: &str) -> Output {
    run_command(plugin_command(None, dir, name, env), stdin.as_bytes())
}

/// Like [`run_plugin`], but the plugin runs inside `sandbox` (its "host" namespace).
///
/// # Panics
/// If the binary is missing (with build instructions) or cannot be run.
pub fn run_plugin_in(
    sandbox: &HostSandbox,
    dir: &Path,
    name: &str,
    env: &[(&str, &str)],
    stdin: &str,
) -> Output {
    run_command(
        plugin_command(Some(sandbox.netns()), dir, name, env),
        stdin.as_bytes(),
    )
}

// ---------------------------------------------------------------------------------------------
// The libcni driver

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
        .arg("./netns-tests/libcni-driver")
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
             go build ./netns-tests/libcni-driver):\n{}",
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
        cmd.env_clear().env("PATH", PLUGIN_ENV_PATH);
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

// ---------------------------------------------------------------------------------------------
// host-local IPAM state

/// Leases held by host-local in `<data_dir>/<network>`: each file named after an IP address,
/// with its content (container ID and ifname).
pub fn host_local_leases(data_dir: &Path, network: &str) -> Vec<(IpAddr, String)> {
    let dir = data_dir.join(network);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut leases: Vec<(IpAddr, String)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let ip: IpAddr = e.file_name().to_str()?.parse().ok()?;
            let content = std::fs::read_to_string(e.path()).unwrap_or_default();
            Some((ip, content))
        })
        .collect();
    leases.sort();
    leases
}

/// Files left in `dir` (recursively), as paths relative to it. Empty if `dir` does not exist.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(rel) = path.strip_prefix(dir) {
                found.push(rel.to_path_buf());
            }
        }
    }
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_names_are_valid_and_distinct() {
        let a = unique_name("Some test/Name");
        let b = unique_name("Some test/Name");
        assert_ne!(a, b);
        assert!(a.starts_with("cnit-some-test-name-"), "{a}");
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
    }

    #[test]
    fn parses_ip_link_json() {
        let json = r#"[{"ifindex":3,"link":"cnitestbr0","ifname":"veth1","flags":["BROADCAST","UP"],
            "mtu":1500,"master":"br0","operstate":"UP","address":"AA:bb:cc:dd:ee:ff",
            "link_netnsid":0,"promiscuity":1,"linkinfo":{"info_kind":"veth",
            "info_slave_kind":"bridge","info_slave_data":{"state":"forwarding"}}},
            {"ifindex":1,"ifname":"lo","flags":["LOOPBACK"],"mtu":65536,"address":"00:00:00:00:00:00"}]"#;
        let links = parse_links(json);
        assert_eq!(links.len(), 2);
        assert_eq!(links[0].kind(), Some("veth"));
        assert_eq!(links[0].master.as_deref(), Some("br0"));
        assert_eq!(links[0].mac().as_deref(), Some("aa:bb:cc:dd:ee:ff"));
        assert!(links[0].is_up());
        assert_eq!(links[0].other.get("link"), Some(&Value::from("cnitestbr0")));
        assert_eq!(links[1].kind(), None);
        assert!(!links[1].is_up());
    }

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
