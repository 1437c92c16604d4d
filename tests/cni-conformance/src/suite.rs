//! The suite's state and its plumbing: the options it runs with, a sandbox per check, and one
//! plugin invocation recorded against the stdout rule. The checks themselves are in `checks`.

use crate::error::Error;
use crate::host_local::reservations;
use crate::invoke::{to_bytes, Env, Exit, Hook, Runner};
use crate::netns::Netns;
use crate::reply::Reply;
use crate::report::{self, Outcome, Report};
use crate::sandbox::Sandbox;
use crate::validate::chaining::PREV_ADDRESS;
use crate::validate::stdout::{classify_stdout, stdout_violation};
use crate::validate::versions::version_at_least;
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::time::Duration;

/// Name of the peer of the veth pair the suite creates in the container.
const PEER_NAME: &str = "cnic-peer0";

/// What the suite needs before it starts: root, the plugin binary, and iproute2.
pub fn preflight(opts: &Options) -> Result<(), Error> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("must run as root (it creates network namespaces)".into());
    }
    let bin = opts.plugin_dir.join(&opts.plugin);
    if !bin.is_file() {
        return Err(format!("plugin binary {} not found", bin.display()).into());
    }
    let ip = std::process::Command::new("ip").arg("-V").output();
    if !ip.is_ok_and(|o| o.status.success()) {
        return Err("iproute2 `ip` is required".into());
    }
    Ok(())
}

/// What the suite runs and how, from the command line.
#[derive(Debug)]
pub struct Options {
    pub plugin_dir: PathBuf,
    pub plugin: String,
    pub config: Map<String, Value>,
    pub chained: bool,
    pub ifname: String,
    pub ipam_dirs: Vec<PathBuf>,
    pub filter: Option<String>,
    pub timeout: Duration,
    /// `--host-setup`: run in each check's host namespace once it and the temp dir exist.
    pub host_setup: Option<String>,
    /// `--host-teardown`: run there when the check ends, before the namespaces go.
    pub host_teardown: Option<String>,
    /// `--env`: in every plugin call's environment.
    pub env: Vec<(String, String)>,
}

/// One run of the suite against one plugin: the report so far, and every invocation's stdout
/// judged against the stdout rule.
pub struct Suite {
    pub(crate) opts: Options,
    pub(crate) runner: Runner,
    pub(crate) host_setup: Option<Hook>,
    pub(crate) host_teardown: Option<Hook>,
    pub(crate) report: Report,
    pub(crate) cni_path: String,
    seq: u32,
    pub(crate) invocations: usize,
    pub(crate) violations: Vec<String>,
    /// Known versions listed by VERSION, oldest first.
    pub(crate) supported: Vec<String>,
}

impl Suite {
    pub fn new(opts: Options) -> Self {
        let mut dirs: Vec<String> = Vec::new();
        for d in std::iter::once(&opts.plugin_dir).chain(opts.ipam_dirs.iter()) {
            let s = d.display().to_string();
            if !dirs.contains(&s) {
                dirs.push(s);
            }
        }
        let path_env = std::env::var("PATH")
            .ok()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| {
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into()
            });
        let hook = |option: &'static str, command: &Option<String>| {
            command.as_ref().map(|c| Hook {
                option,
                command: c.clone(),
                path_env: path_env.clone(),
                timeout: opts.timeout,
            })
        };
        let host_setup = hook("--host-setup", &opts.host_setup);
        let host_teardown = hook("--host-teardown", &opts.host_teardown);
        let runner = Runner {
            plugin: opts.plugin_dir.join(&opts.plugin),
            path_env,
            runtime_env: opts.env.clone(),
            timeout: opts.timeout,
        };
        let report = Report::new(opts.filter.clone());
        Suite {
            opts,
            runner,
            host_setup,
            host_teardown,
            report,
            cni_path: dirs.join(":"),
            seq: 0,
            invocations: 0,
            violations: Vec::new(),
            supported: Vec::new(),
        }
    }

    /// The `#` lines that open the report: what runs, and how.
    pub(crate) fn describe_run(&self) {
        report::comment(&format!(
            "cni-conformance: plugin {}, CNI_PATH={}, CNI_IFNAME={}{}",
            self.runner.plugin.display(),
            self.cni_path,
            self.opts.ifname,
            if self.opts.chained { ", chained" } else { "" }
        ));
        for hook in [&self.host_setup, &self.host_teardown]
            .into_iter()
            .flatten()
        {
            report::comment(&format!("{} {:?}", hook.option, hook.command));
        }
        for (name, value) in &self.runner.runtime_env {
            report::comment(&format!("--env {name}={value}"));
        }
    }

    /// The `#` line after VERSION: the versions the checks will use, and the config's kind.
    pub(crate) fn describe_versions(&self) {
        report::comment(&format!(
            "supportedVersions (known): {:?}; single-version checks use {}{}{}",
            self.supported,
            self.vmax(),
            if self.l2_only() {
                "; config has no IPAM (L2-only)"
            } else {
                ""
            },
            if self.host_local() {
                "; host-local dataDir redirected to a temp dir"
            } else {
                ""
            }
        ));
    }

    /// The delegated IPAM plugin, if the config names one.
    pub(crate) fn ipam_type(&self) -> Option<&str> {
        self.opts
            .config
            .get("ipam")
            .and_then(|i| i.get("type"))
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
    }

    /// host-local IPAM: the suite redirects its dataDir and checks its reservations.
    pub(crate) fn host_local(&self) -> bool {
        self.ipam_type() == Some("host-local")
    }

    /// A standalone (not chained) plugin configured without IPAM: its result has no IP.
    pub(crate) fn l2_only(&self) -> bool {
        !self.opts.chained && self.ipam_type().is_none()
    }

    /// The highest supported version: what single-version checks use.
    pub(crate) fn vmax(&self) -> String {
        self.supported
            .last()
            .cloned()
            .unwrap_or_else(|| "0.1.0".into())
    }

    /// Highest supported version that has CHECK.
    pub(crate) fn check_version(&self) -> Option<String> {
        self.supported
            .iter()
            .rev()
            .find(|v| version_at_least(v, "0.4.0"))
            .cloned()
    }

    /// The namespaces and temp dir of one check, then `--host-setup` in the host namespace.
    /// `--host-teardown` runs when the sandbox is dropped, after a failed setup too (it may
    /// have started something before failing).
    pub(crate) fn sandbox(&mut self) -> Result<Sandbox, String> {
        self.seq += 1;
        let setup_failed =
            |e: Error| format!("suite could not set up its namespaces: {}", e.chain());
        let mut sb = Sandbox::create(self.seq, self.host_teardown.clone()).map_err(setup_failed)?;
        if let Some(hook) = &self.host_setup {
            let out = hook.run(sb.host.name(), sb.dir.path());
            if !out.success() {
                return Err(format!("--host-setup failed: {}", out.describe()));
            }
        }
        if self.opts.chained {
            sb.prepared_mac = Some(self.prepare_interface(&sb, true).map_err(setup_failed)?);
        }
        Ok(sb)
    }

    /// Sandbox for a group of checks; on failure every check of the group FAILs.
    pub(crate) fn sandbox_for(&mut self, names: &[String]) -> Option<Sandbox> {
        match self.sandbox() {
            Ok(sb) => Some(sb),
            Err(e) => {
                for n in names {
                    self.report.record(n, Outcome::Fail(e.clone()));
                }
                None
            }
        }
    }

    /// Create CNI_IFNAME in the container as a veth whose both ends stay
    /// there (there is no dummy driver); returns its MAC.
    pub(crate) fn prepare_interface(
        &self,
        sb: &Sandbox,
        with_address: bool,
    ) -> Result<String, Error> {
        let ifname = self.opts.ifname.as_str();
        sb.ctr.ip(&[
            "link", "add", ifname, "type", "veth", "peer", "name", PEER_NAME,
        ])?;
        if with_address {
            sb.ctr.ip(&["addr", "add", PREV_ADDRESS, "dev", ifname])?;
        }
        sb.ctr.ip(&["link", "set", PEER_NAME, "up"])?;
        sb.ctr.ip(&["link", "set", ifname, "up"])?;
        sb.ctr
            .link(ifname)?
            .map(|l| l.mac)
            .ok_or_else(|| format!("{ifname} is missing right after creating it").into())
    }

    /// Invoke the plugin and apply the stdout rule to what it printed.
    pub(crate) fn call(&mut self, label: &str, host: &Netns, env: &Env, stdin: &[u8]) -> Reply {
        let out = self.runner.run(host.name(), env, stdin);
        let verb = env
            .iter()
            .find(|(k, _)| *k == "CNI_COMMAND")
            .map(|(_, v)| v.clone())
            .filter(|v| !v.is_empty());
        let stdout = classify_stdout(&out.stdout);
        self.invocations += 1;
        let problem = match &out.exit {
            Exit::Code(c) => stdout_violation(verb.as_deref(), *c == 0, &stdout),
            other => Some(other.to_string()),
        };
        if let Some(p) = problem {
            self.violations.push(format!(
                "[{label}] {}: {p}",
                verb.as_deref().unwrap_or("no CNI_COMMAND")
            ));
        }
        Reply {
            exit: out.exit,
            stdout,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// ADD in `version`; also returns the configuration sent, for the chained checks.
    pub(crate) fn add(
        &mut self,
        label: &str,
        sb: &Sandbox,
        version: &str,
        env: Option<Env>,
    ) -> (Reply, Map<String, Value>) {
        let cfg = self.add_config(sb, Some(version), version);
        let env = env.unwrap_or_else(|| self.env(sb, "ADD"));
        let reply = self.call(label, &sb.host, &env, &to_bytes(&cfg));
        (reply, cfg)
    }

    /// ADD that must succeed with a valid, truthful result (precondition of other checks).
    pub(crate) fn add_ok(
        &mut self,
        label: &str,
        sb: &Sandbox,
        version: &str,
    ) -> Result<Value, String> {
        let (reply, _) = self.add(label, sb, version, None);
        let result = reply
            .expect_object()
            .map_err(|e| format!("precondition ADD ({version}) failed: {e}"))?;
        Ok(result)
    }

    /// DEL in `version`, with `add_result` as prevResult where the version has one.
    pub(crate) fn del(
        &mut self,
        label: &str,
        sb: &Sandbox,
        version: &str,
        add_result: Option<&Value>,
        env: Option<Env>,
    ) -> Reply {
        let cfg = self.followup_config(sb, version, add_result);
        let env = env.unwrap_or_else(|| self.env(sb, "DEL"));
        self.call(label, &sb.host, &env, &to_bytes(&cfg))
    }

    /// How many addresses host-local holds for the check's container.
    pub(crate) fn reservation_count(&self, sb: &Sandbox) -> usize {
        reservations(&sb.ipam_dir(), &sb.cid).len()
    }
}
