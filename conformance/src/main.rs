//! cni-conformance: a black-box conformance suite for CNI plugin binaries.
//!
//! It calls a plugin exactly as a runtime does (CNI_* environment, JSON on
//! stdin, stdout and exit status read back), always inside throwaway network
//! namespaces it creates and deletes itself, and prints one PASS/FAIL/SKIP
//! line per check followed by the totals. See README.md.

mod checks;
mod invoke;
mod report;
mod sandbox;
mod validate;

use checks::{Options, Suite};
use serde_json::Value;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const USAGE: &str = "usage: cni-conformance --plugin-dir DIR --plugin NAME --config FILE [--chained] [--ifname NAME]
                       [--filter SUBSTR] [--ipam-dir DIR]... [--timeout SECS]
                       [--host-setup CMD] [--host-teardown CMD] [--verbose]

  --plugin-dir DIR   directory holding the plugin binary (first entry of CNI_PATH)
  --plugin NAME      binary name; also set as the config's `type`
  --config FILE      one plugin configuration object (JSON); cniVersion is set per check
  --chained          the plugin is a meta plugin: the suite creates CNI_IFNAME itself
                     and passes a prevResult
  --ifname NAME      CNI_IFNAME (default net1)
  --filter SUBSTR    only run checks whose name contains SUBSTR
  --ipam-dir DIR     further CNI_PATH entries for delegated IPAM (default /usr/lib/cni)
  --timeout SECS     per-invocation time limit (default 30)
  --host-setup CMD   run `sh -c CMD` in each check's host namespace once it and the check's
                     temp dir exist, with CNIC_HOST_NS and CNIC_TMP set; failing fails the check
  --host-teardown CMD  run the same way when the check ends; failing prints a # line
  --verbose          print every invocation (env, stdin, exit, stdout, stderr) to stderr";

fn parse_args(args: Vec<String>) -> Result<Options, String> {
    let mut plugin_dir = None;
    let mut plugin = None;
    let mut config_file = None;
    let mut chained = false;
    let mut ifname = "net1".to_string();
    let mut filter = None;
    let mut ipam_dirs = Vec::new();
    let mut timeout = 30u64;
    let mut verbose = false;
    let mut host_setup = None;
    let mut host_teardown = None;
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => it.next().ok_or_else(|| format!("{name} needs a value")),
            }
        };
        match flag.as_str() {
            "--plugin-dir" => plugin_dir = Some(PathBuf::from(value("--plugin-dir")?)),
            "--plugin" => plugin = Some(value("--plugin")?),
            "--config" => config_file = Some(PathBuf::from(value("--config")?)),
            "--chained" => chained = true,
            "--ifname" => ifname = value("--ifname")?,
            "--filter" => filter = Some(value("--filter")?),
            "--ipam-dir" => ipam_dirs.push(PathBuf::from(value("--ipam-dir")?)),
            "--timeout" => {
                timeout = value("--timeout")?
                    .parse()
                    .map_err(|_| "--timeout needs a number of seconds".to_string())?
            }
            "--host-setup" => host_setup = Some(value("--host-setup")?),
            "--host-teardown" => host_teardown = Some(value("--host-teardown")?),
            "--verbose" | "-v" => verbose = true,
            "--help" | "-h" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let plugin_dir = plugin_dir.ok_or("--plugin-dir is required")?;
    let plugin = plugin.ok_or("--plugin is required")?;
    let config_file = config_file.ok_or("--config is required")?;
    if plugin.is_empty() || plugin.contains('/') {
        return Err("--plugin must be a binary name without '/'".into());
    }
    if ifname.is_empty()
        || ifname.len() > 15
        || ifname.contains(['/', ':'])
        || ifname.contains(char::is_whitespace)
    {
        return Err(format!("--ifname {ifname:?} is not a valid interface name"));
    }
    if ipam_dirs.is_empty() {
        ipam_dirs.push(PathBuf::from("/usr/lib/cni"));
    }
    let text = std::fs::read_to_string(&config_file)
        .map_err(|e| format!("cannot read {}: {e}", config_file.display()))?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not JSON: {e}", config_file.display()))?;
    let Value::Object(mut config) = value else {
        return Err(format!(
            "{} must hold one JSON object (a plugin configuration)",
            config_file.display()
        ));
    };
    if config.contains_key("plugins") {
        return Err("the config is a conflist; pass one plugin configuration object".into());
    }
    if config.remove("prevResult").is_some() {
        eprintln!("note: ignoring the config's prevResult; the suite supplies prevResult itself");
    }
    Ok(Options {
        plugin_dir,
        plugin,
        config,
        chained,
        ifname,
        ipam_dirs,
        filter,
        timeout: Duration::from_secs(timeout),
        verbose,
        host_setup,
        host_teardown,
    })
}

fn preflight(opts: &Options) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("must run as root (it creates network namespaces)".into());
    }
    let bin = opts.plugin_dir.join(&opts.plugin);
    if !bin.is_file() {
        return Err(format!("plugin binary {} not found", bin.display()));
    }
    let ip = std::process::Command::new("ip").arg("-V").output();
    if !ip.is_ok_and(|o| o.status.success()) {
        return Err("iproute2 `ip` is required".into());
    }
    Ok(())
}

fn main() -> ExitCode {
    let opts = match parse_args(std::env::args().skip(1).collect()) {
        Ok(o) => o,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("cni-conformance: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = preflight(&opts) {
        eprintln!("cni-conformance: {e}");
        return ExitCode::from(2);
    }
    sandbox::remove_stale();
    let (summary, ok) = Suite::new(opts).run();
    println!("{summary}");
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn host_hooks_are_parsed_in_both_spellings() {
        let config =
            std::env::temp_dir().join(format!("cnic-unit-args-{}.json", std::process::id()));
        assert!(std::fs::write(&config, r#"{"name":"n"}"#).is_ok());
        let c = config.display().to_string();
        let parsed = parse_args(args(&[
            "--plugin-dir",
            "/d",
            "--plugin",
            "x",
            "--config",
            &c,
            "--host-setup",
            "ip link add a type veth peer name b",
            "--host-teardown=echo done",
        ]));
        let _ = std::fs::remove_file(&config);
        let opts = parsed.expect("valid arguments");
        assert_eq!(
            opts.host_setup.as_deref(),
            Some("ip link add a type veth peer name b")
        );
        assert_eq!(opts.host_teardown.as_deref(), Some("echo done"));
        assert!(parse_args(args(&["--plugin-dir", "/d", "--host-setup"])).is_err());
    }

    #[test]
    fn argument_errors() {
        assert!(parse_args(args(&["--plugin", "x", "--config", "/nonexistent"])).is_err());
        assert!(parse_args(args(&[
            "--plugin-dir",
            "/d",
            "--plugin",
            "a/b",
            "--config",
            "/c"
        ]))
        .is_err());
        assert!(parse_args(args(&["--bogus"])).is_err());
        assert!(parse_args(args(&[
            "--plugin-dir",
            "/d",
            "--plugin",
            "x",
            "--config",
            "/c",
            "--ifname",
            "x/y"
        ]))
        .is_err());
    }
}
