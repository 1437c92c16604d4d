//! Network namespaces owned by the test: [`Netns`] and the [`HostSandbox`] that stands in for the
//! host's.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::link::{parse_addresses, parse_links, Link};
use crate::names::unique_name;
use crate::process::{expect_success, run_checked, run_command};
use crate::root::require_root;

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
        parse_addresses(&json)
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
