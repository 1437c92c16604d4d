//! The command line: options as `scripts/test` and the README use them, and the plugin
//! configuration file they name.

use crate::error::{Context, Error};
use crate::suite::Options;
use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

/// Black-box conformance suite for CNI plugin binaries: runs the plugin exactly as a runtime
/// does, always inside throwaway network namespaces, and prints one PASS/FAIL/SKIP line per
/// check, then the totals.
#[derive(Debug, Parser)]
#[command(
    name = "cni-conformance",
    version,
    args_override_self = true,
    after_help = "Needs root and iproute2. Exit status: 0 if no check failed, 1 if one did, \
                  2 for a usage error or a host that cannot run the suite."
)]
pub struct Cli {
    /// Directory holding the plugin binary (first entry of CNI_PATH)
    #[arg(long, value_name = "DIR")]
    pub plugin_dir: PathBuf,

    /// Binary name; also set as the config's `type`
    #[arg(long, value_name = "NAME", value_parser = binary_name)]
    pub plugin: String,

    /// One plugin configuration object (JSON); cniVersion is set per check, `${CNIC_TMP}` in
    /// any string becomes the check's temp dir
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,

    /// The plugin is a meta plugin: the suite creates CNI_IFNAME itself and passes a prevResult
    #[arg(long)]
    pub chained: bool,

    /// CNI_IFNAME
    #[arg(long, value_name = "NAME", default_value = "net1", value_parser = interface_name)]
    pub ifname: String,

    /// Only run checks whose name contains SUBSTR
    #[arg(long, value_name = "SUBSTR")]
    pub filter: Option<String>,

    /// Further CNI_PATH entries for delegated IPAM (repeatable)
    #[arg(long = "ipam-dir", value_name = "DIR", default_value = "/usr/lib/cni")]
    pub ipam_dirs: Vec<PathBuf>,

    /// Per-invocation time limit in seconds; when it runs out, the process group is killed
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub timeout: u64,

    /// Run `sh -c CMD` in each check's host namespace once it and the check's temp dir exist,
    /// with CNIC_HOST_NS and CNIC_TMP set; failing fails the check
    #[arg(long, value_name = "CMD", allow_hyphen_values = true)]
    pub host_setup: Option<String>,

    /// Run `sh -c CMD` the same way when the check ends; failing prints a `#` line
    #[arg(long, value_name = "CMD", allow_hyphen_values = true)]
    pub host_teardown: Option<String>,

    /// NAME=VALUE in every plugin call's environment besides PATH and the CNI_ variables, as a
    /// runtime passes its own environment on (repeatable); the spec's CNI_ variables are the
    /// suite's
    #[arg(long = "env", value_name = "NAME=VALUE", value_parser = env_var)]
    pub env: Vec<(String, String)>,

    /// Print every invocation (env, stdin, exit, stdout, stderr) to stderr
    #[arg(short, long)]
    pub verbose: bool,
}

/// The variables the spec defines, which the suite sets for each call itself.
const CNI_VARIABLES: [&str; 6] = [
    "CNI_COMMAND",
    "CNI_CONTAINERID",
    "CNI_NETNS",
    "CNI_IFNAME",
    "CNI_ARGS",
    "CNI_PATH",
];

fn env_var(text: &str) -> Result<(String, String), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?} is not NAME=VALUE"))?;
    if name.is_empty() || name.contains('\0') || value.contains('\0') {
        return Err(format!("{text:?} is not NAME=VALUE"));
    }
    if CNI_VARIABLES.contains(&name) || name == "PATH" {
        return Err(format!("{name} is set by the suite itself"));
    }
    Ok((name.to_string(), value.to_string()))
}

fn binary_name(text: &str) -> Result<String, String> {
    if text.is_empty() || text.contains('/') {
        return Err("must be a binary name without '/'".into());
    }
    Ok(text.to_string())
}

fn interface_name(text: &str) -> Result<String, String> {
    if text.is_empty()
        || text.len() > 15
        || text.contains(['/', ':'])
        || text.contains(char::is_whitespace)
    {
        return Err(format!("{text:?} is not a valid interface name"));
    }
    Ok(text.to_string())
}

impl Cli {
    /// The suite's options, with the configuration file read. A file the suite cannot use is
    /// a usage error, reported the way clap reports one.
    pub fn into_options(self) -> Result<Options, clap::Error> {
        let config = read_config(&self.config)
            .map_err(|e| Cli::command().error(ErrorKind::ValueValidation, e.chain()))?;
        Ok(Options {
            plugin_dir: self.plugin_dir,
            plugin: self.plugin,
            config,
            chained: self.chained,
            ifname: self.ifname,
            ipam_dirs: self.ipam_dirs,
            filter: self.filter,
            timeout: Duration::from_secs(self.timeout),
            host_setup: self.host_setup,
            host_teardown: self.host_teardown,
            env: self.env,
        })
    }
}

/// One plugin configuration object, as a NetworkAttachmentDefinition carries it; without
/// prevResult, which the suite supplies itself.
fn read_config(path: &std::path::Path) -> Result<serde_json::Map<String, Value>, Error> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {shown}"))?;
    let value: Value =
        serde_json::from_str(&text).with_context(|| format!("{shown} is not JSON"))?;
    let Value::Object(mut config) = value else {
        return Err(format!("{shown} must hold one JSON object (a plugin configuration)").into());
    };
    if config.contains_key("plugins") {
        return Err("the config is a conflist; pass one plugin configuration object".into());
    }
    if config.remove("prevResult").is_some() {
        tracing::warn!("ignoring the config's prevResult; the suite supplies prevResult itself");
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    const REQUIRED: [&str; 7] = [
        "cni-conformance",
        "--plugin-dir",
        "/d",
        "--plugin",
        "x",
        "--config",
        "/c",
    ];

    fn parse(extra: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(REQUIRED.iter().chain(extra))
    }

    fn config_file(text: &str) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().expect("a temp file");
        std::io::Write::write_all(&mut file, text.as_bytes()).expect("writing the temp file");
        file
    }

    #[test]
    fn host_hooks_are_parsed_in_both_spellings() {
        let cli = parse(&[
            "--host-setup",
            "ip link add a type veth peer name b",
            "--host-teardown=echo done",
        ])
        .expect("valid arguments");
        assert_eq!(
            cli.host_setup.as_deref(),
            Some("ip link add a type veth peer name b")
        );
        assert_eq!(cli.host_teardown.as_deref(), Some("echo done"));
    }

    #[test]
    fn env_options_are_kept_in_order_and_cni_names_refused() {
        let cli = parse(&["--env", "A=1", "--env=B=x=y"]).expect("valid arguments");
        assert_eq!(
            cli.env,
            vec![("A".into(), "1".into()), ("B".into(), "x=y".into())]
        );
        for bad in ["CNI_COMMAND=ADD", "CNI_PATH=/x", "PATH=/x", "novalue", "=1"] {
            assert!(parse(&["--env", bad]).is_err(), "{bad:?}");
        }
        assert!(parse(&["--env", "CNI_NODE_POLICY=/p.json"]).is_ok());
    }

    #[test]
    fn an_option_without_its_value_is_a_usage_error() {
        let err = parse(&["--host-setup"]).err().map(|e| e.kind());
        assert_eq!(err, Some(ErrorKind::InvalidValue));
    }

    #[test]
    fn plugin_dir_plugin_and_config_are_required() {
        for missing in ["--plugin-dir", "--plugin", "--config"] {
            let mut args = REQUIRED.to_vec();
            let at = args.iter().position(|a| *a == missing).expect("listed");
            args.drain(at..at + 2);
            let err = Cli::try_parse_from(args).err().map(|e| e.kind());
            assert_eq!(err, Some(ErrorKind::MissingRequiredArgument), "{missing}");
        }
    }

    #[test]
    fn unknown_options_are_refused() {
        let err = parse(&["--bogus"]).err().map(|e| e.kind());
        assert_eq!(err, Some(ErrorKind::UnknownArgument));
    }

    #[test]
    fn the_plugin_is_a_binary_name_not_a_path() {
        let err = Cli::try_parse_from([
            "cni-conformance",
            "--plugin-dir",
            "/d",
            "--plugin",
            "a/b",
            "--config",
            "/c",
        ]);
        assert!(err.is_err());
    }

    #[test]
    fn ifname_must_be_a_valid_interface_name() {
        for bad in ["x/y", "a:b", "a b", "", "sixteen-chars-xx"] {
            assert!(parse(&["--ifname", bad]).is_err(), "{bad:?}");
        }
        assert!(parse(&["--ifname", "eth0"]).is_ok());
    }

    #[test]
    fn defaults_are_net1_usr_lib_cni_and_30_seconds() {
        let cli = parse(&[]).expect("valid arguments");
        assert_eq!(cli.ifname, "net1");
        assert_eq!(cli.ipam_dirs, vec![PathBuf::from("/usr/lib/cni")]);
        assert_eq!(cli.timeout, 30);
        assert!(!cli.chained && !cli.verbose);
    }

    #[test]
    fn ipam_dirs_given_replace_the_default_and_keep_their_order() {
        let cli = parse(&["--ipam-dir", "/a", "--ipam-dir=/b"]).expect("valid arguments");
        assert_eq!(
            cli.ipam_dirs,
            vec![PathBuf::from("/a"), PathBuf::from("/b")]
        );
    }

    #[test]
    fn an_option_given_twice_keeps_the_last_value() {
        let cli = parse(&["--timeout", "5", "--timeout", "7"]).expect("valid arguments");
        assert_eq!(cli.timeout, 7);
    }

    #[test]
    fn a_timeout_must_be_a_number_of_seconds() {
        assert!(parse(&["--timeout", "soon"]).is_err());
    }

    #[test]
    fn the_config_file_must_exist() {
        let err = read_config(std::path::Path::new("/nonexistent/cnic.json"))
            .err()
            .map(|e| e.chain());
        assert!(err.is_some_and(|e| e.starts_with("cannot read /nonexistent/cnic.json: ")));
    }

    #[test]
    fn the_config_must_be_one_json_object() {
        for text in ["{not json", "[1, 2]"] {
            let file = config_file(text);
            assert!(read_config(file.path()).is_err(), "{text}");
        }
    }

    #[test]
    fn a_conflist_is_refused() {
        let file = config_file(r#"{"name": "n", "plugins": []}"#);
        assert!(read_config(file.path()).is_err());
    }

    #[test]
    fn the_configs_prev_result_is_dropped() {
        let file = config_file(r#"{"name": "n", "prevResult": {"cniVersion": "1.0.0"}}"#);
        let config = read_config(file.path()).expect("a valid config");
        assert_eq!(Value::Object(config), serde_json::json!({"name": "n"}));
    }
}
