//! The command line. The operator renders it into DaemonSets, so names and flags are stable:
//!
//! ```text
//! cni-installer install   --from DIR --to DIR [--plugins a,b,c=a] [--replace-foreign]
//! cni-installer uninstall --to DIR [--plugins a,b,c=a]
//! cni-installer probe     --to DIR [--plugins a,b,c=a]
//! cni-installer run       --from DIR --to DIR [--plugins a,b,c=a] [--replace-foreign]
//!                         [--mark linux-bridge|ovs] [--ovsdb ENDPOINT] [--interval 60s]
//! ```
//!
//! Flags take their value as the next argument or after `=`. In `--plugins`, `NAME=SOURCE`
//! installs the source file `SOURCE` under the name `NAME` (`cnv-bridge=bridge`); uninstall and
//! probe take the same list and use the names.

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::install;
use crate::marker::Mark;
use crate::probe;
use crate::uninstall;

pub const DEFAULT_FROM: &str = "/plugins";
pub const DEFAULT_TO: &str = "/host/opt/cni/bin";
pub const DEFAULT_OVSDB: &str = "unix:/host/var/run/openvswitch/db.sock";
/// The upstream markers' update interval.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(60);
/// Where `run` reads the node's name from (the downward API's spec.nodeName).
pub const NODE_NAME_ENV: &str = "NODE_NAME";

pub const USAGE: &str = "\
usage: cni-installer <command> [flags]

commands:
  install    copy the plugins into the CNI binary directory, atomically, and verify them
  uninstall  remove the plugins this tool installed (and only if unchanged); put back originals
  probe      exit 0 iff the plugins are installed and unchanged (readiness probe)
  run        install, then stay up; with --mark, publish the node's bridges as resources

flags:
  --from DIR           where the plugins are (install, run; default /plugins)
  --to DIR             the node's CNI binary directory (default /host/opt/cni/bin)
  --plugins a,b        which plugins (default: install/run every file in --from;
                       uninstall/probe everything installed); NAME=SOURCE installs
                       the file SOURCE under the name NAME, e.g. cnv-bridge=bridge
  --replace-foreign    replace files this tool did not install, keeping them as .<name>.orig
  --mark KIND          run: publish linux-bridge or ovs bridges on the Node (needs NODE_NAME)
  --ovsdb ENDPOINT     run --mark ovs: OVSDB (default unix:/host/var/run/openvswitch/db.sock)
  --interval DURATION  run --mark: how often bridges are listed (default 60s; 500ms, 30s, 5m, 1h)
";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Install(install::Options),
    Uninstall(uninstall::Options),
    Probe(probe::Options),
    Run(RunOptions),
    Help,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOptions {
    pub install: install::Options,
    pub mark: Option<MarkOptions>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkOptions {
    pub mark: Mark,
    pub ovsdb: String,
    pub interval: Duration,
    pub node_name: String,
}

/// Every flag's value as given, before it is checked against the command.
#[derive(Default)]
struct Flags {
    from: Option<String>,
    to: Option<String>,
    plugins: Option<String>,
    replace_foreign: bool,
    mark: Option<String>,
    ovsdb: Option<String>,
    interval: Option<String>,
}

/// Parses the arguments after the program name. `node_name` is the NODE_NAME variable.
pub fn parse(args: &[String], node_name: Option<&str>) -> Result<Command> {
    let Some((command, rest)) = args.split_first() else {
        return Err(usage_error("no command given"));
    };
    let allowed: &[&str] = match command.as_str() {
        "install" => &["--from", "--to", "--plugins", "--replace-foreign"],
        "uninstall" | "probe" => &["--to", "--plugins"],
        "run" => &[
            "--from",
            "--to",
            "--plugins",
            "--replace-foreign",
            "--mark",
            "--ovsdb",
            "--interval",
        ],
        "help" | "--help" | "-h" => return Ok(Command::Help),
        other => return Err(usage_error(&format!("unknown command {other:?}"))),
    };
    if rest.iter().any(|a| a == "--help" || a == "-h") {
        return Ok(Command::Help);
    }
    let flags = parse_flags(command, rest, allowed)?;
    let to = PathBuf::from(flags.to.as_deref().unwrap_or(DEFAULT_TO));
    let plugins = flags.plugins.as_deref().map(parse_plugins).transpose()?;
    let names: Option<Vec<String>> = plugins
        .as_ref()
        .map(|list| list.iter().map(|p| p.name.clone()).collect());
    let install = || install::Options {
        from: PathBuf::from(flags.from.as_deref().unwrap_or(DEFAULT_FROM)),
        to: to.clone(),
        plugins: plugins.clone(),
        replace_foreign: flags.replace_foreign,
    };
    Ok(match command.as_str() {
        "install" => Command::Install(install()),
        "uninstall" => Command::Uninstall(uninstall::Options {
            to: to.clone(),
            plugins: names.clone(),
        }),
        "probe" => Command::Probe(probe::Options {
            to: to.clone(),
            plugins: names.clone(),
        }),
        _ => Command::Run(RunOptions {
            install: install(),
            mark: mark_options(&flags, node_name)?,
        }),
    })
}

fn parse_flags(command: &str, args: &[String], allowed: &[&str]) -> Result<Flags> {
    let mut flags = Flags::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) if name.starts_with("--") => (name, Some(value.to_string())),
            _ => (arg.as_str(), None),
        };
        if !allowed.contains(&name) {
            return Err(usage_error(&if name.starts_with('-') {
                format!("{command} does not take {name}")
            } else {
                format!("unexpected argument {name:?}")
            }));
        }
        if name == "--replace-foreign" {
            if inline.is_some() {
                return Err(usage_error("--replace-foreign takes no value"));
            }
            flags.replace_foreign = true;
            continue;
        }
        let value = match inline {
            Some(v) => v,
            None => args
                .next()
                .cloned()
                .ok_or_else(|| usage_error(&format!("{name} needs a value")))?,
        };
        if value.is_empty() {
            return Err(usage_error(&format!("{name} needs a value")));
        }
        let slot = match name {
            "--from" => &mut flags.from,
            "--to" => &mut flags.to,
            "--plugins" => &mut flags.plugins,
            "--mark" => &mut flags.mark,
            "--ovsdb" => &mut flags.ovsdb,
            _ => &mut flags.interval,
        };
        if slot.replace(value).is_some() {
            return Err(usage_error(&format!("{name} given twice")));
        }
    }
    Ok(flags)
}

fn mark_options(flags: &Flags, node_name: Option<&str>) -> Result<Option<MarkOptions>> {
    let Some(mark) = flags.mark.as_deref() else {
        if flags.ovsdb.is_some() || flags.interval.is_some() {
            return Err(usage_error("--ovsdb and --interval need --mark"));
        }
        return Ok(None);
    };
    let mark = Mark::parse(mark).ok_or_else(|| {
        usage_error(&format!(
            "--mark {mark:?}: expected {} or {}",
            Mark::LinuxBridge.as_str(),
            Mark::Ovs.as_str()
        ))
    })?;
    if mark != Mark::Ovs && flags.ovsdb.is_some() {
        return Err(usage_error("--ovsdb is for --mark ovs"));
    }
    let interval = match flags.interval.as_deref() {
        Some(s) => parse_duration(s)?,
        None => DEFAULT_INTERVAL,
    };
    let node_name = node_name.filter(|n| !n.is_empty()).ok_or_else(|| {
        Error::new(format!(
            "--mark needs the node's name in {NODE_NAME_ENV} (env valueFrom fieldRef spec.nodeName)"
        ))
    })?;
    Ok(Some(MarkOptions {
        mark,
        ovsdb: flags
            .ovsdb
            .clone()
            .unwrap_or_else(|| DEFAULT_OVSDB.to_string()),
        interval,
        node_name: node_name.to_string(),
    }))
}

/// `a,b,c=a`: each a name or `NAME=SOURCE`; no empty entries, no name twice (a source may
/// serve several names).
fn parse_plugins(s: &str) -> Result<Vec<install::Plugin>> {
    let mut plugins: Vec<install::Plugin> = Vec::new();
    for entry in s.split(',').map(str::trim) {
        if entry.is_empty() {
            return Err(usage_error(&format!("--plugins {s:?}: an empty name")));
        }
        let plugin = install::Plugin::parse(entry)?;
        if plugins.iter().any(|p| p.name == plugin.name) {
            return Err(usage_error(&format!(
                "--plugins {s:?}: {} twice",
                plugin.name
            )));
        }
        plugins.push(plugin);
    }
    Ok(plugins)
}

/// `500ms`, `30s`, `5m`, `1h`, or a number of seconds; more than zero.
pub fn parse_duration(s: &str) -> Result<Duration> {
    let bad = || {
        usage_error(&format!(
            "--interval {s:?}: expected e.g. 500ms, 30s, 5m, 1h"
        ))
    };
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

fn usage_error(what: &str) -> Error {
    Error::new(format!("{what} (cni-installer help for usage)"))
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
            Command::Run(RunOptions {
                install: install::Options {
                    from: "/plugins".into(),
                    to: "/host/opt/cni/bin".into(),
                    plugins: sources(&["ovs"]),
                    replace_foreign: false,
                },
                mark: Some(MarkOptions {
                    mark: Mark::Ovs,
                    ovsdb: DEFAULT_OVSDB.to_string(),
                    interval: Duration::from_secs(30),
                    node_name: "node-1".to_string(),
                }),
            })
        );
        let Command::Run(plain) = parse(&args("run"), None).expect("run without mark") else {
            panic!("not run");
        };
        assert_eq!(plain.mark, None);
        assert_eq!(plain.install.from, PathBuf::from(DEFAULT_FROM));
        assert_eq!(plain.install.to, PathBuf::from(DEFAULT_TO));
        assert_eq!(
            parse(&args("install --help"), None).ok(),
            Some(Command::Help)
        );
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

    #[test]
    fn mistakes_are_named() {
        for (line, node, says) in [
            ("", None, "no command"),
            ("copy", None, "unknown command"),
            ("probe --from /plugins", None, "probe does not take --from"),
            ("install --to", None, "--to needs a value"),
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
            ("install stray", None, "unexpected argument"),
            (
                "run --mark bridge",
                Some("n"),
                "expected linux-bridge or ovs",
            ),
            ("run --mark linux-bridge", None, "NODE_NAME"),
            ("run --mark linux-bridge", Some(""), "NODE_NAME"),
            ("run --interval 5s", Some("n"), "need --mark"),
            (
                "run --mark linux-bridge --ovsdb unix:/x",
                Some("n"),
                "--ovsdb is for --mark ovs",
            ),
            ("run --mark ovs --interval 0s", Some("n"), "--interval"),
        ] {
            let err = parse(&args(line), node).expect_err(line);
            assert!(err.msg().contains(says), "{line}: {err}");
        }
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
}
