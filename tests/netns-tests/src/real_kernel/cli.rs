//! `real-kernel run`'s command line: the options, the command, and what `--env` sets.

use std::ffi::OsString;
use std::path::PathBuf;

use super::{Error, Result};

/// Options of `real-kernel run`, and the command.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct RunOptions {
    /// Guest memory.
    #[arg(long, value_name = "SIZE", default_value = "1G")]
    pub memory: String,
    /// Guest CPUs.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub cpus: u32,
    /// Kill the guest after SECS.
    #[arg(long = "timeout", value_name = "SECS", default_value_t = 900)]
    pub timeout_secs: u64,
    /// Set NAME in the guest (to the host's value if no VALUE); repeatable.
    #[arg(long = "env", value_name = "NAME[=VALUE]")]
    pub env: Vec<String>,
    /// Share host directory DIR read-write (writes reach the host); repeatable.
    #[arg(long = "rwdir", value_name = "DIR")]
    pub rwdirs: Vec<PathBuf>,
    /// Share host directory DIR read-only, also where the guest mounts a tmpfs of its own (below
    /// /var/cache, say); repeatable.
    #[arg(long = "rodir", value_name = "DIR")]
    pub rodirs: Vec<PathBuf>,
    /// Also stream the kernel console.
    #[arg(short, long)]
    pub verbose: bool,
    /// The command and its arguments, as they are (no shell: use `sh -c '...'` for a shell line).
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, clap::Parser)]
#[command(name = "run", no_binary_name = true)]
struct RunCli {
    #[command(flatten)]
    options: RunOptions,
}

impl RunOptions {
    /// Parses `real-kernel run` arguments (`[OPTIONS] -- COMMAND [ARG...]`).
    ///
    /// # Errors
    /// Unknown options, a missing value, or no command.
    pub fn parse<I, T>(args: I) -> Result<RunOptions>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        use clap::Parser;
        RunCli::try_parse_from(args)
            .map(|cli| cli.options)
            .map_err(|e| Error::msg(format!("run: {}", e.render().to_string().trim())))
    }
}

/// `--env NAME[=VALUE]` as (NAME, VALUE), VALUE taken from `host` when absent.
///
/// # Errors
/// If NAME is not a variable name, or has no VALUE and is not set on the host.
pub fn resolve_env(spec: &str, host: impl Fn(&str) -> Option<String>) -> Result<(String, String)> {
    let (name, value) = match spec.split_once('=') {
        Some((name, value)) => (name, Some(value.to_owned())),
        None => (spec, None),
    };
    let valid = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(Error::msg(format!(
            "run: --env: '{name}' is not a variable name"
        )));
    }
    let value = match value {
        Some(v) => v,
        None => host(name).ok_or_else(|| {
            Error::msg(format!("run: --env {name}: {name} is not set on the host"))
        })?,
    };
    Ok((name.to_owned(), value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(args: &[&str]) -> RunOptions {
        RunOptions::parse(args).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn run_options_default_to_1g_2_cpus_and_900_s() {
        let o = options(&["--", "true"]);
        assert_eq!(o.memory, "1G");
        assert_eq!(o.cpus, 2);
        assert_eq!(o.timeout_secs, 900);
        assert!(!o.verbose);
        assert_eq!(o.command, vec!["true"]);
    }

    #[test]
    fn run_options_are_parsed_and_repeatable() {
        let o = options(&[
            "--memory",
            "2G",
            "--cpus",
            "1",
            "--timeout",
            "30",
            "--env",
            "A",
            "--env",
            "B=x y",
            "--rwdir",
            "/srv",
            "--rodir",
            "/var/cache/x",
            "-v",
            "--",
            "sh",
            "-c",
            "echo --memory",
        ]);
        assert_eq!(o.memory, "2G");
        assert_eq!(o.cpus, 1);
        assert_eq!(o.timeout_secs, 30);
        assert_eq!(o.env, vec!["A", "B=x y"]);
        assert_eq!(o.rwdirs, vec![PathBuf::from("/srv")]);
        assert_eq!(o.rodirs, vec![PathBuf::from("/var/cache/x")]);
        assert!(o.verbose);
        assert_eq!(o.command, vec!["sh", "-c", "echo --memory"]);
    }

    #[test]
    fn run_needs_a_command_after_the_double_dash() {
        assert!(RunOptions::parse(["--memory", "1G"]).is_err());
        assert!(RunOptions::parse(["--"]).is_err());
        assert!(RunOptions::parse(["true"]).is_err());
    }

    #[test]
    fn run_rejects_unknown_options() {
        let err = RunOptions::parse(["--kvm", "--", "true"])
            .err()
            .map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("--kvm")));
    }

    #[test]
    fn env_takes_the_host_value_when_none_is_given() {
        let host = |n: &str| (n == "HOME").then(|| "/root".to_owned());
        let resolved = resolve_env("HOME", host).ok();
        assert_eq!(resolved, Some(("HOME".to_owned(), "/root".to_owned())));
        let given = resolve_env("X=a=b", host).ok();
        assert_eq!(given, Some(("X".to_owned(), "a=b".to_owned())));
    }

    #[test]
    fn env_rejects_bad_names_and_unset_variables() {
        let host = |_: &str| None;
        assert!(resolve_env("1X=a", host).is_err());
        assert!(resolve_env("A-B=a", host).is_err());
        assert!(resolve_env("=a", host).is_err());
        assert!(resolve_env("UNSET", host).is_err());
    }
}
