//! Reading and writing `/proc/sys/net` of the calling thread's network namespace.
//!
//! Keys come from user configs (the tuning plugin's `sysctl` map), so every path is validated
//! to stay under `/proc/sys/net/`: nothing else is namespaced, and writing it would change the host.
//! To act on a container, call these inside [`crate::netns::NetNs::run`].

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};

const PROC_SYS: &str = "/proc/sys";
const PROC_SYS_NET: &str = "/proc/sys/net";

/// `net.ipv4.ip_forward` -> `net/ipv4/ip_forward`. A key that already uses `/` is kept as is,
/// as sysctl(8) does, so interface names with dots (`net/ipv4/conf/eth0.100/forwarding`) work.
pub fn sysctl_key_to_path(key: &str) -> String {
    if key.contains('/') {
        key.to_string()
    } else {
        key.replace('.', "/")
    }
}

/// Checks a path relative to `/proc/sys` and returns the absolute path. It must name something
/// under `net/` with no empty, `.` or `..` component.
pub fn validate_sysctl_path(rel: &str) -> Result<PathBuf> {
    let bad = |why: &str| Error::invalid_config(format!("invalid sysctl {rel:?}: {why}"));
    if rel.contains('\0') {
        return Err(bad("contains a NUL byte"));
    }
    let parts: Vec<&str> = rel.split('/').collect();
    if parts.first() != Some(&"net") || parts.len() < 2 {
        return Err(bad("only sysctls under net/ may be set"));
    }
    if parts
        .iter()
        .any(|p| p.is_empty() || *p == "." || *p == "..")
    {
        return Err(bad("empty, '.' or '..' path component"));
    }
    let path = Path::new(PROC_SYS).join(rel);
    // Belt and braces: the checks above already guarantee this.
    let normal = path
        .components()
        .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    if !normal || !path.starts_with(PROC_SYS_NET) || path == Path::new(PROC_SYS_NET) {
        return Err(bad("escapes /proc/sys/net"));
    }
    Ok(path)
}

/// `sysctl -n <key>`: the value, trimmed.
pub fn sysctl_read(rel: &str) -> Result<String> {
    let path = validate_sysctl_path(rel)?;
    let value = fs::read_to_string(&path).map_err(|e| io_error(rel, "reading", e))?;
    Ok(value.trim().to_string())
}

/// `sysctl -w <key>=<value>`.
pub fn sysctl_write(rel: &str, value: &str) -> Result<()> {
    let path = validate_sysctl_path(rel)?;
    // No create, no truncate: these are proc files that exist or do not.
    let mut file = OpenOptions::new()
        .write(true)
        .open(&path)
        .map_err(|e| io_error(rel, "opening", e))?;
    file.write_all(value.as_bytes())
        .map_err(|e| io_error(rel, &format!("writing {value:?} to"), e))
}

/// `sysctl -w <key>=<value>` for a key that only some kernels have (IPv6 disabled, an older
/// kernel): a missing key is `Ok(false)`; any other failure is an error.
pub fn sysctl_write_if_present(rel: &str, value: &str) -> Result<bool> {
    match sysctl_write(rel, value) {
        Ok(()) => Ok(true),
        Err(e) if e.errno() == libc::ENOENT => Ok(false),
        Err(e) => Err(e),
    }
}

/// A /proc/sys file refusing is the kernel refusing (100, with its errno), not an I/O failure
/// of the call (5).
fn io_error(rel: &str, doing: &str, e: io::Error) -> Error {
    let context = if e.kind() == io::ErrorKind::NotFound {
        format!("sysctl {rel} does not exist")
    } else {
        format!("{doing} sysctl {rel}")
    };
    Error::kernel(context, e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;

    #[test]
    fn a_missing_key_is_skipped_only_by_the_if_present_write() {
        let key = "net/ipv4/conf/no-such-link-here/arp_notify";
        assert_eq!(sysctl_write_if_present(key, "1").ok(), Some(false));
        let e = sysctl_write(key, "1").expect_err("the key does not exist");
        assert!(
            e.msg().starts_with(&format!("sysctl {key} does not exist")),
            "{e}"
        );
    }

    #[test]
    fn dotted_keys_become_paths() {
        assert_eq!(
            sysctl_key_to_path("net.ipv4.ip_forward"),
            "net/ipv4/ip_forward"
        );
        assert_eq!(
            sysctl_key_to_path("net/ipv4/conf/eth0.100/forwarding"),
            "net/ipv4/conf/eth0.100/forwarding"
        );
    }

    #[test]
    fn valid_paths_are_under_proc_sys_net() {
        for rel in [
            "net/ipv4/ip_forward",
            "net/ipv4/conf/eth0/forwarding",
            "net/ipv6/conf/eth0.100/disable_ipv6",
            "net/core/somaxconn",
        ] {
            let p = validate_sysctl_path(rel).expect(rel);
            assert_eq!(p, Path::new("/proc/sys").join(rel));
        }
    }

    #[test]
    fn hostile_paths_are_rejected() {
        for rel in [
            "",
            "net",
            "net/",
            "/net/ipv4",
            "kernel.hostname",
            "kernel/hostname",
            "net/../../kernel/core_pattern",
            "net/ipv4/../../../kernel/x",
            "net/ipv4/..",
            "net/./ipv4/ip_forward",
            "net//ipv4/ip_forward",
            "net/ipv4/ip_forward/",
            "../proc/sys/net/ipv4/ip_forward",
            "./net/ipv4/ip_forward",
            "net/ipv4/ip_forward\0",
            "network/x",
            "vm/../net/ipv4/ip_forward",
        ] {
            let err = validate_sysctl_path(rel).expect_err(rel);
            assert_eq!(err.code(), Code::InvalidConfig, "{rel:?}");
            assert!(err.msg().contains(&format!("{rel:?}")), "{rel:?}: {err}");
        }
    }

    #[test]
    fn dotted_hostile_keys_are_rejected_after_conversion() {
        for key in ["kernel.core_pattern", "net..ipv4", ".net.ipv4", "net.ipv4."] {
            assert!(
                validate_sysctl_path(&sysctl_key_to_path(key)).is_err(),
                "{key}"
            );
        }
    }

    #[test]
    fn read_and_write_validate_first() {
        assert_eq!(
            sysctl_read("kernel/hostname").expect_err("not net").code(),
            Code::InvalidConfig
        );
        assert_eq!(
            sysctl_write("net/../kernel/hostname", "x")
                .expect_err("escapes")
                .code(),
            Code::InvalidConfig
        );
    }

    #[test]
    fn missing_sysctl_has_a_clear_message() {
        let err = sysctl_read("net/ipv4/conf/cni-no-such-if/forwarding").expect_err("missing");
        assert_eq!(err.code(), Code::System);
        assert!(
            err.msg()
                .starts_with("sysctl net/ipv4/conf/cni-no-such-if/forwarding does not exist"),
            "{err}"
        );
        let err =
            sysctl_write("net/ipv4/conf/cni-no-such-if/forwarding", "1").expect_err("missing");
        assert!(
            err.msg()
                .starts_with("sysctl net/ipv4/conf/cni-no-such-if/forwarding does not exist"),
            "{err}"
        );
    }

    #[test]
    fn reads_a_real_value() {
        let v = sysctl_read("net/ipv4/ip_forward").expect("ip_forward exists");
        assert!(v == "0" || v == "1", "{v:?}");
    }
}
