//! The tuning config (field for field the reference plugin's) and the settings it resolves to.

use std::collections::BTreeMap;
use std::path::PathBuf;

use cni_common::config::{cni_args_mac, mtu_field, parse_mac_field, pick_mac};
use cni_common::mac::MacAddr;
use cni_common::node_policy::NodePolicy;
use cni_common::skel::Request;
use cni_common::sysctl::{sysctl_key_to_path, validate_sysctl_path};
use cni_common::{Context, Error, Result};
use serde::Deserialize;

use crate::allowlist::Allowlist;

pub const DEFAULT_DATA_DIR: &str = "/run/cni/tuning";

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TuningConf {
    #[serde(default)]
    pub sysctl: BTreeMap<String, SysctlValue>,
    #[serde(default)]
    pub mac: Option<String>,
    /// 0 means "leave the MTU alone", as in the reference plugin.
    #[serde(default)]
    pub mtu: Option<u32>,
    /// Only `true` acts; `false` leaves the flag as it is.
    #[serde(default)]
    pub promisc: bool,
    #[serde(default)]
    pub allmulti: Option<bool>,
    #[serde(default, rename = "txQLen")]
    pub tx_qlen: Option<u32>,
    #[serde(default)]
    pub data_dir: Option<String>,
}

/// Sysctl values are strings in the reference plugin; numbers are accepted too.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum SysctlValue {
    Text(String),
    Number(serde_json::Number),
}

impl SysctlValue {
    fn into_string(self) -> String {
        match self {
            SysctlValue::Text(s) => s,
            SysctlValue::Number(n) => n.to_string(),
        }
    }
}

/// One sysctl to write: the key as the user wrote it, and the path it resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sysctl {
    pub key: String,
    /// Relative to /proc/sys, IFNAME substituted, validated to stay under net/.
    pub path: String,
    pub value: String,
}

/// What one ADD or CHECK must do, resolved from the config, `args.cni` and the runtime.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub sysctls: Vec<Sysctl>,
    pub mac: Option<MacAddr>,
    pub mtu: Option<u32>,
    pub promisc: bool,
    pub allmulti: Option<bool>,
    pub tx_qlen: Option<u32>,
    pub data_dir: PathBuf,
}

impl Settings {
    /// The MAC precedence is the reference plugin's: config `mac` < CNI_ARGS `MAC` <
    /// runtimeConfig `mac` < `args.cni.mac`. Everything is validated before anything is changed.
    pub fn resolve(req: &Request<TuningConf>, allowlist: &Allowlist) -> Result<Settings> {
        let conf = &req.conf;
        let own = &conf.plugin;

        let mut sysctl = own.sysctl.clone();
        if let Some(extra) = conf.arg_as::<BTreeMap<String, SysctlValue>>("sysctl")? {
            sysctl.extend(extra);
        }
        let sysctls = resolve_sysctls(sysctl, &req.cmd.ifname, allowlist)?;

        let mac = pick_mac([
            parse_mac_field("mac", own.mac.as_deref())?,
            cni_args_mac(&req.cmd.args)?,
            conf.runtime_config_mac()?,
            conf.args_mac()?,
        ])?;

        // The config's own value is checked even where args.cni overrides it.
        let own_mtu = mtu_field("mtu", own.mtu)?;
        let mtu = match conf.arg_as::<u32>("mtu")? {
            Some(m) => mtu_field("args.cni.mtu", Some(m))?,
            None => own_mtu,
        };
        let promisc = conf.arg_as::<bool>("promisc")?.unwrap_or(own.promisc);
        let allmulti = conf.arg_as::<bool>("allmulti")?.or(own.allmulti);
        let tx_qlen = conf.arg_as::<u32>("txQLen")?.or(own.tx_qlen);

        let data_dir = data_dir(own)?;
        // Only tolerate CNI_ARGS keys we read; runtimes send IgnoreUnknown anyway.
        req.cmd.args.check_known(&["MAC"])?;

        Ok(Settings {
            sysctls,
            mac,
            mtu,
            promisc,
            allmulti,
            tx_qlen,
            data_dir,
        })
    }

    /// Whether any link attribute is to be changed (sysctls aside).
    pub fn touches_link(&self) -> bool {
        self.mac.is_some()
            || self.mtu.is_some()
            || self.promisc
            || self.allmulti.is_some()
            || self.tx_qlen.is_some()
    }
}

/// The state directory, checked against the node's policy (below /run/cni or /var/lib/cni
/// unless the node allows more), links resolved: every verb uses this path and no other.
pub fn data_dir(conf: &TuningConf) -> Result<PathBuf> {
    let value = conf.data_dir.as_deref().unwrap_or(DEFAULT_DATA_DIR);
    NodePolicy::load()?.state_dir("dataDir", value)
}

/// Dots become slashes before IFNAME is substituted, so `net.ipv4.conf.IFNAME.forwarding` works
/// for an interface named `eth0.100`. The allowlist sees the key as written.
fn resolve_sysctls(
    sysctl: BTreeMap<String, SysctlValue>,
    ifname: &str,
    allowlist: &Allowlist,
) -> Result<Vec<Sysctl>> {
    let mut out: Vec<Sysctl> = Vec::with_capacity(sysctl.len());
    for (key, value) in sysctl {
        allowlist.check(&key)?;
        let path = sysctl_key_to_path(&key)
            .split('/')
            .map(|part| if part == "IFNAME" { ifname } else { part })
            .collect::<Vec<_>>()
            .join("/");
        validate_sysctl_path(&path).with_context(|| format!("sysctl {key:?}"))?;
        let value = value.into_string();
        if value.contains('\n') || value.contains('\0') {
            return Err(Error::invalid_config(format!(
                "sysctl {key:?}: the value must be one line"
            )));
        }
        if let Some(dup) = out.iter().find(|s| s.path == path) {
            return Err(Error::invalid_config(format!(
                "sysctl keys {:?} and {key:?} name the same setting",
                dup.key
            )));
        }
        out.push(Sysctl { key, path, value });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sysctls(pairs: &[(&str, &str)]) -> BTreeMap<String, SysctlValue> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), SysctlValue::Text(v.to_string())))
            .collect()
    }

    #[test]
    fn ifname_is_substituted_after_dots_become_slashes() {
        let out = resolve_sysctls(
            sysctls(&[("net.ipv4.conf.IFNAME.forwarding", "1")]),
            "eth0.100",
            &Allowlist::none(),
        )
        .expect("valid");
        assert_eq!(out[0].path, "net/ipv4/conf/eth0.100/forwarding");
    }

    #[test]
    fn sysctls_outside_net_and_path_escapes_are_refused() {
        for key in [
            "kernel.hostname",
            "net/../../kernel/core_pattern",
            "net.ipv4.conf.IFNAME.forwarding/../../../../kernel/x",
            "/net/ipv4/ip_forward",
            "net",
            "net..ipv4",
        ] {
            let e =
                resolve_sysctls(sysctls(&[(key, "1")]), "eth0", &Allowlist::none()).expect_err(key);
            assert_eq!(e.code(), cni_common::Code::InvalidConfig, "{key}");
        }
    }

    #[test]
    fn the_same_sysctl_written_two_ways_is_refused() {
        let e = resolve_sysctls(
            sysctls(&[("net.ipv4.ip_forward", "1"), ("net/ipv4/ip_forward", "0")]),
            "eth0",
            &Allowlist::none(),
        )
        .expect_err("duplicate");
        assert!(e.msg().contains("same setting"), "{}", e.msg());
    }

    #[test]
    fn multi_line_values_are_refused() {
        assert!(resolve_sysctls(
            sysctls(&[("net.ipv4.ip_forward", "1\n0")]),
            "eth0",
            &Allowlist::none()
        )
        .is_err());
    }

    #[test]
    fn numbers_are_accepted_as_sysctl_values() {
        let mut map = BTreeMap::new();
        map.insert(
            "net.ipv4.ip_forward".to_string(),
            SysctlValue::Number(serde_json::Number::from(1)),
        );
        let out = resolve_sysctls(map, "eth0", &Allowlist::none()).expect("valid");
        assert_eq!(out[0].value, "1");
    }
}
