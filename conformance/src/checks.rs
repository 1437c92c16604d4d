//! The checks. Each one builds its own sandbox (a throwaway "host" netns in
//! which the plugin runs, a container netns and a temp dir for IPAM state),
//! calls the plugin like a runtime would, and judges what it sees.

use crate::invoke::{Exit, Hook, Runner};
use crate::report::{Outcome, Report};
use crate::sandbox::{reservations, Netns, TempDir, PREFIX};
use crate::validate::{
    check_passthrough, classify_stdout, excerpt, family, parse_error, parse_version_reply,
    stdout_violation, summarize, synth_prev_result, validate_result, version_at_least, CniError,
    Family, Stdout, KNOWN_VERSIONS, PREV_ADDRESS,
};
use serde_json::{json, Map, Value};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// Network name used when the configuration has none (Multus would inject the NAD name).
pub const DEFAULT_NET_NAME: &str = "cnic-net";
/// Name of the peer of the veth pair the suite creates in the container.
const PEER_NAME: &str = "cnic-peer0";

pub struct Options {
    pub plugin_dir: PathBuf,
    pub plugin: String,
    pub config: Map<String, Value>,
    pub chained: bool,
    pub ifname: String,
    pub ipam_dirs: Vec<PathBuf>,
    pub filter: Option<String>,
    pub timeout: Duration,
    pub verbose: bool,
    /// `--host-setup`: run in each check's host namespace once it and the temp dir exist.
    pub host_setup: Option<String>,
    /// `--host-teardown`: run there when the check ends, before the namespaces go.
    pub host_teardown: Option<String>,
}

/// What `${CNIC_TMP}` in the config stands for.
pub const TMP_PLACEHOLDER: &str = "${CNIC_TMP}";

/// Replaces `${CNIC_TMP}` in every string of `value` (object keys too) by `tmp`.
pub fn expand_tmp(value: Value, tmp: &str) -> Value {
    match value {
        Value::String(s) if s.contains(TMP_PLACEHOLDER) => {
            Value::String(s.replace(TMP_PLACEHOLDER, tmp))
        }
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| expand_tmp(v, tmp)).collect())
        }
        Value::Object(map) => Value::Object(expand_tmp_map(map, tmp)),
        other => other,
    }
}

fn expand_tmp_map(map: Map<String, Value>, tmp: &str) -> Map<String, Value> {
    map.into_iter()
        .map(|(k, v)| (k.replace(TMP_PLACEHOLDER, tmp), expand_tmp(v, tmp)))
        .collect()
}

type Env = Vec<(&'static str, String)>;

fn set_var(env: &mut Env, key: &'static str, value: Option<&str>) {
    env.retain(|(k, _)| *k != key);
    if let Some(v) = value {
        env.push((key, v.to_string()));
    }
}

fn to_bytes(cfg: &Map<String, Value>) -> Vec<u8> {
    serde_json::to_vec(cfg).unwrap_or_default()
}

fn with_prev(mut cfg: Map<String, Value>, prev: Option<&Value>) -> Map<String, Value> {
    match prev {
        Some(p) => {
            cfg.insert("prevResult".into(), p.clone());
        }
        None => {
            cfg.remove("prevResult");
        }
    }
    cfg
}

/// Everything one check owns; dropping it runs `--host-teardown`, then deletes the namespaces
/// and the temp dir (and with them every interface and file the plugin made).
pub struct Sandbox {
    pub host: Netns,
    pub ctr: Netns,
    pub dir: TempDir,
    pub cid: String,
    pub ctr_path: String,
    /// MAC of the interface the suite created for a chained plugin.
    pub prepared_mac: Option<String>,
    teardown: Option<Hook>,
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if let Some(hook) = self.teardown.take() {
            let out = hook.run(self.host.name(), self.dir.path());
            if !out.success() {
                // Not println!: a closed stdout must not turn cleanup into a panic.
                let _ = writeln!(
                    std::io::stdout().lock(),
                    "# --host-teardown failed in {}: {}",
                    self.host.name(),
                    out.describe()
                );
            }
        }
    }
}

impl Sandbox {
    fn ipam_dir(&self) -> PathBuf {
        self.dir.path().join("ipam")
    }
}

/// What came back from one plugin invocation.
pub struct Reply {
    pub exit: Exit,
    pub stdout: Stdout,
    pub stderr: String,
}

impl Reply {
    fn success(&self) -> bool {
        self.exit == Exit::Code(0)
    }

    fn describe(&self) -> String {
        let mut s = self.exit.to_string();
        match &self.stdout {
            Stdout::Empty => s.push_str(", empty stdout"),
            Stdout::Json(v) => match parse_error(v) {
                Ok(e) if !self.success() => s.push_str(&format!(", error {e}")),
                _ => s.push_str(&format!(", stdout {}", excerpt(&v.to_string()))),
            },
            Stdout::Invalid(why) => s.push_str(&format!(", {why}")),
        }
        if !self.success()
            && !matches!(self.stdout, Stdout::Json(_))
            && !self.stderr.trim().is_empty()
        {
            s.push_str(&format!(", stderr: {}", excerpt(&self.stderr)));
        }
        s
    }

    fn expect_empty_success(&self) -> Result<(), String> {
        if self.success() && self.stdout == Stdout::Empty {
            Ok(())
        } else {
            Err(format!(
                "expected exit 0 with empty stdout, got {}",
                self.describe()
            ))
        }
    }

    fn expect_object(&self) -> Result<Value, String> {
        match (&self.exit, &self.stdout) {
            (Exit::Code(0), Stdout::Json(v @ Value::Object(_))) => Ok(v.clone()),
            _ => Err(format!(
                "expected exit 0 with a JSON object, got {}",
                self.describe()
            )),
        }
    }

    fn expect_error(&self, code: Option<u64>) -> Result<CniError, String> {
        let want = code.map_or_else(|| "an error".to_string(), |c| format!("error code {c}"));
        if matches!(self.exit, Exit::Code(c) if c != 0) {
            let Stdout::Json(v) = &self.stdout else {
                return Err(format!(
                    "expected {want} as JSON on stdout, got {}",
                    self.describe()
                ));
            };
            let err = parse_error(v)?;
            match code {
                Some(c) if err.code != c => Err(format!("expected error code {c}, got {err}")),
                _ => Ok(err),
            }
        } else {
            Err(format!(
                "expected {want} with a non-zero exit, got {}",
                self.describe()
            ))
        }
    }
}

/// What a rejected request is allowed to answer.
#[derive(Clone, Copy)]
enum Judge {
    Code(u64),
    AnyError,
    /// Any error, or exit 0 with nothing on stdout (missing CNI_COMMAND).
    AnyErrorOrSilent,
}

fn diff(before: &[String], after: &[String]) -> String {
    let added: Vec<&String> = after.iter().filter(|n| !before.contains(n)).collect();
    let removed: Vec<&String> = before.iter().filter(|n| !after.contains(n)).collect();
    format!("added {added:?}, removed {removed:?}")
}

pub struct Suite {
    opts: Options,
    runner: Runner,
    host_setup: Option<Hook>,
    host_teardown: Option<Hook>,
    report: Report,
    cni_path: String,
    seq: u32,
    invocations: usize,
    violations: Vec<String>,
    /// Known versions listed by VERSION, oldest first.
    supported: Vec<String>,
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
                verbose: opts.verbose,
            })
        };
        let host_setup = hook("--host-setup", &opts.host_setup);
        let host_teardown = hook("--host-teardown", &opts.host_teardown);
        let runner = Runner {
            plugin: opts.plugin_dir.join(&opts.plugin),
            path_env,
            timeout: opts.timeout,
            verbose: opts.verbose,
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

    fn ipam_type(&self) -> Option<&str> {
        self.opts
            .config
            .get("ipam")
            .and_then(|i| i.get("type"))
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
    }

    fn host_local(&self) -> bool {
        self.ipam_type() == Some("host-local")
    }

    /// A standalone (not chained) plugin configured without IPAM: its result has no IP.
    fn l2_only(&self) -> bool {
        !self.opts.chained && self.ipam_type().is_none()
    }

    fn vmax(&self) -> String {
        self.supported
            .last()
            .cloned()
            .unwrap_or_else(|| "0.1.0".into())
    }

    /// Highest supported version that has CHECK.
    fn check_version(&self) -> Option<String> {
        self.supported
            .iter()
            .rev()
            .find(|v| version_at_least(v, "0.4.0"))
            .cloned()
    }

    /// Run every selected check; returns the totals line and whether all passed.
    pub fn run(mut self) -> (String, bool) {
        println!(
            "# cni-conformance: plugin {}, CNI_PATH={}, CNI_IFNAME={}{}",
            self.runner.plugin.display(),
            self.cni_path,
            self.opts.ifname,
            if self.opts.chained { ", chained" } else { "" }
        );
        for hook in [&self.host_setup, &self.host_teardown]
            .into_iter()
            .flatten()
        {
            println!("# {} {:?}", hook.option, hook.command);
        }
        self.version_checks();
        println!(
            "# supportedVersions (known): {:?}; single-version checks use {}{}{}",
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
        );
        self.request_error_checks();
        self.missing_env_checks();
        self.name_checks();
        for v in self.supported.clone() {
            self.version_lifecycle(&v);
        }
        if self.check_version().is_none() && self.report.wants("check") {
            self.report.record(
                "check",
                Outcome::Skip("VERSION lists no version >= 0.4.0, so CHECK is not offered".into()),
            );
        }
        self.existing_ifname_check();
        self.del_robustness_checks();
        self.missing_interface_checks();
        self.variant_checks();
        self.no_cniversion_checks();
        self.status_gc_checks();
        self.stdout_check();
        let ok = self.report.failed == 0;
        (self.report.summary(), ok)
    }

    // ----- plumbing -----

    /// The namespaces and temp dir of one check, then `--host-setup` in the host namespace.
    /// `--host-teardown` runs when the sandbox is dropped, after a failed setup too (it may
    /// have started something before failing).
    fn sandbox(&mut self) -> Result<Sandbox, String> {
        self.seq += 1;
        let (pid, n) = (std::process::id(), self.seq);
        let setup_failed = |e: String| format!("suite could not set up its namespaces: {e}");
        let host = Netns::create(format!("{PREFIX}host-{pid}-{n}")).map_err(setup_failed)?;
        host.ip(&["link", "set", "lo", "up"])
            .map_err(setup_failed)?;
        let ctr = Netns::create(format!("{PREFIX}ctr-{pid}-{n}")).map_err(setup_failed)?;
        let dir = TempDir::create(&format!("{PREFIX}{pid}-{n}")).map_err(setup_failed)?;
        let ctr_path = ctr.path();
        let mut sb = Sandbox {
            host,
            ctr,
            dir,
            cid: format!("cnic-{pid}-{n}"),
            ctr_path,
            prepared_mac: None,
            teardown: self.host_teardown.clone(),
        };
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
    fn sandbox_for(&mut self, names: &[String]) -> Option<Sandbox> {
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
    fn prepare_interface(&self, sb: &Sandbox, with_address: bool) -> Result<String, String> {
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
            .ok_or_else(|| format!("{ifname} is missing right after creating it"))
    }

    /// The plugin configuration as a runtime would send it, `${CNIC_TMP}` expanded.
    fn config(&self, sb: &Sandbox, version: Option<&str>) -> Map<String, Value> {
        let tmp = sb.dir.path().display().to_string();
        let mut cfg = expand_tmp_map(self.opts.config.clone(), &tmp);
        cfg.insert("type".into(), json!(self.opts.plugin));
        if cfg
            .get("name")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            cfg.insert("name".into(), json!(DEFAULT_NET_NAME));
        }
        match version {
            Some(v) => {
                cfg.insert("cniVersion".into(), json!(v));
            }
            None => {
                cfg.remove("cniVersion");
            }
        }
        if self.host_local() {
            if let Some(ipam) = cfg.get_mut("ipam").and_then(Value::as_object_mut) {
                ipam.insert("dataDir".into(), json!(sb.ipam_dir().display().to_string()));
            }
        }
        cfg
    }

    /// The synthesized prevResult of a chained plugin in `version`'s format.
    fn prev_result(&self, sb: &Sandbox, version: &str) -> Option<Value> {
        let mac = sb.prepared_mac.as_deref()?;
        Some(synth_prev_result(
            version,
            &self.opts.ifname,
            mac,
            &sb.ctr_path,
        ))
    }

    /// ADD configuration: the config plus, when chained, the prevResult.
    fn add_config(
        &self,
        sb: &Sandbox,
        version: Option<&str>,
        prev_version: &str,
    ) -> Map<String, Value> {
        let cfg = self.config(sb, version);
        let prev = self.prev_result(sb, prev_version);
        with_prev(cfg, prev.as_ref())
    }

    /// DEL/CHECK configuration: libcni passes the ADD result as prevResult from 0.4.0 on.
    fn followup_config(
        &self,
        sb: &Sandbox,
        version: &str,
        add_result: Option<&Value>,
    ) -> Map<String, Value> {
        let prev = if version_at_least(version, "0.4.0") {
            add_result
        } else {
            None
        };
        with_prev(self.config(sb, Some(version)), prev)
    }

    /// The environment of ADD/CHECK/DEL, as libcni builds it.
    fn env(&self, sb: &Sandbox, verb: &str) -> Env {
        vec![
            ("CNI_COMMAND", verb.to_string()),
            ("CNI_CONTAINERID", sb.cid.clone()),
            ("CNI_NETNS", sb.ctr_path.clone()),
            ("CNI_ARGS", String::new()),
            ("CNI_IFNAME", self.opts.ifname.clone()),
            ("CNI_PATH", self.cni_path.clone()),
        ]
    }

    /// The environment of STATUS/GC, as libcni builds it.
    fn env_runtime_wide(&self, verb: &str) -> Env {
        vec![
            ("CNI_COMMAND", verb.to_string()),
            ("CNI_CONTAINERID", String::new()),
            ("CNI_NETNS", String::new()),
            ("CNI_ARGS", String::new()),
            ("CNI_IFNAME", String::new()),
            ("CNI_PATH", self.cni_path.clone()),
        ]
    }

    /// Invoke the plugin and apply the stdout rule to what it printed.
    fn call(&mut self, label: &str, host: &Netns, env: &Env, stdin: &[u8]) -> Reply {
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

    fn add(
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
    fn add_ok(&mut self, label: &str, sb: &Sandbox, version: &str) -> Result<Value, String> {
        let (reply, _) = self.add(label, sb, version, None);
        let result = reply
            .expect_object()
            .map_err(|e| format!("precondition ADD ({version}) failed: {e}"))?;
        Ok(result)
    }

    fn del(
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

    fn iface_gone(&self, sb: &Sandbox) -> Result<(), String> {
        if self.opts.chained {
            return Ok(());
        }
        match sb.ctr.link(&self.opts.ifname)? {
            Some(_) => Err(format!(
                "{} still exists in the container netns after DEL",
                self.opts.ifname
            )),
            None => Ok(()),
        }
    }

    fn reservation_count(&self, sb: &Sandbox) -> usize {
        reservations(&sb.ipam_dir(), &sb.cid).len()
    }

    fn reservation_gone(&self, sb: &Sandbox) -> Result<(), String> {
        let left = reservations(&sb.ipam_dir(), &sb.cid);
        if left.is_empty() {
            Ok(())
        } else {
            let names: Vec<String> = left
                .iter()
                .filter_map(|p| p.file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .collect();
            Err(format!(
                "host-local still holds {names:?} for the container"
            ))
        }
    }

    /// Compare a result with what really exists in the namespaces.
    fn verify_live(&self, sb: &Sandbox, version: &str, result: &Value) -> Result<(), String> {
        let s = summarize(result);
        let ifname = self.opts.ifname.as_str();
        let ctr_links = sb.ctr.links()?;
        let host_links = sb.host.links()?;
        let Some(live) = ctr_links.iter().find(|l| l.name == ifname) else {
            return Err(format!(
                "{ifname} does not exist in the container netns after ADD"
            ));
        };
        let mut problems = Vec::new();
        if family(version) == Some(Family::V02) {
            for ip in &s.ips {
                if !live.addrs.contains(&ip.address) {
                    problems.push(format!(
                        "address {} of the result is not assigned to {ifname}",
                        ip.text
                    ));
                }
            }
        } else {
            if !s
                .interfaces
                .iter()
                .any(|i| i.name == ifname && i.sandbox.as_deref() == Some(sb.ctr_path.as_str()))
            {
                problems.push(format!(
                    "result lists no interface {ifname} with sandbox {}",
                    sb.ctr_path
                ));
            }
            for iface in &s.interfaces {
                let (links, place) = match iface.sandbox.as_deref() {
                    None => (&host_links, "host netns"),
                    Some(p) if p == sb.ctr_path => (&ctr_links, "container netns"),
                    Some(p) => {
                        problems.push(format!(
                            "interface {} has sandbox {p}, which is not CNI_NETNS",
                            iface.name
                        ));
                        continue;
                    }
                };
                match links.iter().find(|l| l.name == iface.name) {
                    None => problems.push(format!(
                        "interface {} of the result does not exist in the {place}",
                        iface.name
                    )),
                    Some(l) => {
                        if let Some(mac) = &iface.mac {
                            if !mac.eq_ignore_ascii_case(&l.mac) {
                                problems.push(format!(
                                    "interface {} reports mac {mac}, its live mac is {}",
                                    iface.name, l.mac
                                ));
                            }
                        }
                    }
                }
            }
            for ip in &s.ips {
                let Some(iface) = ip.interface.and_then(|i| s.interfaces.get(i)) else {
                    continue;
                };
                if iface.sandbox.as_deref() != Some(sb.ctr_path.as_str()) {
                    continue;
                }
                if let Some(l) = ctr_links.iter().find(|l| l.name == iface.name) {
                    if !l.addrs.contains(&ip.address) {
                        problems.push(format!(
                            "address {} of the result is not assigned to {}",
                            ip.text, iface.name
                        ));
                    }
                }
            }
        }
        if !s.routes.is_empty() {
            let live_routes = sb.ctr.routes()?;
            for (text, dst, gw) in &s.routes {
                let found = live_routes
                    .iter()
                    .any(|r| r.dst == *dst && (gw.is_none() || r.gw == *gw));
                if !found {
                    let via = gw.map(|g| format!(" via {g}")).unwrap_or_default();
                    problems.push(format!(
                        "route {text}{via} of the result is not in the container's routing tables"
                    ));
                }
            }
        }
        if self.host_local() && !s.ips.is_empty() && self.reservation_count(sb) == 0 {
            problems.push("host-local recorded no reservation in the suite's dataDir".into());
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }

    /// Send a request the plugin must refuse; the namespaces must not change.
    fn rejected(
        &mut self,
        name: &str,
        sb: &Sandbox,
        variants: Vec<(String, Env, Vec<u8>)>,
        judge: Judge,
    ) -> Outcome {
        let snapshot = |sb: &Sandbox| -> Result<(Vec<String>, Vec<String>), String> {
            Ok((sb.host.link_names()?, sb.ctr.link_names()?))
        };
        let before = match snapshot(sb) {
            Ok(s) => s,
            Err(e) => return Outcome::Fail(format!("suite could not list links: {e}")),
        };
        let mut notes = Vec::new();
        for (what, env, stdin) in variants {
            let reply = self.call(name, &sb.host, &env, &stdin);
            let verdict = match judge {
                Judge::Code(c) => reply.expect_error(Some(c)).map(|_| None),
                Judge::AnyError => reply
                    .expect_error(None)
                    .map(|e| Some(format!("code {}", e.code))),
                Judge::AnyErrorOrSilent if reply.success() && reply.stdout == Stdout::Empty => Ok(
                    Some("exit 0 with nothing on stdout (no operation; accepted)".to_string()),
                ),
                Judge::AnyErrorOrSilent => reply
                    .expect_error(None)
                    .map(|e| Some(format!("code {}", e.code))),
            };
            match verdict {
                Err(e) => {
                    return Outcome::Fail(if what.is_empty() {
                        e
                    } else {
                        format!("{what}: {e}")
                    })
                }
                Ok(Some(n)) => notes.push(if what.is_empty() {
                    n
                } else {
                    format!("{what}: {n}")
                }),
                Ok(None) => {}
            }
            match snapshot(sb) {
                Ok(after) if after == before => {}
                Ok(after) => {
                    return Outcome::Fail(format!(
                        "{what}{}request refused but namespaces changed: host {}; container {}",
                        if what.is_empty() { "" } else { ": " },
                        diff(&before.0, &after.0),
                        diff(&before.1, &after.1)
                    ))
                }
                Err(e) => return Outcome::Fail(format!("suite could not list links: {e}")),
            }
        }
        if notes.is_empty() {
            Outcome::Pass(None)
        } else {
            Outcome::Pass(Some(format!(
                "rejected ({}), nothing created",
                notes.join("; ")
            )))
        }
    }

    // ----- 1. VERSION -----

    fn version_checks(&mut self) {
        let names: Vec<String> = [
            "version-probe",
            "version-probe-1.1.0",
            "version-ignores-stdin",
        ]
        .map(String::from)
        .to_vec();
        let Some(sb) = self.sandbox_for(&names) else {
            self.supported = vec!["0.1.0".into()];
            return;
        };
        let env: Env = vec![
            ("CNI_COMMAND", "VERSION".into()),
            ("CNI_CONTAINERID", String::new()),
            ("CNI_NETNS", "dummy".into()),
            ("CNI_ARGS", String::new()),
            ("CNI_IFNAME", "dummy".into()),
            ("CNI_PATH", "dummy".into()),
        ];
        let reply = self.call(
            "version-probe",
            &sb.host,
            &env,
            br#"{"cniVersion":"1.0.0"}"#,
        );
        let parsed = reply.expect_object().and_then(|v| {
            // Keep the known versions even if the reply is otherwise wrong.
            if let Some(list) = v.get("supportedVersions").and_then(Value::as_array) {
                self.supported = KNOWN_VERSIONS
                    .iter()
                    .filter(|k| list.iter().any(|s| s.as_str() == Some(k)))
                    .map(|k| k.to_string())
                    .collect();
            }
            parse_version_reply(&v)
        });
        let probe = match &parsed {
            Ok(r) if r.cni_version == "1.0.0" || !r.supported.iter().any(|s| s == "1.0.0") => {
                Outcome::Pass(None)
            }
            Ok(r) => Outcome::Fail(format!(
                "reply cniVersion {:?} does not echo the requested \"1.0.0\"",
                r.cni_version
            )),
            Err(e) => Outcome::Fail(e.clone()),
        };
        self.report.record("version-probe", probe);
        if self.supported.is_empty() {
            println!("# VERSION gave no known supportedVersions: assuming [\"0.1.0\"], as libcni does for plugins without VERSION");
            self.supported = vec!["0.1.0".into()];
        }
        let reference = parsed.ok().map(|r| r.supported);

        let reply = self.call(
            "version-probe-1.1.0",
            &sb.host,
            &env,
            br#"{"cniVersion":"1.1.0"}"#,
        );
        let outcome = match reply.expect_object().and_then(|v| parse_version_reply(&v)) {
            Ok(r) if r.cni_version == "1.1.0" => Outcome::Pass(None),
            Ok(r) if r.supported.iter().any(|s| s == "1.1.0") => {
                Outcome::Fail(format!("plugin lists 1.1.0 but answered cniVersion {:?} instead of echoing it", r.cni_version))
            }
            Ok(r) => Outcome::Pass(Some(format!(
                "answered cniVersion {:?} to a 1.1.0 probe it does not implement (accepted: libcni only reads supportedVersions)",
                r.cni_version
            ))),
            Err(e) => Outcome::Fail(e),
        };
        self.report.record("version-probe-1.1.0", outcome);

        let mut outcome = Outcome::Pass(None);
        for (what, stdin) in [
            ("garbage stdin", &b"this is {not json"[..]),
            ("empty stdin", &b""[..]),
        ] {
            let reply = self.call("version-ignores-stdin", &sb.host, &env, stdin);
            match reply.expect_object().and_then(|v| parse_version_reply(&v)) {
                Ok(r) if reference.as_ref().is_none_or(|s| *s == r.supported) => {}
                Ok(r) => {
                    outcome = Outcome::Fail(format!(
                        "{what}: supportedVersions {:?} differ from the probe's",
                        r.supported
                    ));
                    break;
                }
                Err(e) => {
                    outcome = Outcome::Fail(format!("{what}: {e}"));
                    break;
                }
            }
        }
        self.report.record("version-ignores-stdin", outcome);
    }

    // ----- 2, 3. bad requests -----

    fn request_error_checks(&mut self) {
        let vmax = self.vmax();
        for (name, stdin, code) in [
            ("add-unknown-version", true, 1u64),
            ("add-malformed-json", false, 6u64),
        ] {
            let names = vec![name.to_string()];
            if !self.report.wants(name) {
                continue;
            }
            let Some(sb) = self.sandbox_for(&names) else {
                continue;
            };
            let stdin = if stdin {
                to_bytes(&self.add_config(&sb, Some("9.9.9"), &vmax))
            } else {
                let full = to_bytes(&self.add_config(&sb, Some(&vmax), &vmax));
                full[..full.len() / 2].to_vec()
            };
            let env = self.env(&sb, "ADD");
            let outcome = self.rejected(
                name,
                &sb,
                vec![(String::new(), env, stdin)],
                Judge::Code(code),
            );
            self.report.record(name, outcome);
        }
    }

    // ----- 4. missing environment variables -----

    fn missing_env_checks(&mut self) {
        let vmax = self.vmax();
        let cases: [(&str, &'static str, &str, Judge); 6] = [
            (
                "add-missing-CNI_CONTAINERID",
                "CNI_CONTAINERID",
                "ADD",
                Judge::Code(4),
            ),
            ("add-missing-CNI_NETNS", "CNI_NETNS", "ADD", Judge::Code(4)),
            (
                "add-missing-CNI_IFNAME",
                "CNI_IFNAME",
                "ADD",
                Judge::Code(4),
            ),
            (
                "add-missing-CNI_COMMAND",
                "CNI_COMMAND",
                "ADD",
                Judge::AnyErrorOrSilent,
            ),
            (
                "del-missing-CNI_CONTAINERID",
                "CNI_CONTAINERID",
                "DEL",
                Judge::Code(4),
            ),
            (
                "del-missing-CNI_IFNAME",
                "CNI_IFNAME",
                "DEL",
                Judge::Code(4),
            ),
        ];
        for (name, var, verb, judge) in cases {
            if !self.report.wants(name) {
                continue;
            }
            let Some(sb) = self.sandbox_for(&[name.to_string()]) else {
                continue;
            };
            let stdin = if verb == "ADD" {
                to_bytes(&self.add_config(&sb, Some(&vmax), &vmax))
            } else {
                to_bytes(&self.config(&sb, Some(&vmax)))
            };
            let mut unset = self.env(&sb, verb);
            set_var(&mut unset, var, None);
            let mut empty = self.env(&sb, verb);
            set_var(&mut empty, var, Some(""));
            let variants = vec![
                (format!("{var} unset"), unset, stdin.clone()),
                (format!("{var} empty"), empty, stdin),
            ];
            let outcome = self.rejected(name, &sb, variants, judge);
            self.report.record(name, outcome);
        }
    }

    // ----- 11. interface name and container ID validation -----

    fn name_checks(&mut self) {
        let vmax = self.vmax();
        let cases: [(&str, &'static str, &str); 6] = [
            ("ifname-too-long", "CNI_IFNAME", "cnic0123456789ab"),
            ("ifname-slash", "CNI_IFNAME", "net/1"),
            ("ifname-colon", "CNI_IFNAME", "net:1"),
            ("ifname-whitespace", "CNI_IFNAME", "net 1"),
            ("ifname-dot", "CNI_IFNAME", "."),
            ("containerid-invalid", "CNI_CONTAINERID", "cnic/../x"),
        ];
        for (name, var, value) in cases {
            if !self.report.wants(name) {
                continue;
            }
            let Some(sb) = self.sandbox_for(&[name.to_string()]) else {
                continue;
            };
            let stdin = to_bytes(&self.add_config(&sb, Some(&vmax), &vmax));
            let mut env = self.env(&sb, "ADD");
            set_var(&mut env, var, Some(value));
            let outcome = self.rejected(
                name,
                &sb,
                vec![(String::new(), env, stdin)],
                Judge::AnyError,
            );
            self.report.record(name, outcome);
        }
    }

    // ----- 5, 7, 8. per-version ADD / CHECK / DEL / DEL -----

    fn version_lifecycle(&mut self, v: &str) {
        let n_add = format!("add-{v}");
        let n_chain = format!("chained-prevresult-{v}");
        let n_check = format!("check-{v}");
        let n_del = format!("del-{v}");
        let n_del2 = format!("del-again-{v}");
        let has_chain = self.opts.chained && version_at_least(v, "0.3.0");
        let has_check = version_at_least(v, "0.4.0");
        let mut names = vec![n_add.clone(), n_del.clone(), n_del2.clone()];
        if has_chain {
            names.push(n_chain.clone());
        }
        if has_check {
            names.push(n_check.clone());
        }
        if !self.report.wants_any(&names) {
            return;
        }
        let Some(sb) = self.sandbox_for(&names) else {
            return;
        };
        let (reply, add_cfg) = self.add(&n_add, &sb, v, None);
        let mut result = None;
        let add_outcome = match reply.expect_object() {
            Ok(r) => {
                let verdict = validate_result(v, &r).and_then(|_| self.verify_live(&sb, v, &r));
                result = Some(r);
                Outcome::from_result(verdict)
            }
            Err(e) if family(v) == Some(Family::V02) && self.l2_only() => match reply.expect_error(None) {
                Ok(err) => Outcome::Pass(Some(format!(
                    "ADD refused with {err}: accepted, a {v} result must carry an IP and this config has no IPAM"
                ))),
                Err(_) => Outcome::Fail(e),
            },
            Err(e) => Outcome::Fail(format!("ADD: {e}")),
        };
        self.report.record(&n_add, add_outcome);

        if has_chain {
            let outcome = match (&result, add_cfg.get("prevResult")) {
                (Some(r), Some(prev)) => Outcome::from_result(check_passthrough(prev, r)),
                _ => Outcome::Fail("not run: ADD returned no result".into()),
            };
            self.report.record(&n_chain, outcome);
        }

        if has_check {
            let outcome = match &result {
                Some(r) => {
                    let cfg = self.followup_config(&sb, v, Some(r));
                    let env = self.env(&sb, "CHECK");
                    let reply = self.call(&n_check, &sb.host, &env, &to_bytes(&cfg));
                    Outcome::from_result(
                        reply
                            .expect_empty_success()
                            .map_err(|e| format!("CHECK right after ADD: {e}")),
                    )
                }
                None => Outcome::Fail("not run: ADD returned no result".into()),
            };
            self.report.record(&n_check, outcome);
        }

        let reply = self.del(&n_del, &sb, v, result.as_ref(), None);
        let mut verdict = reply
            .expect_empty_success()
            .and_then(|_| self.iface_gone(&sb));
        if self.host_local() {
            verdict = verdict.and_then(|_| self.reservation_gone(&sb));
        }
        self.report.record(&n_del, Outcome::from_result(verdict));

        let reply = self.del(&n_del2, &sb, v, None, None);
        let verdict = reply
            .expect_empty_success()
            .map_err(|e| format!("second DEL (no prevResult): {e}"));
        self.report.record(&n_del2, Outcome::from_result(verdict));
    }

    // ----- ADD when the interface already exists -----

    fn existing_ifname_check(&mut self) {
        if self.opts.chained {
            return; // for a chained plugin the interface is supposed to exist
        }
        let names = vec![
            "add-existing-ifname".to_string(),
            "del-after-failed-add".to_string(),
        ];
        if !self.report.wants_any(&names) {
            return;
        }
        let Some(sb) = self.sandbox_for(&names) else {
            return;
        };
        let vmax = self.vmax();
        let outcome = match self.prepare_interface(&sb, false) {
            Err(e) => Outcome::Fail(format!("suite could not create {}: {e}", self.opts.ifname)),
            Ok(mac) => {
                let before = sb.ctr.link_names();
                let (reply, _) = self.add("add-existing-ifname", &sb, &vmax, None);
                match reply.expect_error(None) {
                    Err(e) => Outcome::Fail(e),
                    Ok(err) => match (sb.ctr.link(&self.opts.ifname), sb.ctr.link_names()) {
                        (Ok(Some(l)), Ok(after)) if l.mac == mac && Ok(&after) == before.as_ref() => {
                            Outcome::Pass(Some(format!("refused with code {}, existing interface untouched", err.code)))
                        }
                        (Ok(l), after) => Outcome::Fail(format!(
                            "refused with {err}, but the container changed (existing {}: {:?}; links {:?} -> {:?})",
                            self.opts.ifname, l, before, after
                        )),
                        (Err(e), _) => Outcome::Fail(e),
                    },
                }
            }
        };
        self.report.record("add-existing-ifname", outcome);
        let reply = self.del("del-after-failed-add", &sb, &vmax, None, None);
        self.report.record(
            "del-after-failed-add",
            Outcome::from_result(reply.expect_empty_success()),
        );
    }

    // ----- 6. DEL robustness -----

    fn del_robustness_checks(&mut self) {
        let vmax = self.vmax();
        for (name, mode) in [
            ("del-empty-netns", 0),
            ("del-netns-gone", 1),
            ("del-without-prevresult", 2),
        ] {
            if mode == 2 && !version_at_least(&vmax, "0.4.0") {
                continue; // below 0.4.0 every DEL is without prevResult already
            }
            let ipam_name = format!("{name}-ipam-released");
            let mut names = vec![name.to_string()];
            if self.host_local() {
                names.push(ipam_name.clone());
            }
            if !self.report.wants_any(&names) {
                continue;
            }
            let Some(mut sb) = self.sandbox_for(&names) else {
                continue;
            };
            let result = match self.add_ok(name, &sb, &vmax) {
                Ok(r) => r,
                Err(e) => {
                    for n in &names {
                        self.report.record(n, Outcome::Fail(e.clone()));
                    }
                    self.del("cleanup", &sb, &vmax, None, None);
                    continue;
                }
            };
            let had_reservation = self.reservation_count(&sb) > 0;
            let mut env = self.env(&sb, "DEL");
            let mut prev = Some(&result);
            let mut verdict = Ok(());
            match mode {
                0 => set_var(&mut env, "CNI_NETNS", Some("")),
                1 => {
                    verdict = sb
                        .ctr
                        .delete()
                        .map_err(|e| format!("suite could not delete the container netns: {e}"));
                }
                _ => prev = None,
            }
            let reply = self.del(name, &sb, &vmax, prev, Some(env));
            verdict = verdict.and_then(|_| reply.expect_empty_success());
            if mode == 2 {
                verdict = verdict.and_then(|_| self.iface_gone(&sb));
            }
            self.report.record(name, Outcome::from_result(verdict));
            if self.host_local() {
                let outcome = if had_reservation {
                    Outcome::from_result(self.reservation_gone(&sb))
                } else {
                    Outcome::Fail("no host-local reservation was found after ADD".into())
                };
                self.report.record(&ipam_name, outcome);
            }
            if mode != 1 {
                self.del("cleanup", &sb, &vmax, None, None);
            }
        }
    }

    // ----- CHECK / DEL when the interface vanished -----

    fn missing_interface_checks(&mut self) {
        if self.opts.chained {
            return; // the interface is not the chained plugin's own resource
        }
        let n_check = "check-detects-missing-interface".to_string();
        let n_del = "del-missing-interface".to_string();
        let names = vec![n_check.clone(), n_del.clone()];
        if !self.report.wants_any(&names) {
            return;
        }
        let version = self.check_version().unwrap_or_else(|| self.vmax());
        let Some(sb) = self.sandbox_for(&names) else {
            return;
        };
        let result = match self.add_ok(&n_check, &sb, &version) {
            Ok(r) => r,
            Err(e) => {
                for n in &names {
                    self.report.record(n, Outcome::Fail(e.clone()));
                }
                self.del("cleanup", &sb, &version, None, None);
                return;
            }
        };
        let removed = sb.ctr.ip(&["link", "del", &self.opts.ifname]);
        if let Err(e) = removed {
            for n in &names {
                self.report.record(
                    n,
                    Outcome::Fail(format!("suite could not delete {}: {e}", self.opts.ifname)),
                );
            }
            return;
        }
        if version_at_least(&version, "0.4.0") {
            let cfg = self.followup_config(&sb, &version, Some(&result));
            let env = self.env(&sb, "CHECK");
            let reply = self.call(&n_check, &sb.host, &env, &to_bytes(&cfg));
            let outcome = match reply.expect_error(None) {
                Ok(err) => Outcome::Pass(Some(format!("CHECK reported {err}"))),
                Err(e) => {
                    Outcome::Fail(format!("CHECK after {} was deleted: {e}", self.opts.ifname))
                }
            };
            self.report.record(&n_check, outcome);
        } else {
            self.report.record(
                &n_check,
                Outcome::Skip("VERSION lists no version >= 0.4.0, so CHECK is not offered".into()),
            );
        }
        let reply = self.del(&n_del, &sb, &version, Some(&result), None);
        let mut verdict = reply.expect_empty_success();
        if self.host_local() {
            verdict = verdict.and_then(|_| self.reservation_gone(&sb));
        }
        self.report.record(&n_del, Outcome::from_result(verdict));
    }

    // ----- runtime-shaped variations that must just work -----

    fn variant_checks(&mut self) {
        let vmax = self.vmax();
        let cases: [(&str, Option<&str>, bool); 3] = [
            ("cni-args-containerd", Some("IgnoreUnknown=1;K8S_POD_NAMESPACE=cnic-ns;K8S_POD_NAME=cnic-pod;K8S_POD_INFRA_CONTAINER_ID={cid};K8S_POD_UID=8f3a2c1e-0b7d-4e55-9a1b-3c2d4e5f6a7b"), false),
            ("cni-args-multus", Some("IgnoreUnknown=true;K8S_POD_NAMESPACE=cnic-ns;K8S_POD_NAME=cnic-pod;K8S_POD_INFRA_CONTAINER_ID={cid};K8S_POD_UID=8f3a2c1e-0b7d-4e55-9a1b-3c2d4e5f6a7b"), false),
            ("config-runtime-keys", None, true),
        ];
        for (name, args, keys) in cases {
            if !self.report.wants(name) {
                continue;
            }
            let Some(sb) = self.sandbox_for(&[name.to_string()]) else {
                continue;
            };
            let args = args.map(|a| a.replace("{cid}", &sb.cid));
            let mut add_env = self.env(&sb, "ADD");
            let mut del_env = self.env(&sb, "DEL");
            set_var(&mut add_env, "CNI_ARGS", args.as_deref());
            set_var(&mut del_env, "CNI_ARGS", args.as_deref());
            let mut cfg = self.add_config(&sb, Some(&vmax), &vmax);
            if keys {
                // Kept by libcni / injected by runtimes: plugins must tolerate them.
                cfg.entry("capabilities").or_insert(json!({"mac": false}));
                cfg.entry("args")
                    .or_insert(json!({"cni": {"labels": [{"key": "app", "value": "cnic"}]}}));
            }
            let reply = self.call(name, &sb.host, &add_env, &to_bytes(&cfg));
            let result = reply.expect_object().map_err(|e| format!("ADD: {e}"));
            let verdict = result.as_ref().map_err(Clone::clone).and_then(|r| {
                validate_result(&vmax, r)
                    .and_then(|_| self.verify_live(&sb, &vmax, r))
                    .map_err(|e| format!("ADD: {e}"))
            });
            let mut del_cfg = self.followup_config(&sb, &vmax, result.as_ref().ok());
            if keys {
                del_cfg
                    .entry("capabilities")
                    .or_insert(json!({"mac": false}));
                del_cfg
                    .entry("args")
                    .or_insert(json!({"cni": {"labels": [{"key": "app", "value": "cnic"}]}}));
            }
            let reply = self.call(name, &sb.host, &del_env, &to_bytes(&del_cfg));
            let verdict = verdict.and_then(|_| {
                reply
                    .expect_empty_success()
                    .and_then(|_| self.iface_gone(&sb))
                    .map_err(|e| format!("DEL: {e}"))
            });
            self.report.record(name, Outcome::from_result(verdict));
        }
    }

    // ----- configs without cniVersion -----

    fn no_cniversion_checks(&mut self) {
        for (name, version) in [
            ("add-empty-cniversion", Some("")),
            ("add-absent-cniversion", None),
        ] {
            if !self.report.wants(name) {
                continue;
            }
            let Some(sb) = self.sandbox_for(&[name.to_string()]) else {
                continue;
            };
            let cfg = self.add_config(&sb, version, "0.1.0");
            let env = self.env(&sb, "ADD");
            let reply = self.call(name, &sb.host, &env, &to_bytes(&cfg));
            let v01 = self.supported.iter().any(|s| s == "0.1.0");
            let mut outcome = match reply.expect_object() {
                Ok(mut r) if v01 => {
                    // A result without cniVersion is read as 0.1.0 by libcni too.
                    if let Some(o) = r.as_object_mut() {
                        o.entry("cniVersion").or_insert(json!("0.1.0"));
                    }
                    Outcome::from_result(
                        validate_result("0.1.0", &r)
                            .and_then(|_| self.verify_live(&sb, "0.1.0", &r))
                            .map_err(|e| format!("a config without cniVersion means 0.1.0: {e}")),
                    )
                }
                Ok(r) => Outcome::Fail(format!(
                    "a config without cniVersion means 0.1.0, which the plugin does not list; expected error code 1, got result {}",
                    excerpt(&r.to_string())
                )),
                Err(e) => match reply.expect_error(if v01 { None } else { Some(1) }) {
                    Ok(err) if !v01 => Outcome::Pass(Some(format!("refused with {err} (0.1.0 not supported)"))),
                    Ok(err) if self.l2_only() => Outcome::Pass(Some(format!(
                        "refused with {err}: accepted, a 0.1.0 result must carry an IP and this config has no IPAM"
                    ))),
                    Ok(err) => Outcome::Fail(format!("a config without cniVersion means 0.1.0, which the plugin lists, but ADD failed with {err}")),
                    Err(_) => Outcome::Fail(e),
                },
            };
            let del_cfg = self.config(&sb, version);
            let env = self.env(&sb, "DEL");
            let reply = self.call(name, &sb.host, &env, &to_bytes(&del_cfg));
            if let Err(e) = reply
                .expect_empty_success()
                .and_then(|_| self.iface_gone(&sb))
            {
                if !matches!(outcome, Outcome::Fail(_)) {
                    outcome = Outcome::Fail(format!("DEL: {e}"));
                }
            }
            self.report.record(name, outcome);
        }
    }

    // ----- 9. STATUS and GC -----

    fn status_gc_checks(&mut self) {
        let mut names: Vec<String> = [
            "status",
            "status-version-gate",
            "gc",
            "gc-keeps-valid",
            "gc-version-gate",
        ]
        .map(String::from)
        .to_vec();
        if self.host_local() {
            names.push("gc-releases-stale-ipam".into());
        }
        if !self.report.wants_any(&names) {
            return;
        }
        if !self.supported.iter().any(|s| s == "1.1.0") {
            for n in &names {
                self.report.record(
                    n,
                    Outcome::Skip(
                        "VERSION does not list 1.1.0, which introduced STATUS and GC".into(),
                    ),
                );
            }
            return;
        }
        let Some(sb) = self.sandbox_for(&names) else {
            return;
        };

        let status_env = self.env_runtime_wide("STATUS");
        let cfg = self.config(&sb, Some("1.1.0"));
        let reply = self.call("status", &sb.host, &status_env, &to_bytes(&cfg));
        self.report
            .record("status", Outcome::from_result(reply.expect_empty_success()));

        let cfg = self.config(&sb, Some("1.0.0"));
        let outcome = self.rejected(
            "status-version-gate",
            &sb,
            vec![(String::new(), status_env, to_bytes(&cfg))],
            Judge::Code(1),
        );
        self.report.record("status-version-gate", outcome);

        let gc_env = self.env_runtime_wide("GC");
        let gc_config = |suite: &Self, sb: &Sandbox, version: &str, valid: Value| {
            let mut cfg = suite.config(sb, Some(version));
            // libcni >= 1.2.3 sends both spellings of the key.
            cfg.insert("cni.dev/valid-attachments".into(), valid.clone());
            cfg.insert("cni.dev/attachments".into(), valid);
            cfg
        };
        let cfg = gc_config(self, &sb, "1.1.0", json!([]));
        let reply = self.call("gc", &sb.host, &gc_env, &to_bytes(&cfg));
        self.report
            .record("gc", Outcome::from_result(reply.expect_empty_success()));

        let cfg = gc_config(self, &sb, "1.0.0", json!([]));
        let outcome = self.rejected(
            "gc-version-gate",
            &sb,
            vec![(String::new(), gc_env.clone(), to_bytes(&cfg))],
            Judge::Code(1),
        );
        self.report.record("gc-version-gate", outcome);

        // GC must leave attachments listed as valid alone.
        if self.report.wants("gc-keeps-valid") {
            let outcome = match self.add_ok("gc-keeps-valid", &sb, "1.1.0") {
                Err(e) => Outcome::Fail(e),
                Ok(result) => {
                    let valid = json!([{"containerID": sb.cid, "ifname": self.opts.ifname}]);
                    let cfg = gc_config(self, &sb, "1.1.0", valid);
                    let reply = self.call("gc-keeps-valid", &sb.host, &gc_env, &to_bytes(&cfg));
                    let mut verdict = reply.expect_empty_success().map_err(|e| format!("GC: {e}"));
                    if verdict.is_ok() && self.host_local() && self.reservation_count(&sb) == 0 {
                        verdict = Err(
                            "GC released the host-local reservation of a valid attachment".into(),
                        );
                    }
                    if verdict.is_ok() {
                        let cfg = self.followup_config(&sb, "1.1.0", Some(&result));
                        let env = self.env(&sb, "CHECK");
                        let reply = self.call("gc-keeps-valid", &sb.host, &env, &to_bytes(&cfg));
                        verdict = reply
                            .expect_empty_success()
                            .map_err(|e| format!("CHECK after GC: {e}"));
                    }
                    Outcome::from_result(verdict)
                }
            };
            self.report.record("gc-keeps-valid", outcome);
            self.del("cleanup", &sb, "1.1.0", None, None);
        }

        // GC with an empty valid list must release stale IPAM reservations.
        if self.host_local() && self.report.wants("gc-releases-stale-ipam") {
            let Some(sb) = self.sandbox_for(&["gc-releases-stale-ipam".to_string()]) else {
                return;
            };
            let outcome = match self.add_ok("gc-releases-stale-ipam", &sb, "1.1.0") {
                Err(e) => Outcome::Fail(e),
                Ok(_) if self.reservation_count(&sb) == 0 => {
                    Outcome::Fail("no host-local reservation was found after ADD".into())
                }
                Ok(_) => {
                    let cfg = gc_config(self, &sb, "1.1.0", json!([]));
                    let reply =
                        self.call("gc-releases-stale-ipam", &sb.host, &gc_env, &to_bytes(&cfg));
                    Outcome::from_result(
                        reply
                            .expect_empty_success()
                            .and_then(|_| self.reservation_gone(&sb)),
                    )
                }
            };
            self.report.record("gc-releases-stale-ipam", outcome);
            self.del("cleanup", &sb, "1.1.0", None, None);
        }
    }

    // ----- 10. stdout discipline over every invocation -----

    fn stdout_check(&mut self) {
        let outcome = if self.violations.is_empty() {
            Outcome::Pass(Some(format!(
                "{} invocations, stdout was always one JSON value or empty as required",
                self.invocations
            )))
        } else {
            let shown: Vec<&str> = self.violations.iter().take(5).map(String::as_str).collect();
            Outcome::Fail(format!(
                "{} of {} invocations broke the stdout rule: {}{}",
                self.violations.len(),
                self.invocations,
                shown.join(" | "),
                if self.violations.len() > 5 {
                    " | ..."
                } else {
                    ""
                }
            ))
        };
        self.report.record("stdout-json", outcome);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cnic_tmp_is_expanded_in_every_string_at_any_depth() {
        let config = json!({
            "socket_file": "unix:${CNIC_TMP}/db.sock",
            "list": ["${CNIC_TMP}", 5, {"deep": "a${CNIC_TMP}b${CNIC_TMP}"}],
            "${CNIC_TMP}/key": true,
            "untouched": "$CNIC_TMP {CNIC_TMP}",
            "number": 1
        });
        let expanded = expand_tmp(config, "/tmp/cnic-1-2");
        assert_eq!(
            expanded,
            json!({
                "socket_file": "unix:/tmp/cnic-1-2/db.sock",
                "list": ["/tmp/cnic-1-2", 5, {"deep": "a/tmp/cnic-1-2b/tmp/cnic-1-2"}],
                "/tmp/cnic-1-2/key": true,
                "untouched": "$CNIC_TMP {CNIC_TMP}",
                "number": 1
            })
        );
    }
}
