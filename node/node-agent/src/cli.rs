//! The command line. The operator renders it into DaemonSets, so names and flags are stable:
//!
//! ```text
//! node-agent install   --from DIR --to DIR [--plugins a,b,c=a] [--replace-foreign]
//! node-agent uninstall --to DIR [--plugins a,b,c=a]
//! node-agent probe     --to DIR [--plugins a,b,c=a]
//! node-agent run       --from DIR --to DIR [--plugins a,b,c=a] [--replace-foreign]
//!                      [--mark linux-bridge|ovs] [--ovsdb ENDPOINT] [--interval 60s]
//! node-agent nmstate   [--state-dir DIR] [--probes gateway,api-server,node-ready|none]
//!                      [--probe-timeout 120s]
//! node-agent nmstate-ready [--state-dir DIR]
//! ```
//!
//! Flags take their value as the next argument or after `=`. In `--plugins`, `NAME=SOURCE`
//! installs the source file `SOURCE` under the name `NAME` (`cnv-bridge=bridge`); uninstall and
//! probe take the same list and use the names. Mistakes are reported on one line, like every
//! other error, since the DaemonSet's log is where they are read.
//!
//! Here are the clap definitions and [`parse`]; `options` makes each command's options from its
//! flags, `values` checks the flags' values, `usage_error` words clap's reports of a mistake.

mod defaults;
mod options;
#[cfg(test)]
mod testing;
mod usage_error;
mod values;

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use nmstate_handler::{self as nmstate, probes::Probe};

use crate::error::{Error, Result};
use crate::gc::round;
use crate::install;
use crate::marker::Mark;
use crate::probe;
use crate::uninstall;

pub use defaults::{
    CRI_SOCKETS, DEFAULT_CONF_DIR, DEFAULT_FROM, DEFAULT_HOST_ROOT, DEFAULT_INTERVAL,
    DEFAULT_OVSDB, DEFAULT_TO, NODE_NAME_ENV,
};
pub use options::{GcLoop, MarkOptions, RunOptions};
pub use values::{parse_duration, DurationError};

use options::{gc_options, install_options, names, run_options};
use usage_error::usage_error;
use values::{absolute_path, non_empty, non_empty_path, parse_plugins, PluginList};

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

/// The node agent: installs the CNI plugins and keeps them there, publishes the node's bridges,
/// collects what lost DELs left, runs kubernetes-nmstate's handler.
#[derive(Debug, Parser)]
#[command(name = "node-agent", disable_version_flag = true)]
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

fn parse_probes(s: &str) -> std::result::Result<ProbeList, <Probe as FromStr>::Err> {
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
    /// IP:PORT), over HTTPS with a self-signed certificate, to bearer tokens allowed to `get`
    /// the non-resource URL /metrics
    #[arg(long, value_name = "ADDR", value_parser = http_endpoint::parse_address)]
    metrics_address: Option<std::net::SocketAddr>,
    #[command(flatten)]
    gc: GcArgs,
}

/// Parses the arguments after the program name. `node_name` is the NODE_NAME variable.
pub fn parse(args: &[String], node_name: Option<&str>) -> Result<Command> {
    let argv = std::iter::once("node-agent").chain(args.iter().map(String::as_str));
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
        Sub::Run(a) => Command::Run(Box::new(run_options(a, node_name)?)),
        Sub::Gc(a) => Command::Gc(gc_options(&a.to, a.gc, node_name)?),
        Sub::Nmstate(a) => Command::Nmstate(nmstate_options(a, node_name)?),
        Sub::NmstateReady(a) => Command::NmstateReady(a.state_dir),
    })
}

fn nmstate_options(a: NmstateArgs, node_name: Option<&str>) -> Result<nmstate::Options> {
    let node_name = node_name.filter(|n| !n.is_empty()).ok_or_else(|| {
        Error::msg(format!(
            "nmstate needs the node's name in {NODE_NAME_ENV} (env valueFrom fieldRef spec.nodeName)"
        ))
    })?;
    Ok(nmstate::Options {
        node_name: node_name.to_string(),
        state_dir: a.state_dir,
        probes: a.probes.0,
        probe_timeout: a.probe_timeout,
    })
}

#[cfg(test)]
mod tests {
    use super::testing::{args, plugins, sources};
    use super::*;

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
        // Whatever name the binary was run by (the image keeps /cni-installer too).
        assert!(top.contains("Usage: node-agent <COMMAND>"), "{top}");
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
}
