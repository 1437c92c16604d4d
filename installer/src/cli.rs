//! The command line. The operator renders it into DaemonSets, so names and flags are stable:
//!
//! ```text
//! cni-installer install   --from DIR --to DIR [--plugins a,b,c=a] [--replace-foreign]
//! cni-installer uninstall --to DIR [--plugins a,b,c=a]
//! cni-installer probe     --to DIR [--plugins a,b,c=a]
//! cni-installer run       --from DIR --to DIR [--plugins a,b,c=a] [--replace-foreign]
//!                         [--mark linux-bridge|ovs] [--ovsdb ENDPOINT] [--interval 60s]
//! cni-installer nmstate   [--state-dir DIR] [--probes gateway,api-server,node-ready|none]
//!                         [--probe-timeout 120s]
//! cni-installer nmstate-ready [--state-dir DIR]
//! ```
//!
//! Flags take their value as the next argument or after `=`. In `--plugins`, `NAME=SOURCE`
//! installs the source file `SOURCE` under the name `NAME` (`cnv-bridge=bridge`); uninstall and
//! probe take the same list and use the names. Mistakes are reported on one line, like every
//! other error, since the DaemonSet's log is where they are read.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Args, Parser, Subcommand};
use cni_common::node_policy::{self, PolicyFile};
use nmstate_handler::{self as nmstate, probes::Probe};

use crate::error::{Error, Result};
use crate::gc::round;
use crate::install;
use crate::marker::Mark;
use crate::probe;
use crate::uninstall;

pub const DEFAULT_FROM: &str = "/plugins";
pub const DEFAULT_TO: &str = "/host/opt/cni/bin";
pub const DEFAULT_OVSDB: &str = "unix:/host/var/run/openvswitch/db.sock";
/// The upstream markers' update interval.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(60);
/// The node's CNI config directory, as the DaemonSet mounts it.
pub const DEFAULT_CONF_DIR: &str = "/host/etc/cni/net.d";
/// Where the DaemonSet mounts the node's `/`.
pub const DEFAULT_HOST_ROOT: &str = "/host";
/// The runtimes' CRI sockets, relative to the node's `/`: containerd's, then CRI-O's.
pub const CRI_SOCKETS: [&str; 3] = [
    "run/containerd/containerd.sock",
    "var/run/crio/crio.sock",
    "run/crio/crio.sock",
];
/// Where `run` reads the node's name from (the downward API's spec.nodeName).
pub const NODE_NAME_ENV: &str = "NODE_NAME";

/// What to do, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Install(install::Options),
    Uninstall(uninstall::Options),
    Probe(probe::Options),
    Run(Box<RunOptions>),
    Gc(round::Options),
    Nmstate(nmstate::Options),
    NmstateReady(PathBuf),
    /// `help`, `--help`, `<command> --help`: the text to print.
    Help(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOptions {
    pub install: install::Options,
    pub mark: Option<MarkOptions>,
    pub gc: Option<GcLoop>,
    /// `--metrics-address`: where the garbage collection's metrics are served.
    pub metrics_address: Option<std::net::SocketAddr>,
}

/// `run --gc-interval`: a collection round this often.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GcLoop {
    pub interval: Duration,
    pub round: round::Options,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkOptions {
    pub mark: Mark,
    pub ovsdb: String,
    pub interval: Duration,
    pub node_name: String,
}

/// Installs CNI plugin binaries on a node and keeps them there.
#[derive(Debug, Parser)]
#[command(name = "cni-installer", disable_version_flag = true)]
struct Cli {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Debug, Subcommand)]
enum Sub {
    /// Copy the plugins into the CNI binary directory, atomically, and verify them
    Install(InstallArgs),
    /// Remove the plugins this tool installed (and only if unchanged); put back originals
    Uninstall(InstalledArgs),
    /// Exit 0 iff the plugins are installed and unchanged (readiness probe)
    Probe(InstalledArgs),
    /// Install, then stay up; with --mark, publish the node's bridges as resources; with
    /// --gc-interval, collect what lost DELs left
    Run(RunArgs),
    /// One garbage collection: run our plugins' GC for every network they serve, keeping the
    /// attachments of the runtime's live sandboxes (needs NODE_NAME)
    Gc(GcCommandArgs),
    /// kubernetes-nmstate's handler: apply the NodeNetworkConfigurationPolicies that match
    /// this node over netlink, report its NodeNetworkState (needs NODE_NAME)
    Nmstate(NmstateArgs),
    /// Exit 0 iff the handler applied this node's policies since it started (readiness probe)
    NmstateReady(NmstateReadyArgs),
}

#[derive(Debug, Args)]
struct NmstateArgs {
    /// The node's directory for the apply's journal, the lock and the ready mark
    #[arg(long, value_name = "DIR", default_value = nmstate::DEFAULT_STATE_DIR, value_parser = absolute_path)]
    state_dir: PathBuf,
    /// The probes that must pass after an apply, else it is rolled back: a comma-separated
    /// list of gateway, api-server, node-ready, or none
    #[arg(long, value_name = "LIST", default_value = "gateway,api-server,node-ready", value_parser = parse_probes)]
    probes: ProbeList,
    /// How long each probe may take to pass after an apply (500ms, 30s, 2m)
    #[arg(long, value_name = "DURATION", default_value = "120s", value_parser = parse_duration)]
    probe_timeout: Duration,
}

#[derive(Debug, Args)]
struct NmstateReadyArgs {
    /// The handler's --state-dir
    #[arg(long, value_name = "DIR", default_value = nmstate::DEFAULT_STATE_DIR, value_parser = absolute_path)]
    state_dir: PathBuf,
}

/// `--probes`, parsed: one value holding the whole list.
#[derive(Debug, Clone)]
struct ProbeList(Vec<Probe>);

fn parse_probes(s: &str) -> std::result::Result<ProbeList, String> {
    if s == "none" {
        return Ok(ProbeList(Vec::new()));
    }
    let mut probes: Vec<Probe> = s
        .split(',')
        .map(str::parse)
        .collect::<std::result::Result<_, _>>()?;
    probes.sort_unstable();
    probes.dedup();
    Ok(ProbeList(probes))
}

#[derive(Debug, Args)]
struct GcCommandArgs {
    /// The node's CNI binary directory, where this tool installed the plugins
    #[arg(long, value_name = "DIR", default_value = DEFAULT_TO, value_parser = non_empty_path)]
    to: PathBuf,
    #[command(flatten)]
    gc: GcArgs,
}

#[derive(Debug, Args)]
struct GcArgs {
    /// The node's CNI config directory, whose conflists naming our plugins are collected too
    #[arg(long, value_name = "DIR", default_value = DEFAULT_CONF_DIR, value_parser = non_empty_path)]
    cni_conf_dir: PathBuf,
    /// The container runtime's CRI socket [default: containerd's, else CRI-O's, below --host-root]
    #[arg(long, value_name = "PATH", value_parser = non_empty_path)]
    cri_socket: Option<PathBuf>,
    /// Where the node's / is mounted; the plugins' GC runs there, as the runtime runs them
    #[arg(long, value_name = "DIR", default_value = DEFAULT_HOST_ROOT, value_parser = non_empty_path)]
    host_root: PathBuf,
    /// How many of the node's conflists the runtime loads, in file-name order (containerd's
    /// max_conf_num); later ones (another tool's, such as podman's) are not collected
    #[arg(long, value_name = "N", default_value_t = 1)]
    node_networks: usize,
}

#[derive(Debug, Args)]
struct InstallArgs {
    /// Where the plugins are
    #[arg(long, value_name = "DIR", default_value = DEFAULT_FROM, value_parser = non_empty_path)]
    from: PathBuf,
    /// The node's CNI binary directory
    #[arg(long, value_name = "DIR", default_value = DEFAULT_TO, value_parser = non_empty_path)]
    to: PathBuf,
    /// Which plugins (default: every file in --from); NAME=SOURCE installs the file SOURCE
    /// under the name NAME, e.g. cnv-bridge=bridge
    #[arg(long, value_name = "LIST", value_parser = parse_plugins)]
    plugins: Option<PluginList>,
    /// Replace files this tool did not install, keeping them as .<name>.orig
    #[arg(long)]
    replace_foreign: bool,
    /// Allow network configs state directories below DIR too (besides /run/cni and
    /// /var/lib/cni); repeatable. Any --allow-* option writes the plugins' node-policy.json
    #[arg(long, value_name = "DIR", value_parser = absolute_path)]
    allow_state_dir: Vec<PathBuf>,
    /// Allow network configs this OVSDB endpoint too (unix:PATH or tcp:IP:PORT); repeatable
    #[arg(long, value_name = "ENDPOINT", value_parser = non_empty)]
    allow_ovsdb: Vec<String>,
    /// Allow network configs any unix socket below DIR as their OVSDB endpoint; repeatable
    #[arg(long, value_name = "DIR", value_parser = absolute_path)]
    allow_ovsdb_socket_dir: Vec<PathBuf>,
    /// Allow network configs configuration files in DIR too (besides ovs-cni's two);
    /// repeatable
    #[arg(long, value_name = "DIR", value_parser = absolute_path)]
    allow_config_dir: Vec<PathBuf>,
}

#[derive(Debug, Args)]
struct InstalledArgs {
    /// The node's CNI binary directory
    #[arg(long, value_name = "DIR", default_value = DEFAULT_TO, value_parser = non_empty_path)]
    to: PathBuf,
    /// Which plugins (default: everything installed); NAME=SOURCE stands for NAME, so the
    /// list given to install can be given here
    #[arg(long, value_name = "LIST", value_parser = parse_plugins)]
    plugins: Option<PluginList>,
}

#[derive(Debug, Args)]
struct RunArgs {
    #[command(flatten)]
    install: InstallArgs,
    /// Publish the node's linux-bridge or ovs bridges on its Node (needs NODE_NAME)
    #[arg(long, value_name = "KIND", value_enum)]
    mark: Option<Mark>,
    /// With --mark ovs: the OVSDB endpoint, unix:PATH or tcp:IP:PORT
    /// [default: unix:/host/var/run/openvswitch/db.sock]
    #[arg(long, value_name = "ENDPOINT", value_parser = non_empty)]
    ovsdb: Option<String>,
    /// With --mark: how often bridges are listed besides on link changes, a resync (500ms, 30s,
    /// 5m, 1h) [default: 60s]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    interval: Option<Duration>,
    /// Collect what lost DELs left this often (as `gc`), and when the runtime restarts
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    gc_interval: Option<Duration>,
    /// With --gc-interval: serve the collection's metrics at /metrics on ADDR (:PORT or
    /// IP:PORT)
    #[arg(long, value_name = "ADDR", value_parser = http_endpoint::parse_address)]
    metrics_address: Option<std::net::SocketAddr>,
    #[command(flatten)]
    gc: GcArgs,
}

/// `--plugins`, parsed: one value holding the whole list.
#[derive(Debug, Clone)]
struct PluginList(Vec<install::Plugin>);

/// Parses the arguments after the program name. `node_name` is the NODE_NAME variable.
pub fn parse(args: &[String], node_name: Option<&str>) -> Result<Command> {
    let argv = std::iter::once("cni-installer").chain(args.iter().map(String::as_str));
    let cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        // Help asked for: printed on stdout, exit 0.
        Err(e) if !e.use_stderr() => return Ok(Command::Help(e.render().to_string())),
        Err(e) => return Err(usage_error(&e, args.first().map(String::as_str))),
    };
    Ok(match cli.command {
        Sub::Install(a) => Command::Install(install_options(a)),
        Sub::Uninstall(a) => Command::Uninstall(uninstall::Options {
            to: a.to,
            plugins: names(a.plugins),
        }),
        Sub::Probe(a) => Command::Probe(probe::Options {
            to: a.to,
            plugins: names(a.plugins),
        }),
        Sub::Run(a) => {
            let mark = mark_options(&a, node_name)?;
            let gc = match a.gc_interval {
                Some(interval) => Some(GcLoop {
                    interval,
                    round: round::Options {
                        plugins: names(a.install.plugins.clone())
                            .map(|names| names.into_iter().collect()),
                        ..gc_options(&a.install.to, a.gc, node_name)?
                    },
                }),
                None => None,
            };
            if a.metrics_address.is_some() && gc.is_none() {
                return Err(Error::Usage(
                    "--metrics-address needs --gc-interval".to_string(),
                ));
            }
            Command::Run(Box::new(RunOptions {
                install: install_options(a.install),
                mark,
                gc,
                metrics_address: a.metrics_address,
            }))
        }
        Sub::Gc(a) => Command::Gc(gc_options(&a.to, a.gc, node_name)?),
        Sub::Nmstate(a) => {
            let node_name = node_name.filter(|n| !n.is_empty()).ok_or_else(|| {
                Error::msg(format!(
                    "nmstate needs the node's name in {NODE_NAME_ENV} (env valueFrom fieldRef spec.nodeName)"
                ))
            })?;
            Command::Nmstate(nmstate::Options {
                node_name: node_name.to_string(),
                state_dir: a.state_dir,
                probes: a.probes.0,
                probe_timeout: a.probe_timeout,
            })
        }
        Sub::NmstateReady(a) => Command::NmstateReady(a.state_dir),
    })
}

fn gc_options(to: &Path, a: GcArgs, node_name: Option<&str>) -> Result<round::Options> {
    let node_name = node_name.filter(|n| !n.is_empty()).ok_or_else(|| {
        Error::msg(format!(
            "garbage collection needs the node's name in {NODE_NAME_ENV} (env valueFrom fieldRef spec.nodeName)"
        ))
    })?;
    let cri_socket = a.cri_socket.unwrap_or_else(|| {
        let found = CRI_SOCKETS
            .iter()
            .map(|s| a.host_root.join(s))
            .find(|p| p.exists());
        found.unwrap_or_else(|| a.host_root.join(CRI_SOCKETS[0]))
    });
    Ok(round::Options {
        host_root: a.host_root,
        bin_dir: to.to_path_buf(),
        conf_dir: a.cni_conf_dir,
        cri_socket,
        node_networks: a.node_networks,
        node_name: node_name.to_string(),
        plugins: None,
    })
}

fn install_options(a: InstallArgs) -> install::Options {
    let policy = PolicyFile {
        state_dirs: a.allow_state_dir,
        ovsdb_endpoints: a.allow_ovsdb,
        ovsdb_socket_dirs: a.allow_ovsdb_socket_dir,
        config_dirs: a.allow_config_dir,
    };
    install::Options {
        from: a.from,
        to: a.to,
        plugins: a.plugins.map(|p| p.0),
        replace_foreign: a.replace_foreign,
        node_policy: (policy != PolicyFile::default()).then_some(policy),
    }
}

/// An absolute path without `.` or `..` components, as the plugins accept in the policy.
fn absolute_path(s: &str) -> std::result::Result<PathBuf, String> {
    node_policy::check_plain_path("the directory", s)
        .map(|()| PathBuf::from(s))
        .map_err(|e| e.msg())
}

/// The names in a `--plugins` list, for the commands that look at what is installed.
fn names(plugins: Option<PluginList>) -> Option<Vec<String>> {
    plugins.map(|list| list.0.into_iter().map(|p| p.name).collect())
}

fn mark_options(a: &RunArgs, node_name: Option<&str>) -> Result<Option<MarkOptions>> {
    let Some(mark) = a.mark else {
        if a.ovsdb.is_some() || a.interval.is_some() {
            return Err(Error::Usage(
                "--ovsdb and --interval need --mark".to_string(),
            ));
        }
        return Ok(None);
    };
    if mark != Mark::Ovs && a.ovsdb.is_some() {
        return Err(Error::Usage("--ovsdb is for --mark ovs".to_string()));
    }
    let node_name = node_name.filter(|n| !n.is_empty()).ok_or_else(|| {
        Error::msg(format!(
            "--mark needs the node's name in {NODE_NAME_ENV} (env valueFrom fieldRef spec.nodeName)"
        ))
    })?;
    Ok(Some(MarkOptions {
        mark,
        ovsdb: a.ovsdb.clone().unwrap_or_else(|| DEFAULT_OVSDB.to_string()),
        interval: a.interval.unwrap_or(DEFAULT_INTERVAL),
        node_name: node_name.to_string(),
    }))
}

/// clap's report of a mistake, on one line and in the words of this command line.
fn usage_error(e: &clap::Error, command: Option<&str>) -> Error {
    let context = |kind: ContextKind| match e.get(kind) {
        Some(ContextValue::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    // "--to <DIR>" -> "--to"
    let flag = || {
        context(ContextKind::InvalidArg)
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string()
    };
    let value = || context(ContextKind::InvalidValue);
    let what = match e.kind() {
        ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            "no command given".to_string()
        }
        ErrorKind::InvalidSubcommand => {
            format!(
                "unknown command {:?}",
                context(ContextKind::InvalidSubcommand)
            )
        }
        ErrorKind::UnknownArgument => {
            let arg = context(ContextKind::InvalidArg);
            match (arg.starts_with('-'), command) {
                (true, Some(command)) => {
                    let name = arg.split('=').next().unwrap_or_default();
                    format!("{command} does not take {name}")
                }
                _ => format!("unexpected argument {arg:?}"),
            }
        }
        ErrorKind::InvalidValue | ErrorKind::ValueValidation if value().is_empty() => {
            format!("{} needs a value", flag())
        }
        ErrorKind::InvalidValue => match e.get(ContextKind::ValidValue) {
            Some(ContextValue::Strings(valid)) => {
                format!("{} {:?}: expected {}", flag(), value(), valid.join(" or "))
            }
            _ => format!("{} {:?}: not a valid value", flag(), value()),
        },
        ErrorKind::ValueValidation => {
            let why = std::error::Error::source(e)
                .map(ToString::to_string)
                .unwrap_or_default();
            format!("{} {:?}: {why}", flag(), value())
        }
        ErrorKind::ArgumentConflict if context(ContextKind::PriorArg).is_empty() => {
            format!("{} given twice", flag())
        }
        ErrorKind::ArgumentConflict => {
            let (arg, prior) = (
                context(ContextKind::InvalidArg),
                context(ContextKind::PriorArg),
            );
            if arg == prior {
                format!("{} given twice", flag())
            } else {
                format!("{} cannot be used with {prior}", flag())
            }
        }
        ErrorKind::TooManyValues => format!("{} takes no value", flag()),
        // Anything else: clap's own first line.
        _ => e
            .render()
            .to_string()
            .lines()
            .next()
            .unwrap_or_default()
            .trim_start_matches("error: ")
            .to_string(),
    };
    Error::Usage(what)
}

fn non_empty(s: &str) -> std::result::Result<String, &'static str> {
    if s.is_empty() {
        Err("an empty value")
    } else {
        Ok(s.to_string())
    }
}

fn non_empty_path(s: &str) -> std::result::Result<PathBuf, &'static str> {
    non_empty(s).map(PathBuf::from)
}

/// `a,b,c=a`: each a name or `NAME=SOURCE`; no empty entries, no name twice (a source may
/// serve several names).
fn parse_plugins(s: &str) -> Result<PluginList> {
    let mut plugins: Vec<install::Plugin> = Vec::new();
    for entry in s.split(',').map(str::trim) {
        if entry.is_empty() {
            return Err(Error::msg("an empty name"));
        }
        let plugin = install::Plugin::parse(entry)?;
        if plugins.iter().any(|p| p.name == plugin.name) {
            return Err(Error::msg(format!("{} twice", plugin.name)));
        }
        plugins.push(plugin);
    }
    Ok(PluginList(plugins))
}

/// `500ms`, `30s`, `5m`, `1h`, or a number of seconds; more than zero.
pub fn parse_duration(s: &str) -> Result<Duration> {
    let bad = || Error::msg("expected e.g. 500ms, 30s, 5m, 1h");
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let d = match unit {
        "ms" => Duration::from_millis(n),
        "" | "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n.checked_mul(60).ok_or_else(bad)?),
        "h" => Duration::from_secs(n.checked_mul(3600).ok_or_else(bad)?),
        _ => return Err(bad()),
    };
    if d.is_zero() {
        return Err(bad());
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    fn plugins(names: &[&str]) -> Option<Vec<String>> {
        Some(names.iter().map(|s| s.to_string()).collect())
    }

    fn sources(names: &[&str]) -> Option<Vec<install::Plugin>> {
        Some(names.iter().map(|s| install::Plugin::named(s)).collect())
    }

    fn help_of(line: &str) -> String {
        match parse(&args(line), None) {
            Ok(Command::Help(text)) => text,
            other => panic!("{line}: not help: {other:?}"),
        }
    }

    #[test]
    fn the_handler_defaults_to_upstreams_probes_and_timeout() {
        assert_eq!(
            parse(&args("nmstate"), Some("node01")).expect("nmstate"),
            Command::Nmstate(nmstate::Options {
                node_name: "node01".to_string(),
                state_dir: nmstate::DEFAULT_STATE_DIR.into(),
                probes: nmstate::probes::ALL.to_vec(),
                probe_timeout: Duration::from_secs(120),
            })
        );
    }

    #[test]
    fn the_handlers_probes_and_timeout_are_settable() {
        let Command::Nmstate(opts) = parse(
            &args("nmstate --probes api-server,gateway --probe-timeout 20s"),
            Some("node01"),
        )
        .expect("nmstate") else {
            panic!("not nmstate");
        };
        assert_eq!(opts.probes, [Probe::Gateway, Probe::ApiServer]);
        assert_eq!(opts.probe_timeout, Duration::from_secs(20));
        let Command::Nmstate(opts) =
            parse(&args("nmstate --probes none"), Some("n")).expect("none")
        else {
            panic!("not nmstate");
        };
        assert!(opts.probes.is_empty());
    }

    #[test]
    fn the_handler_refuses_an_unknown_probe_and_a_missing_node_name() {
        let e = parse(&args("nmstate --probes dns"), Some("n")).expect_err("dns");
        assert!(e.to_string().contains("unknown probe \"dns\""), "{e}");
        let e = parse(&args("nmstate"), None).expect_err("no node");
        assert!(e.to_string().contains(NODE_NAME_ENV), "{e}");
    }

    #[test]
    fn the_commands_the_operator_renders_parse() {
        assert_eq!(
            parse(
                &args("install --from /plugins --to /host/opt/cni/bin --plugins bridge,tuning --replace-foreign"),
                None
            )
            .expect("install"),
            Command::Install(install::Options {
                from: "/plugins".into(),
                to: "/host/opt/cni/bin".into(),
                plugins: sources(&["bridge", "tuning"]),
                replace_foreign: true,
                node_policy: None,
            })
        );
        assert_eq!(
            parse(&args("uninstall --to=/host/opt/cni/bin"), None).expect("uninstall"),
            Command::Uninstall(uninstall::Options {
                to: "/host/opt/cni/bin".into(),
                plugins: None,
            })
        );
        assert_eq!(
            parse(&args("probe --to /x --plugins bridge,tuning"), None).expect("probe"),
            Command::Probe(probe::Options {
                to: "/x".into(),
                plugins: plugins(&["bridge", "tuning"]),
            })
        );
        let run = parse(
            &args("run --from /plugins --to /host/opt/cni/bin --plugins ovs --mark ovs --ovsdb unix:/host/var/run/openvswitch/db.sock --interval 30s"),
            Some("node-1"),
        )
        .expect("run");
        assert_eq!(
            run,
            Command::Run(Box::new(RunOptions {
                install: install::Options {
                    from: "/plugins".into(),
                    to: "/host/opt/cni/bin".into(),
                    plugins: sources(&["ovs"]),
                    replace_foreign: false,
                    node_policy: None,
                },
                mark: Some(MarkOptions {
                    mark: Mark::Ovs,
                    ovsdb: DEFAULT_OVSDB.to_string(),
                    interval: Duration::from_secs(30),
                    node_name: "node-1".to_string(),
                }),
                gc: None,
                metrics_address: None,
            }))
        );
    }

    #[test]
    fn flags_left_out_take_their_defaults() {
        let Command::Run(plain) = parse(&args("run"), None).expect("run without mark") else {
            panic!("not run");
        };
        assert_eq!(plain.mark, None);
        assert_eq!(plain.install.from, PathBuf::from(DEFAULT_FROM));
        assert_eq!(plain.install.to, PathBuf::from(DEFAULT_TO));
        assert_eq!(plain.install.plugins, None);
        let Command::Run(marking) =
            parse(&args("run --mark linux-bridge"), Some("n")).expect("run --mark")
        else {
            panic!("not run");
        };
        let mark = marking.mark.expect("mark options");
        assert_eq!(mark.interval, DEFAULT_INTERVAL);
        assert_eq!(mark.ovsdb, DEFAULT_OVSDB);
    }

    /// The names configs written for the cluster-network-addons-operator use: `cnv-bridge` and
    /// `cnv-tuning`, copies of `bridge` and `tuning`.
    #[test]
    fn a_plugin_can_be_installed_under_a_second_name() {
        let list = "bridge,tuning,cnv-bridge=bridge,cnv-tuning=tuning";
        let second = |name: &str, source: &str| install::Plugin {
            name: name.to_string(),
            source: source.to_string(),
        };
        let Command::Install(opts) = parse(
            &args(&format!("install --from /plugins --to /x --plugins {list}")),
            None,
        )
        .expect("install") else {
            panic!("not install");
        };
        assert_eq!(
            opts.plugins,
            Some(vec![
                install::Plugin::named("bridge"),
                install::Plugin::named("tuning"),
                second("cnv-bridge", "bridge"),
                second("cnv-tuning", "tuning"),
            ])
        );
        let names = plugins(&["bridge", "tuning", "cnv-bridge", "cnv-tuning"]);
        assert_eq!(
            parse(&args(&format!("probe --to /x --plugins={list}")), None).ok(),
            Some(Command::Probe(probe::Options {
                to: "/x".into(),
                plugins: names.clone(),
            }))
        );
        assert_eq!(
            parse(&args(&format!("uninstall --to /x --plugins {list}")), None).ok(),
            Some(Command::Uninstall(uninstall::Options {
                to: "/x".into(),
                plugins: names,
            }))
        );
        let Command::Run(run) = parse(&args(&format!("run --plugins {list}")), None).expect("run")
        else {
            panic!("not run");
        };
        assert_eq!(run.install.plugins.map(|p| p.len()), Some(4));
    }

    /// Each DaemonSet's agent collects for the plugins it installs, under every name it gives
    /// them; `gc` alone collects for everything the record names.
    #[test]
    fn run_collects_for_the_plugins_it_installs() {
        let line =
            "run --to /host/opt/cni/bin --plugins bridge,cnv-bridge=bridge --gc-interval 30s \
                    --cri-socket /host/run/containerd/containerd.sock --metrics-address :9091";
        let Command::Run(run) = parse(&args(line), Some("node01")).expect("run") else {
            panic!("not run");
        };
        let gc = run.gc.expect("--gc-interval");
        assert_eq!(gc.interval, Duration::from_secs(30));
        assert_eq!(
            gc.round.plugins,
            Some(["bridge", "cnv-bridge"].map(String::from).into())
        );
        assert_eq!(gc.round.node_name, "node01");
        assert_eq!(run.metrics_address, "0.0.0.0:9091".parse().ok());
        let Command::Gc(round) =
            parse(&args("gc --to /host/opt/cni/bin"), Some("node01")).expect("gc")
        else {
            panic!("not gc");
        };
        assert_eq!(round.plugins, None);
    }

    #[test]
    fn mistakes_are_named_on_one_line() {
        for (line, node, says) in [
            ("", None, "no command"),
            ("copy", None, "unknown command \"copy\""),
            ("probe --from /plugins", None, "probe does not take --from"),
            ("probe --from=/plugins", None, "probe does not take --from"),
            ("install --to", None, "--to needs a value"),
            ("install --to=", None, "--to needs a value"),
            ("install --to /a --to /b", None, "--to given twice"),
            ("install --plugins bridge,,tuning", None, "an empty name"),
            ("install --plugins bridge,bridge", None, "bridge twice"),
            ("install --plugins ../x", None, "invalid plugin name"),
            ("install --plugins x=../bridge", None, "invalid plugin name"),
            ("install --plugins cnv-bridge=", None, "invalid plugin name"),
            (
                "install --plugins cnv-bridge=bridge,cnv-bridge=tuning",
                None,
                "cnv-bridge twice",
            ),
            (
                "install --plugins bridge,bridge=bridge",
                None,
                "bridge twice",
            ),
            ("install --replace-foreign=yes", None, "takes no value"),
            ("install stray", None, "unexpected argument \"stray\""),
            (
                "run --mark bridge",
                Some("n"),
                "--mark \"bridge\": expected linux-bridge or ovs",
            ),
            ("run --mark linux-bridge", None, "NODE_NAME"),
            ("run --mark linux-bridge", Some(""), "NODE_NAME"),
            ("run --interval 5s", Some("n"), "need --mark"),
            (
                "run --metrics-address :9091",
                Some("n"),
                "needs --gc-interval",
            ),
            (
                "run --mark linux-bridge --ovsdb unix:/x",
                Some("n"),
                "--ovsdb is for --mark ovs",
            ),
            (
                "run --mark ovs --interval 0s",
                Some("n"),
                "--interval \"0s\"",
            ),
            (
                "run --mark ovs --ovsdb=",
                Some("n"),
                "--ovsdb needs a value",
            ),
        ] {
            let err = parse(&args(line), node).expect_err(line).report();
            assert!(err.contains(says), "{line}: {err}");
            assert!(!err.contains('\n'), "{line}: {err}");
        }
    }

    #[test]
    fn usage_mistakes_point_at_the_help() {
        let err = parse(&args("install --bogus"), None).expect_err("--bogus");
        assert_eq!(
            err.report(),
            "install does not take --bogus (cni-installer help for usage)"
        );
    }

    #[test]
    fn help_is_asked_for_in_every_usual_way() {
        for line in [
            "help",
            "--help",
            "-h",
            "help install",
            "install --help",
            "run -h",
        ] {
            help_of(line);
        }
    }

    #[test]
    fn help_lists_every_command_and_flag_with_its_default() {
        let top = help_of("help");
        for command in ["install", "uninstall", "probe", "run"] {
            assert!(top.contains(command), "{top}");
        }
        let run = help_of("run --help");
        for flag in [
            "--from",
            "--to",
            "--plugins",
            "--replace-foreign",
            "--mark",
            "--ovsdb",
            "--interval",
            "NAME=SOURCE",
            DEFAULT_FROM,
            DEFAULT_TO,
            DEFAULT_OVSDB,
            "linux-bridge",
            "[default: 60s]",
        ] {
            assert!(run.contains(flag), "{flag}: {run}");
        }
        assert_eq!(
            DEFAULT_INTERVAL,
            parse_duration("60s").expect("the documented default")
        );
        let probe = help_of("probe --help");
        assert!(!probe.contains("--from"), "{probe}");
        assert!(probe.contains("--plugins"), "{probe}");
    }

    #[test]
    fn durations() {
        assert_eq!(
            parse_duration("500ms").ok(),
            Some(Duration::from_millis(500))
        );
        assert_eq!(parse_duration("30s").ok(), Some(Duration::from_secs(30)));
        assert_eq!(parse_duration("30").ok(), Some(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m").ok(), Some(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h").ok(), Some(Duration::from_secs(3600)));
        for bad in ["", "s", "1.5s", "-1s", "10d", "0", "0ms"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn allow_options_become_the_node_policy() {
        let line = "install --allow-state-dir /data/cni --allow-state-dir /srv/cni \
                    --allow-ovsdb tcp:127.0.0.1:6640 --allow-ovsdb-socket-dir /var/run/ovs2 \
                    --allow-config-dir /etc/ovs";
        let Command::Install(opts) = parse(&args(line), None).expect("install") else {
            panic!("not an install");
        };
        assert_eq!(
            opts.node_policy,
            Some(PolicyFile {
                state_dirs: vec!["/data/cni".into(), "/srv/cni".into()],
                ovsdb_endpoints: vec!["tcp:127.0.0.1:6640".into()],
                ovsdb_socket_dirs: vec!["/var/run/ovs2".into()],
                config_dirs: vec!["/etc/ovs".into()],
            })
        );
    }

    #[test]
    fn an_allowed_directory_must_be_absolute_and_plain() {
        for dir in ["relative", "/a/../etc", "/a/./b"] {
            let line = format!("install --allow-state-dir {dir}");
            assert!(parse(&args(&line), None).is_err(), "{dir}");
        }
    }
}
