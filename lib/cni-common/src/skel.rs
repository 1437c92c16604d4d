//! The verb dispatcher every plugin's `main` calls: reads the environment and stdin, checks
//! versions, decodes the config once, calls the plugin, and prints the result or the error.
//!
//! stdout carries only the result or the spec's error object; anything else goes to stderr.

use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;

use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::config::NetConf;
use crate::env::{validate_network_name, CmdArgs};
use crate::error::{Context, Error, Result};
use crate::netns::NetNs;
use crate::result::CniResult;
use crate::version::{negotiate, Command, SpecVersion};

/// One plugin: the verbs it implements. STATUS and GC default to "ready" and "nothing to collect".
pub trait Plugin {
    /// The plugin's own config fields, flattened into [`NetConf`].
    type Config: DeserializeOwned;

    fn add(&self, req: &Request<Self::Config>) -> Result<CniResult>;
    fn del(&self, req: &Request<Self::Config>) -> Result<()>;
    fn check(&self, req: &Request<Self::Config>) -> Result<()>;

    fn status(&self, _req: &Request<Self::Config>) -> Result<()> {
        Ok(())
    }

    fn gc(&self, _req: &Request<Self::Config>) -> Result<()> {
        Ok(())
    }
}

/// Everything one call carries.
#[derive(Debug)]
pub struct Request<C> {
    pub cmd: CmdArgs,
    pub conf: NetConf<C>,
    /// The version the config speaks; results are printed in it.
    pub version: SpecVersion,
    /// `prevResult`, parsed in the config's version.
    pub prev_result: Option<CniResult>,
    /// The config exactly as received, for delegated plugins (IPAM reads the whole config).
    pub stdin: Vec<u8>,
    /// The config as JSON, decoded from `stdin` once: for what the typed config leaves out (a
    /// delegate's config rewritten).
    pub raw: Value,
}

impl<C> Request<C> {
    /// `prevResult`, or the error chained plugins give when it is missing.
    pub fn require_prev_result(&self) -> Result<&CniResult> {
        self.prev_result.as_ref().ok_or_else(|| {
            Error::invalid_config(format!(
                "{} must be called as a chained plugin: prevResult is missing",
                self.conf.plugin_type
            ))
        })
    }

    /// Opens CNI_NETNS for ADD and CHECK. Like Go's skel, it refuses the plugin's own namespace
    /// (code 8) unless CNI_NETNS_OVERRIDE is set: a runtime bug there would rewire the host.
    pub fn open_netns(&self) -> Result<NetNs> {
        let ns = NetNs::open(&self.cmd.netns)?;
        let overridden = std::env::var("CNI_NETNS_OVERRIDE")
            .map(|v| v == "1" || v.eq_ignore_ascii_case("true"))
            .unwrap_or(false);
        if !overridden && ns.is_same_as_current()? {
            return Err(Error::new(
                crate::error::Code::InvalidNetns,
                format!(
                    "CNI_NETNS {:?} is the plugin's own network namespace",
                    self.cmd.netns
                ),
            ));
        }
        Ok(ns)
    }

    /// Opens CNI_NETNS for DEL: `None` when there is none or it is already gone, which DEL treats
    /// as success for everything inside it.
    pub fn open_netns_if_exists(&self) -> Result<Option<NetNs>> {
        if self.cmd.netns.is_empty() {
            return Ok(None);
        }
        NetNs::open_if_exists(&self.cmd.netns)
    }
}

/// Runs the plugin as a CNI binary: the whole `main` of a plugin is `skel::run(&Plugin, ABOUT)`.
pub fn run<P: Plugin>(plugin: &P, about: &str) -> ExitCode {
    crate::log::init();
    let get = |k: &str| std::env::var(k).ok();
    if get("CNI_COMMAND").unwrap_or_default().is_empty() && std::io::stdin().is_terminal() {
        // Someone ran the binary by hand: say what it is instead of a JSON error.
        eprintln!("{about}");
        return ExitCode::SUCCESS;
    }
    let mut stdin = Vec::new();
    let read = std::io::stdin().read_to_end(&mut stdin);
    let outcome = match read {
        Ok(_) => dispatch(plugin, get, &stdin),
        Err(e) => Outcome::error(&Error::wrap("reading stdin", e), None),
    };
    let mut out = std::io::stdout().lock();
    if !outcome.stdout.is_empty() {
        // A closed stdout leaves nothing useful to do; the exit code still tells.
        let _ = writeln!(out, "{}", outcome.stdout);
        let _ = out.flush();
    }
    if outcome.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// What one call prints and whether it succeeded.
#[derive(Debug)]
pub struct Outcome {
    pub ok: bool,
    pub stdout: String,
}

impl Outcome {
    fn success(stdout: String) -> Outcome {
        Outcome { ok: true, stdout }
    }

    fn error(e: &Error, version: Option<&str>) -> Outcome {
        tracing::error!("{}", e.msg());
        Outcome {
            ok: false,
            stdout: e.to_json(version),
        }
    }
}

/// The whole protocol without process I/O, so it can be tested in-process.
pub fn dispatch<P: Plugin>(
    plugin: &P,
    get: impl Fn(&str) -> Option<String>,
    stdin: &[u8],
) -> Outcome {
    let input = Input::decode(stdin);
    if get("CNI_COMMAND").as_deref() == Some("VERSION") {
        return Outcome::success(version_reply(input.version.as_deref()));
    }
    // The config's version is wanted in error objects even when something else fails first.
    let version = input.version.clone();
    match handle(plugin, get, input) {
        Ok(stdout) => Outcome::success(stdout),
        Err(e) => Outcome::error(&e, version.as_deref()),
    }
}

/// stdin, decoded once: the JSON value serves the VERSION reply, the version of error objects,
/// the checks before the typed config and [`Request::raw`]; the bytes serve the typed config and
/// delegates.
struct Input<'a> {
    bytes: &'a [u8],
    json: serde_json::Result<Value>,
    /// `cniVersion`, when the input is JSON and it is a string.
    version: Option<String>,
}

impl<'a> Input<'a> {
    fn decode(bytes: &'a [u8]) -> Input<'a> {
        let json: serde_json::Result<Value> = serde_json::from_slice(bytes);
        let version = json
            .as_ref()
            .ok()
            .and_then(|v| v.get("cniVersion")?.as_str());
        Input {
            bytes,
            version: version.map(str::to_string),
            json,
        }
    }
}

/// VERSION answers whatever stdin holds (CRI-O probes with dummy values at config load): it
/// echoes the input's `cniVersion` when there is a usable one.
fn version_reply(asked: Option<&str>) -> String {
    let asked = asked
        .filter(|v| SpecVersion::lookup(v).is_some() && !v.is_empty())
        .unwrap_or(SpecVersion::CURRENT.as_str());
    let supported: Vec<&str> = SpecVersion::ALL.iter().map(|v| v.as_str()).collect();
    json!({"cniVersion": asked, "supportedVersions": supported}).to_string()
}

fn handle<P: Plugin>(
    plugin: &P,
    get: impl Fn(&str) -> Option<String>,
    input: Input,
) -> Result<String> {
    let cmd = CmdArgs::from_env(get)?;
    let raw = input
        .json
        .context("failed to decode network configuration")?;
    if !raw.is_object() {
        return Err(Error::decoding(
            "failed to decode network configuration: not a JSON object",
        ));
    }
    let version = negotiate_raw(&raw)?;
    version.require(cmd.command)?;
    // Typed from the bytes, not from `raw`: see NetConf::parse.
    let conf: NetConf<P::Config> = NetConf::parse(input.bytes)?;
    validate_network_name(&conf.name)?;
    let prev_result = match (&conf.prev_result, cmd.command) {
        (Some(v), Command::Add | Command::Check | Command::Del) if !v.is_null() => {
            Some(CniResult::from_value(v, version).context("prevResult")?)
        }
        _ => None,
    };
    let req = Request {
        cmd,
        conf,
        version,
        prev_result,
        stdin: input.bytes.to_vec(),
        raw,
    };
    match req.cmd.command {
        Command::Add => {
            // Held until the ADD is over: the node agent's GC must not run meanwhile.
            let _gc_excluded = crate::gc_lock::for_add()?;
            let result = plugin.add(&req)?;
            Ok(result.to_value(version)?.to_string())
        }
        Command::Del => plugin.del(&req).map(|()| String::new()),
        Command::Check => plugin.check(&req).map(|()| String::new()),
        Command::Status => plugin.status(&req).map(|()| String::new()),
        Command::Gc => plugin.gc(&req).map(|()| String::new()),
        Command::Version => Ok(version_reply(input.version.as_deref())),
    }
}

fn negotiate_raw(raw: &Value) -> Result<SpecVersion> {
    let version = match raw.get("cniVersion") {
        None | Some(Value::Null) => "",
        Some(Value::String(s)) => s.as_str(),
        Some(other) => {
            return Err(Error::decoding(format!(
                "failed to decode network configuration: cniVersion must be a string, not {other}"
            )))
        }
    };
    let versions: Vec<String> = match raw.get("cniVersions") {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => {
            serde_json::from_value(v.clone()).context("cniVersions must be a list of strings")?
        }
    };
    negotiate(version, &versions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;
    use crate::result::Interface;
    use serde::Deserialize;
    use std::collections::HashMap;

    #[derive(Debug, Deserialize)]
    struct Conf {
        #[serde(default)]
        fail: bool,
    }

    struct Fake;

    impl Plugin for Fake {
        type Config = Conf;

        fn add(&self, req: &Request<Conf>) -> Result<CniResult> {
            if req.conf.plugin.fail {
                return Err(Error::system("asked to fail"));
            }
            let mut r = req.prev_result.clone().unwrap_or_default();
            r.interfaces.push(Interface {
                name: req.cmd.ifname.clone(),
                sandbox: req.cmd.netns.clone(),
                ..Interface::default()
            });
            Ok(r)
        }

        fn del(&self, _req: &Request<Conf>) -> Result<()> {
            Ok(())
        }

        fn check(&self, req: &Request<Conf>) -> Result<()> {
            req.require_prev_result().map(|_| ())
        }
    }

    /// Keeps the config DEL was given.
    #[derive(Default)]
    struct Recorder(std::cell::RefCell<Option<(Vec<u8>, Value)>>);

    impl Plugin for Recorder {
        type Config = Conf;

        fn add(&self, _req: &Request<Conf>) -> Result<CniResult> {
            Ok(CniResult::default())
        }

        fn del(&self, req: &Request<Conf>) -> Result<()> {
            self.0.replace(Some((req.stdin.clone(), req.raw.clone())));
            Ok(())
        }

        fn check(&self, _req: &Request<Conf>) -> Result<()> {
            Ok(())
        }
    }

    fn env(cmd: &str) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<&str, String> = [
            ("CNI_COMMAND", cmd.to_string()),
            ("CNI_CONTAINERID", "c1".to_string()),
            ("CNI_NETNS", "/run/netns/x".to_string()),
            ("CNI_IFNAME", "net1".to_string()),
            ("CNI_PATH", "/opt/cni/bin".to_string()),
        ]
        .into_iter()
        .collect();
        move |k| map.get(k).cloned()
    }

    fn code_of(o: &Outcome) -> u64 {
        let v: Value = serde_json::from_str(&o.stdout).expect("error is JSON");
        v["code"].as_u64().expect("integer code")
    }

    #[test]
    fn version_lists_every_version_and_echoes_the_input() {
        let o = dispatch(&Fake, env("VERSION"), br#"{"cniVersion":"0.4.0"}"#);
        assert!(o.ok);
        let v: Value = serde_json::from_str(&o.stdout).expect("json");
        assert_eq!(v["cniVersion"], "0.4.0");
        assert_eq!(v["supportedVersions"].as_array().map(Vec::len), Some(7));
    }

    #[test]
    fn version_answers_garbage_stdin() {
        let o = dispatch(&Fake, env("VERSION"), b"\x00garbage");
        assert!(o.ok);
        let v: Value = serde_json::from_str(&o.stdout).expect("json");
        assert_eq!(v["cniVersion"], "1.1.0");
    }

    #[test]
    fn add_prints_the_result_in_the_config_version() {
        let o = dispatch(&Fake, env("ADD"), br#"{"cniVersion":"0.4.0","name":"n"}"#);
        assert!(o.ok, "{}", o.stdout);
        let v: Value = serde_json::from_str(&o.stdout).expect("json");
        assert_eq!(v["cniVersion"], "0.4.0");
        assert_eq!(v["interfaces"][0]["name"], "net1");
    }

    #[test]
    fn config_without_version_is_0_1_0_and_l2_results_cannot_be_printed_in_it() {
        let o = dispatch(&Fake, env("ADD"), br#"{"name":"n","cniVersion":""}"#);
        assert!(!o.ok);
        assert_eq!(code_of(&o), 1);
    }

    #[test]
    fn unknown_version_is_code_1() {
        let o = dispatch(&Fake, env("ADD"), br#"{"cniVersion":"9.9.9","name":"n"}"#);
        assert_eq!(code_of(&o), 1);
    }

    #[test]
    fn malformed_json_is_code_6() {
        for bad in [&b"{"[..], b"[]", b"\"str\"", b"", b"{\"cniVersion\":1}"] {
            let o = dispatch(&Fake, env("ADD"), bad);
            assert_eq!(code_of(&o), 6, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn malformed_json_says_the_configuration_failed_to_decode() {
        let o = dispatch(&Fake, env("ADD"), b"{");
        let v: Value = serde_json::from_str(&o.stdout).expect("error is JSON");
        let msg = v["msg"].as_str().unwrap_or_default();
        assert!(
            msg.starts_with("failed to decode network configuration: EOF while parsing"),
            "{msg}"
        );
    }

    #[test]
    fn the_request_carries_the_config_as_received_and_as_json() {
        let stdin = br#"{"cniVersion":"1.0.0","name":"n","extra":{"kept":true}}"#;
        let plugin = Recorder::default();
        assert!(dispatch(&plugin, env("DEL"), stdin).ok);
        let (bytes, raw) = plugin.0.take().expect("DEL was called");
        assert_eq!(bytes, stdin);
        assert_eq!(raw["extra"]["kept"], true);
    }

    #[test]
    fn missing_environment_is_code_4() {
        let o = dispatch(
            &Fake,
            |_: &str| None,
            br#"{"cniVersion":"1.0.0","name":"n"}"#,
        );
        assert_eq!(code_of(&o), 4);
    }

    #[test]
    fn bad_network_name_is_code_7() {
        let o = dispatch(&Fake, env("ADD"), br#"{"cniVersion":"1.0.0","name":"a/b"}"#);
        assert_eq!(code_of(&o), 7);
        let o = dispatch(&Fake, env("ADD"), br#"{"cniVersion":"1.0.0"}"#);
        assert_eq!(code_of(&o), 7);
    }

    #[test]
    fn check_is_gated_to_0_4_0_and_gc_status_to_1_1_0() {
        let o = dispatch(&Fake, env("CHECK"), br#"{"cniVersion":"0.3.1","name":"n"}"#);
        assert_eq!(code_of(&o), 1);
        for verb in ["GC", "STATUS"] {
            let o = dispatch(&Fake, env(verb), br#"{"cniVersion":"1.0.0","name":"n"}"#);
            assert_eq!(code_of(&o), 1, "{verb}");
            let o = dispatch(&Fake, env(verb), br#"{"cniVersion":"1.1.0","name":"n"}"#);
            assert!(o.ok && o.stdout.is_empty(), "{verb}");
        }
    }

    #[test]
    fn cni_versions_negotiates_the_highest_known() {
        let o = dispatch(
            &Fake,
            env("ADD"),
            br#"{"cniVersions":["0.4.0","1.1.0","7.0.0"],"name":"n"}"#,
        );
        let v: Value = serde_json::from_str(&o.stdout).expect("json");
        assert_eq!(v["cniVersion"], "1.1.0");
    }

    #[test]
    fn prev_result_is_parsed_in_the_config_version_and_passed_on() {
        let stdin = br#"{"cniVersion":"0.3.1","name":"n","prevResult":{
            "interfaces":[{"name":"eth0"}],
            "ips":[{"version":"4","address":"10.0.0.2/24","interface":0}]}}"#;
        let o = dispatch(&Fake, env("ADD"), stdin);
        assert!(o.ok, "{}", o.stdout);
        let v: Value = serde_json::from_str(&o.stdout).expect("json");
        assert_eq!(v["ips"][0]["address"], "10.0.0.2/24");
        assert_eq!(v["interfaces"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn malformed_prev_result_is_code_6() {
        let stdin = br#"{"cniVersion":"1.0.0","name":"n","prevResult":{"ips":"x"}}"#;
        assert_eq!(code_of(&dispatch(&Fake, env("ADD"), stdin)), 6);
    }

    #[test]
    fn plugin_errors_carry_their_code_and_the_config_version() {
        let o = dispatch(
            &Fake,
            env("ADD"),
            br#"{"cniVersion":"1.0.0","name":"n","fail":true}"#,
        );
        assert!(!o.ok);
        let v: Value = serde_json::from_str(&o.stdout).expect("json");
        assert_eq!(v["code"], Code::System.as_u32());
        assert_eq!(v["cniVersion"], "1.0.0");
    }
}
