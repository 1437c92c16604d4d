//! The CNI_* environment of one call, checked the way libcni and Go's skel check it.

use std::path::PathBuf;

use crate::args::CniArgs;
use crate::error::{Error, Result};
use crate::version::Command;

/// Linux IFNAMSIZ minus the terminating NUL.
pub const MAX_IFNAME_LEN: usize = 15;

/// A Kubernetes object name's limit; network names become parts of file names (libcni's cache
/// `<network>-<containerID>-<ifname>`), which cannot exceed 255 bytes.
pub const MAX_NETWORK_NAME_LEN: usize = 253;

#[derive(Debug, Clone)]
pub struct CmdArgs {
    pub command: Command,
    pub container_id: String,
    /// Empty when the runtime gave none (allowed on DEL, STATUS and GC).
    pub netns: String,
    pub ifname: String,
    pub args: CniArgs,
    /// CNI_PATH split at ':'; where delegated plugins (IPAM) are looked up.
    pub path: Vec<PathBuf>,
}

impl CmdArgs {
    /// Reads the variables through `get` (the process environment in production).
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<CmdArgs> {
        let var = |k: &str| get(k).unwrap_or_default();
        let raw_command = var("CNI_COMMAND");
        if raw_command.is_empty() {
            return Err(Error::invalid_env(
                "required env variables [CNI_COMMAND] missing",
            ));
        }
        let command = Command::parse(&raw_command)
            .ok_or_else(|| Error::invalid_env(format!("unknown CNI_COMMAND: {raw_command}")))?;
        let cmd = CmdArgs {
            command,
            container_id: var("CNI_CONTAINERID"),
            netns: var("CNI_NETNS"),
            ifname: var("CNI_IFNAME"),
            args: CniArgs::default(),
            path: std::env::split_paths(&var("CNI_PATH"))
                .filter(|p| !p.as_os_str().is_empty())
                .collect(),
        };
        let needs_attachment = matches!(command, Command::Add | Command::Del | Command::Check);
        let needs_netns = matches!(command, Command::Add | Command::Check);
        let mut missing = Vec::new();
        if needs_attachment && cmd.container_id.is_empty() {
            missing.push("CNI_CONTAINERID");
        }
        if needs_netns && cmd.netns.is_empty() {
            missing.push("CNI_NETNS");
        }
        if needs_attachment && cmd.ifname.is_empty() {
            missing.push("CNI_IFNAME");
        }
        if !missing.is_empty() {
            return Err(Error::invalid_env(format!(
                "required env variables [{}] missing",
                missing.join(",")
            )));
        }
        if needs_attachment {
            validate_container_id(&cmd.container_id)?;
            validate_ifname(&cmd.ifname)?;
        }
        Ok(CmdArgs {
            args: CniArgs::parse(&var("CNI_ARGS"))?,
            ..cmd
        })
    }
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-'
}

/// libcni's rule for container IDs and network names: `^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$`.
fn matches_name_rule(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphanumeric()) && chars.all(is_name_char)
}

pub fn validate_container_id(id: &str) -> Result<()> {
    if matches_name_rule(id) {
        Ok(())
    } else {
        Err(Error::invalid_env("invalid characters in CNI_CONTAINERID").with_details(truncate(id)))
    }
}

/// The network name becomes part of file names (libcni's cache, our state), so the same rule.
pub fn validate_network_name(name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid_config("missing network name"));
    }
    if name.len() > MAX_NETWORK_NAME_LEN {
        return Err(Error::invalid_config(format!(
            "network name is longer than {MAX_NETWORK_NAME_LEN} characters"
        ))
        .with_details(truncate(name)));
    }
    if matches_name_rule(name) {
        Ok(())
    } else {
        Err(
            Error::invalid_config("invalid characters found in network name")
                .with_details(truncate(name)),
        )
    }
}

/// The kernel's rule for interface names, as libcni checks CNI_IFNAME.
pub fn validate_ifname(name: &str) -> Result<()> {
    match ifname_problem(name) {
        None => Ok(()),
        Some(r) => {
            Err(Error::invalid_env(format!("interface name {r}")).with_details(truncate(name)))
        }
    }
}

/// Why the kernel would refuse `name` as an interface name, `None` when it would not: for a
/// config field that names a link, refused as the config's fault rather than CNI_IFNAME's.
pub fn ifname_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("is empty")
    } else if name.len() > MAX_IFNAME_LEN {
        Some("is longer than 15 characters")
    } else if name == "." || name == ".." {
        Some("is . or ..")
    } else if name
        .chars()
        .any(|c| c == '/' || c == ':' || c.is_whitespace() || c == '\0')
    {
        Some("contains '/', ':', a NUL or whitespace")
    } else {
        None
    }
}

/// Keeps hostile 4 KiB inputs out of error messages.
fn truncate(s: &str) -> String {
    const MAX: usize = 64;
    if s.len() <= MAX {
        return s.to_string();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes)", &s[..end], s.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    const ADD: [(&str, &str); 5] = [
        ("CNI_COMMAND", "ADD"),
        ("CNI_CONTAINERID", "abc123"),
        ("CNI_NETNS", "/run/netns/x"),
        ("CNI_IFNAME", "net1"),
        ("CNI_PATH", "/opt/cni/bin:/usr/lib/cni"),
    ];

    #[test]
    fn add_with_every_variable_parses() {
        let c = CmdArgs::from_env(env(&ADD)).expect("ok");
        assert_eq!(c.command, Command::Add);
        assert_eq!(c.path.len(), 2);
    }

    #[test]
    fn add_names_every_missing_variable() {
        let e = CmdArgs::from_env(env(&[("CNI_COMMAND", "ADD")])).expect_err("missing");
        assert_eq!(e.code(), Code::InvalidEnvironment);
        assert!(
            e.msg().contains("CNI_CONTAINERID,CNI_NETNS,CNI_IFNAME"),
            "{}",
            e.msg()
        );
    }

    #[test]
    fn del_does_not_need_a_netns() {
        let e = env(&[
            ("CNI_COMMAND", "DEL"),
            ("CNI_CONTAINERID", "abc"),
            ("CNI_IFNAME", "eth0"),
        ]);
        assert!(CmdArgs::from_env(e).is_ok());
    }

    #[test]
    fn gc_and_status_need_only_the_command() {
        assert!(CmdArgs::from_env(env(&[("CNI_COMMAND", "GC")])).is_ok());
        assert!(CmdArgs::from_env(env(&[("CNI_COMMAND", "STATUS")])).is_ok());
    }

    #[test]
    fn missing_or_unknown_command_is_code_4() {
        for e in [env(&[]), env(&[("CNI_COMMAND", "FROB")])] {
            assert_eq!(
                CmdArgs::from_env(e).expect_err("bad").code(),
                Code::InvalidEnvironment
            );
        }
    }

    #[test]
    fn container_id_follows_the_libcni_rule() {
        assert!(validate_container_id("a-b_c.d9").is_ok());
        for bad in ["", "-abc", "a/b", "a b", "a;b", "ä"] {
            assert!(validate_container_id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ifname_follows_the_kernel_rule() {
        assert!(validate_ifname("net1").is_ok());
        assert!(validate_ifname("abcdefghijklmno").is_ok());
        for bad in [
            "",
            ".",
            "..",
            "abcdefghijklmnop",
            "a/b",
            "a:b",
            "a b",
            "a\tb",
        ] {
            assert!(validate_ifname(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn network_name_errors_are_invalid_config() {
        assert!(validate_network_name("mynet").is_ok());
        assert_eq!(
            validate_network_name("../etc").expect_err("bad").code(),
            Code::InvalidConfig
        );
        assert!(validate_network_name(&"n".repeat(253)).is_ok());
        assert!(validate_network_name(&"n".repeat(254)).is_err());
    }

    #[test]
    fn hostile_names_are_truncated_in_errors() {
        let long = "x".repeat(4096);
        let e = validate_ifname(&long).expect_err("too long");
        assert!(e.details().map_or(0, str::len) < 100);
    }
}
