//! ovs-cni's cache file, written so that a node can go back to ovs-cni with pods running.
//!
//! ovs-cni keeps, for each attachment, the network config it was added with in
//! `/var/lib/cni/ovs-cni/cache/<containerID>-<ifname>` (older releases: `/tmp/ovscache/...`),
//! and its DEL does nothing at all when that file is missing. So ADD writes the file exactly as
//! ovs-cni does (same path, same JSON, directory 0700, file 0600), DEL removes it from both
//! places, and GC removes the ones of this network whose attachment the runtime no longer has,
//! whichever plugin wrote them. This plugin never reads it back: DEL and GC find ports through
//! OVSDB.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use cni_common::config::NetConf;
use cni_common::{Code, ContextAs, Error, Result};
use serde::Serialize;
use serde_json::Value;

use crate::config::OvsConf;
use crate::vlan::TrunkEntry;

/// Where ovs-cni keeps its cache, relative to the root.
pub const CACHE_DIR: &str = "var/lib/cni/ovs-cni/cache";
/// Where ovs-cni releases before 2024 kept it; ovs-cni's DEL still reads and removes it there.
pub const OLD_CACHE_DIR: &str = "tmp/ovscache";
/// The root the two directories are taken from, `/` unless this variable names another
/// directory (tests use their own, as ovs-cni's tests do).
pub const ROOT_ENV: &str = "OVS_CNI_ROOT";

fn root() -> PathBuf {
    std::env::var_os(ROOT_ENV)
        .filter(|r| !r.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// The cache directory and the old one.
pub fn dirs() -> [PathBuf; 2] {
    let root = root();
    [root.join(CACHE_DIR), root.join(OLD_CACHE_DIR)]
}

/// ovs-cni's name for an attachment's file: `<containerID>-<ifname>`.
pub fn key(container_id: &str, ifname: &str) -> String {
    format!("{container_id}-{ifname}")
}

/// ovs-cni's `CachedNetConf`, as Go encodes it (no JSON tags: the field names as they are).
#[derive(Debug, Serialize)]
pub struct CachedNetConf<'a> {
    #[serde(rename = "Netconf")]
    pub netconf: OvsCniNetConf<'a>,
    #[serde(rename = "OrigIfName")]
    pub orig_if_name: &'static str,
    #[serde(rename = "UserspaceMode")]
    pub userspace_mode: bool,
    #[serde(rename = "VdpaType")]
    pub vdpa_type: &'static str,
}

/// ovs-cni's `NetConf` after it loaded it (flat file merged, link-state defaults filled in,
/// the bridge resolved), field for field in Go's order and with Go's `omitempty`s.
#[derive(Debug, Serialize)]
pub struct OvsCniNetConf<'a> {
    #[serde(rename = "cniVersion", skip_serializing_if = "str::is_empty")]
    pub cni_version: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    pub name: &'a str,
    #[serde(rename = "type", skip_serializing_if = "str::is_empty")]
    pub plugin_type: &'a str,
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub capabilities: &'a std::collections::BTreeMap<String, bool>,
    pub ipam: Ipam<'a>,
    pub dns: Value,
    #[serde(rename = "bridge", skip_serializing_if = "str::is_empty")]
    pub bridge: &'a str,
    pub vlan: Option<i64>,
    pub mtu: i64,
    #[serde(skip_serializing_if = "<[Trunk]>::is_empty")]
    pub trunk: Vec<Trunk>,
    #[serde(rename = "deviceID")]
    pub device_id: &'a str,
    pub ofport_request: i64,
    pub interface_type: &'a str,
    pub configuration_path: &'a str,
    pub socket_file: &'a str,
    pub link_state_check_retries: i64,
    pub link_state_check_interval: i64,
}

#[derive(Debug, Serialize)]
pub struct Ipam<'a> {
    #[serde(rename = "type", skip_serializing_if = "str::is_empty")]
    pub ipam_type: &'a str,
}

/// ovs-cni's `Trunk`: pointers with `omitempty`.
#[derive(Debug, Serialize)]
pub struct Trunk {
    #[serde(rename = "minID", skip_serializing_if = "Option::is_none")]
    pub min_id: Option<i64>,
    #[serde(rename = "maxID", skip_serializing_if = "Option::is_none")]
    pub max_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
}

impl<'a> CachedNetConf<'a> {
    /// What ovs-cni's ADD would cache for `net` with the merged config `conf` on `bridge`.
    pub fn new(net: &'a NetConf<OvsConf>, conf: &'a OvsConf, bridge: &'a str) -> CachedNetConf<'a> {
        let text = |v: &'a Option<String>| v.as_deref().unwrap_or_default();
        let number = |v: Option<i64>, default: i64| v.filter(|n| *n != 0).unwrap_or(default);
        CachedNetConf {
            netconf: OvsCniNetConf {
                cni_version: &net.cni_version,
                name: &net.name,
                plugin_type: &net.plugin_type,
                capabilities: &net.capabilities,
                ipam: Ipam {
                    ipam_type: net.ipam_type().unwrap_or_default(),
                },
                dns: net
                    .dns
                    .as_ref()
                    .and_then(|d| serde_json::to_value(d).ok())
                    .unwrap_or_else(|| Value::Object(Default::default())),
                bridge,
                vlan: conf.vlan,
                mtu: conf.mtu.unwrap_or(0),
                trunk: conf
                    .trunk
                    .iter()
                    .flatten()
                    .map(|t: &TrunkEntry| Trunk {
                        min_id: t.min_id,
                        max_id: t.max_id,
                        id: t.id,
                    })
                    .collect(),
                device_id: "",
                ofport_request: conf.ofport_request.unwrap_or(0),
                interface_type: text(&conf.interface_type),
                configuration_path: text(&conf.configuration_path),
                socket_file: text(&conf.socket_file),
                link_state_check_retries: number(
                    conf.link_state_check_retries,
                    crate::config::DEFAULT_LINK_STATE_CHECK_RETRIES,
                ),
                link_state_check_interval: number(
                    conf.link_state_check_interval,
                    crate::config::DEFAULT_LINK_STATE_CHECK_INTERVAL_MS,
                ),
            },
            orig_if_name: "",
            userspace_mode: false,
            vdpa_type: "",
        }
    }
}

/// Writes the attachment's file into the cache directory, atomically (a temporary file renamed
/// over it), as ovs-cni's ADD does before it creates anything. Returns the file's path.
pub fn write(key: &str, entry: &CachedNetConf) -> Result<PathBuf> {
    check_key(key)?;
    let [dir, _] = dirs();
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| cache_failed("creating", &dir, e))?;
    // As the cache's other failures (100): no JSON the plugin was given (6).
    let bytes =
        serde_json::to_vec(entry).context_as(Code::System, "encoding ovs-cni's cache entry")?;
    let path = dir.join(key);
    let temp = dir.join(format!(".{key}.tmp"));
    let written = (|| {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temp)?;
        // No fsync, as ovs-cni: after a crash the node reboots without the veths anyway.
        file.write_all(&bytes)?;
        fs::rename(&temp, &path)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&temp);
        return Err(cache_failed("writing", &path, e));
    }
    Ok(path)
}

/// `doing` on `path` failed. The cache is ovs-cni's bookkeeping on the node: failing to keep it
/// is a host failure (100), not an I/O failure of the call (5).
fn cache_failed(doing: &str, path: &Path, cause: io::Error) -> Error {
    Error::classified(
        Code::System,
        format!("{doing} {} (ovs-cni's cache)", path.display()),
        cause,
    )
}

/// Removes the attachment's file from both directories; a missing one is not an error.
pub fn remove(key: &str) -> Result<()> {
    check_key(key)?;
    for dir in dirs() {
        remove_file(&dir.join(key))?;
    }
    Ok(())
}

pub fn remove_file(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(cache_failed("removing", path, e)),
    }
}

/// Removes the files of `network` (by the `name` in their config) whose name is not one of
/// `keep`, in both directories. Files that are not ovs-cni cache entries are left alone.
pub fn remove_stale(network: &str, keep: &[String]) -> Result<Vec<String>> {
    let mut removed = Vec::new();
    let mut errors = Vec::new();
    for dir in dirs() {
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => {
                errors.push(format!("listing {}: {e}", dir.display()));
                continue;
            }
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || keep.contains(&name) {
                continue;
            }
            let path = entry.path();
            if !entry.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            if network_of(&path).as_deref() != Some(network) {
                continue;
            }
            match remove_file(&path) {
                Ok(()) => removed.push(name),
                Err(e) => errors.push(e.msg().to_string()),
            }
        }
    }
    match errors.is_empty() {
        true => Ok(removed),
        false => Err(Error::system(errors.join("; "))),
    }
}

/// The network name in a cache file, None when it is not one.
fn network_of(path: &Path) -> Option<String> {
    let bytes = fs::read(path).ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    v.get("Netconf")?.get("name")?.as_str().map(str::to_string)
}

/// A container ID and an ifname never hold '/'; refuse anything that could leave the directory.
fn check_key(key: &str) -> Result<()> {
    if key.is_empty() || key.contains('/') || key.starts_with('.') {
        return Err(Error::system(format!(
            "{key:?} cannot name a file of ovs-cni's cache"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_entry_is_what_go_encodes_for_ovs_cni() {
        let net: NetConf<OvsConf> = serde_json::from_value(json!({
            "cniVersion": "0.4.0", "name": "ovs-net", "type": "ovs", "bridge": "br1",
            "vlan": 100, "ipam": {"type": "host-local", "subnet": "10.0.0.0/24"},
            "args": {"cni": {"mac": "02:00:00:00:00:01"}}, "runtimeConfig": {"mac": "x"}
        }))
        .expect("config");
        let entry = CachedNetConf::new(&net, &net.plugin, "br1");
        assert_eq!(
            serde_json::to_string(&entry).expect("encode"),
            concat!(
                r#"{"Netconf":{"cniVersion":"0.4.0","name":"ovs-net","type":"ovs","#,
                r#""ipam":{"type":"host-local"},"dns":{},"bridge":"br1","vlan":100,"mtu":0,"#,
                r#""deviceID":"","ofport_request":0,"interface_type":"","#,
                r#""configuration_path":"","socket_file":"","link_state_check_retries":5,"#,
                r#""link_state_check_interval":600},"OrigIfName":"","UserspaceMode":false,"#,
                r#""VdpaType":""}"#
            )
        );
        let net: NetConf<OvsConf> = serde_json::from_value(json!({
            "name": "t", "type": "ovs", "trunk": [{"id": 5}, {"minID": 7, "maxID": 9}],
            "socket_file": "unix:/x.sock", "link_state_check_retries": 2, "mtu": 1400,
            "dns": {"nameservers": ["10.0.0.1"]}, "capabilities": {"mac": true}
        }))
        .expect("config");
        let v =
            serde_json::to_value(CachedNetConf::new(&net, &net.plugin, "br-int")).expect("encode");
        assert_eq!(
            v["Netconf"]["trunk"],
            json!([{"id": 5}, {"minID": 7, "maxID": 9}])
        );
        assert_eq!(v["Netconf"]["vlan"], Value::Null);
        assert_eq!(v["Netconf"]["ipam"], json!({}));
        assert_eq!(v["Netconf"]["dns"], json!({"nameservers": ["10.0.0.1"]}));
        assert_eq!(v["Netconf"]["capabilities"], json!({"mac": true}));
        assert_eq!(v["Netconf"]["bridge"], "br-int");
        assert_eq!(v["Netconf"]["link_state_check_retries"], 2);
        assert!(v["Netconf"].get("cniVersion").is_none());
    }

    #[test]
    fn keys_stay_in_the_directory() {
        assert_eq!(key("abc", "net1"), "abc-net1");
        for bad in ["", "../x", "a/b", ".hidden"] {
            assert!(check_key(bad).is_err(), "{bad:?}");
        }
    }
}
