//! The command line. The operator renders it into DaemonSets, so names and flags are stable:
//!
//! ```text
//! cni-installer install   --from DIR --to DIR [--plugins a,b] [--replace-foreign]
//! cni-installer uninstall --to DIR [--plugins a,b]
//! cni-installer probe     --to DIR [--plugins a,b]
//! ```
//!
//! Flags take their value as the next argument or after `=`.

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::install;
use crate::probe;
use crate::uninstall;

pub const DEFAULT_FROM: &str = "/plugins";
pub const DEFAULT_TO: &str = "/host/opt/cni/bin";
pub const USAGE: &str = "\
usage: cni-installer <command> [flags]

commands:
  install    copy the plugins into the CNI binary directory, atomically, and verify them
  uninstall  remove the plugins this tool installed (and only if unchanged); put back originals
  probe      exit 0 iff the plugins are installed and unchanged (readiness probe)

flags:
  --from DIR           where the plugins are (install; default /plugins)
  --to DIR             the node's CNI binary directory (default /host/opt/cni/bin)
  --plugins a,b        which plugins (default: install every file in --from;
                       uninstall/probe everything installed)
  --replace-foreign    replace files this tool did not install, keeping them as .<name>.orig
";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Install(install::Options),
    Uninstall(uninstall::Options),
    Probe(probe::Options),
    Help,
}

/// Every flag's value as given, before it is checked against the command.
#[derive(Default)]
struct Flags {
    from: Option<String>,
    to: Option<String>,
    plugins: Option<String>,
    replace_foreign: bool,
}

/// Parses the arguments after the program name.
pub fn parse(args: &[String]) -> Result<Command> {
    let Some((command, rest)) = args.split_first() else {
        return Err(usage_error("no command given"));
    };
    let allowed: &[&str] = match command.as_str() {
        "install" => &["--from", "--to", "--plugins", "--replace-foreign"],
        "uninstall" | "probe" => &["--to", "--plugins"],
        "help" | "--help" | "-h" => return Ok(Command::Help),
        other => return Err(usage_error(&format!("unknown command {other:?}"))),
    };
    if rest.iter().any(|a| a == "--help" || a == "-h") {
        return Ok(Command::Help);
    }
    let flags = parse_flags(command, rest, allowed)?;
    let to = PathBuf::from(flags.to.as_deref().unwrap_or(DEFAULT_TO));
    let plugins = flags.plugins.as_deref().map(parse_plugins).transpose()?;
    Ok(match command.as_str() {
        "install" => Command::Install(install::Options {
            from: PathBuf::from(flags.from.as_deref().unwrap_or(DEFAULT_FROM)),
            to,
            plugins,
            replace_foreign: flags.replace_foreign,
        }),
        "uninstall" => Command::Uninstall(uninstall::Options {
            to: to.clone(),
            plugins: plugins.clone(),
        }),
        _ => Command::Probe(probe::Options { to, plugins }),
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
            _ => &mut flags.plugins,
        };
        if slot.replace(value).is_some() {
            return Err(usage_error(&format!("{name} given twice")));
        }
    }
    Ok(flags)
}

/// `a,b,c`: no empty names, no repeats.
fn parse_plugins(s: &str) -> Result<Vec<String>> {
    let mut names: Vec<String> = Vec::new();
    for name in s.split(',').map(str::trim) {
        if name.is_empty() {
            return Err(usage_error(&format!("--plugins {s:?}: an empty name")));
        }
        install::check_name(name)?;
        if names.iter().any(|n| n == name) {
            return Err(usage_error(&format!("--plugins {s:?}: {name} twice")));
        }
        names.push(name.to_string());
    }
    Ok(names)
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

    #[test]
    fn the_commands_the_operator_renders_parse() {
        assert_eq!(
            parse(&args(
                "install --from /plugins --to /host/opt/cni/bin --plugins bridge,tuning --replace-foreign"
            ))
            .expect("install"),
            Command::Install(install::Options {
                from: "/plugins".into(),
                to: "/host/opt/cni/bin".into(),
                plugins: plugins(&["bridge", "tuning"]),
                replace_foreign: true,
            })
        );
        assert_eq!(
            parse(&args("uninstall --to=/host/opt/cni/bin")).expect("uninstall"),
            Command::Uninstall(uninstall::Options {
                to: "/host/opt/cni/bin".into(),
                plugins: None,
            })
        );
        assert_eq!(
            parse(&args("probe --to /x --plugins bridge,tuning")).expect("probe"),
            Command::Probe(probe::Options {
                to: "/x".into(),
                plugins: plugins(&["bridge", "tuning"]),
            })
        );
        assert_eq!(parse(&args("install --help")).ok(), Some(Command::Help));
    }

    #[test]
    fn mistakes_are_named() {
        for (line, says) in [
            ("", "no command"),
            ("copy", "unknown command"),
            ("probe --from /plugins", "probe does not take --from"),
            ("install --to", "--to needs a value"),
            ("install --to /a --to /b", "--to given twice"),
            ("install --plugins bridge,,tuning", "an empty name"),
            ("install --plugins bridge,bridge", "bridge twice"),
            ("install --plugins ../x", "invalid plugin name"),
            ("install --replace-foreign=yes", "takes no value"),
            ("install stray", "unexpected argument"),
        ] {
            let err = parse(&args(line)).expect_err(line);
            assert!(err.msg().contains(says), "{line}: {err}");
        }
    }
}
