//! The network configuration a plugin receives on stdin, with the plugin's own fields typed.
//!
//! `NetConf<T>` holds the fields the spec defines and flattens the plugin's struct `T` into the
//! same object, so a plugin reads `conf.plugin.mtu` rather than looking keys up in a map.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::args::CniArgs;
use crate::error::{Code, Context, ContextAs, Error, Result};
use crate::mac::MacAddr;
use crate::netlink::MTU_RANGE;
use crate::result::Dns;

/// The GC request's key for the attachments to keep (spec 1.1.0).
pub const VALID_ATTACHMENTS: &str = "cni.dev/valid-attachments";

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetConf<T> {
    #[serde(default)]
    pub cni_version: String,
    #[serde(default)]
    pub cni_versions: Vec<String>,
    #[serde(default)]
    pub name: String,
    #[serde(default, rename = "type")]
    pub plugin_type: String,
    /// Runtimes keep this in the config (libcni does not strip it); plugins only tolerate it.
    #[serde(default)]
    pub capabilities: BTreeMap<String, bool>,
    #[serde(default)]
    pub ipam: Option<IpamConf>,
    #[serde(default)]
    pub dns: Option<Dns>,
    #[serde(default)]
    pub runtime_config: RuntimeConfig,
    #[serde(default)]
    pub args: Option<ConfArgs>,
    /// Kept raw: it is parsed in the config's version once that is known.
    #[serde(default)]
    pub prev_result: Option<Value>,
    /// GC's list of attachments to keep; spec 1.1.0 named the key `cni.dev/attachments`.
    #[serde(default, rename = "cni.dev/valid-attachments")]
    pub valid_attachments: Option<Vec<Attachment>>,
    #[serde(default, rename = "cni.dev/attachments")]
    pub attachments: Option<Vec<Attachment>>,
    #[serde(flatten)]
    pub plugin: T,
}

/// `ipam`: only `type` matters to us; the delegate reads the whole config itself.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct IpamConf {
    #[serde(default, rename = "type")]
    pub ipam_type: String,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// Capability arguments (CONVENTIONS.md plus what Multus sends).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeConfig {
    #[serde(default)]
    pub mac: Option<String>,
    #[serde(default)]
    pub ips: Vec<String>,
    #[serde(default, rename = "deviceID")]
    pub device_id: Option<String>,
    #[serde(default)]
    pub port_mappings: Option<Value>,
    #[serde(default)]
    pub bandwidth: Option<Value>,
    #[serde(default, rename = "infinibandGUID")]
    pub infiniband_guid: Option<String>,
    #[serde(default, rename = "CNIDeviceInfoFile")]
    pub cni_device_info_file: Option<String>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `args`: the spec reserves the `cni` namespace; other namespaces are ignored.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ConfArgs {
    #[serde(default)]
    pub cni: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attachment {
    #[serde(rename = "containerID")]
    pub container_id: String,
    pub ifname: String,
}

impl<T: DeserializeOwned> NetConf<T> {
    /// Decodes stdin; a type mismatch is a decoding error (code 6) that names the problem.
    /// It decodes the bytes rather than a `Value` decoded from them: so the message places a
    /// wrong field by line and column, and a key given twice is refused (a `Value` keeps the
    /// last).
    /// The IPAM plugin's name is checked here, before any verb touches the node: it is exec'd
    /// as root, so it may only name a file on CNI_PATH.
    pub fn parse(stdin: &[u8]) -> Result<NetConf<T>> {
        let conf: NetConf<T> =
            serde_json::from_slice(stdin).context("failed to decode network configuration")?;
        if let Some(name) = conf.ipam_type() {
            check_plugin_name(name)?;
        }
        Ok(conf)
    }
}

impl<T> NetConf<T> {
    /// The IPAM plugin to delegate to, if any (`"ipam": {}` means none).
    pub fn ipam_type(&self) -> Option<&str> {
        self.ipam
            .as_ref()
            .map(|i| i.ipam_type.as_str())
            .filter(|t| !t.is_empty())
    }

    /// `args.cni.<key>`, when present.
    pub fn arg(&self, key: &str) -> Option<&Value> {
        self.args.as_ref().and_then(|a| a.cni.get(key))
    }

    /// `args.cni.<key>` decoded as `V`; a value of the wrong type is an invalid config.
    pub fn arg_as<V: DeserializeOwned>(&self, key: &str) -> Result<Option<V>> {
        self.arg(key)
            .map(|v| {
                // A value the runtime passed under a key the plugin knows: of the wrong type,
                // the config is invalid (7), not undecodable (6).
                serde_json::from_value(v.clone())
                    .with_context_as(Code::InvalidConfig, || format!("args.cni.{key}"))
            })
            .transpose()
    }

    /// The attachments GC must keep, from either key name.
    pub fn gc_valid_attachments(&self) -> &[Attachment] {
        self.valid_attachments
            .as_deref()
            .or(self.attachments.as_deref())
            .unwrap_or(&[])
    }

    /// The MAC requested through `runtimeConfig.mac` (the `mac` capability).
    pub fn runtime_config_mac(&self) -> Result<Option<MacAddr>> {
        parse_mac_field("runtimeConfig.mac", self.runtime_config.mac.as_deref())
    }

    /// The MAC requested through `args.cni.mac`.
    pub fn args_mac(&self) -> Result<Option<MacAddr>> {
        let mac: Option<String> = self.arg_as("mac")?;
        parse_mac_field("args.cni.mac", mac.as_deref())
    }
}

/// The MAC requested through CNI_ARGS `MAC` (CRI-O and Multus send it).
pub fn cni_args_mac(args: &CniArgs) -> Result<Option<MacAddr>> {
    parse_mac_field("CNI_ARGS MAC", args.get("MAC"))
}

/// The MAC of highest precedence among `candidates`, given lowest first (each plugin keeps its
/// reference's order); refused with code 7 when it is not a unicast address.
pub fn pick_mac(candidates: impl IntoIterator<Item = Option<MacAddr>>) -> Result<Option<MacAddr>> {
    let mac = candidates.into_iter().flatten().last();
    match mac {
        Some(m) if m.is_multicast() || m.is_zero() => Err(Error::invalid_config(format!(
            "mac {m} is not a unicast address"
        ))),
        _ => Ok(mac),
    }
}

/// Parses an optional MAC, naming where it came from when it is invalid; empty means unset.
pub fn parse_mac_field(field: &str, value: Option<&str>) -> Result<Option<MacAddr>> {
    match value {
        None | Some("") => Ok(None),
        Some(s) => MacAddr::parse(s).map(Some).context(field),
    }
}

/// The MTU a config field asks for: 0 or none leaves the link's, anything else must be in
/// [`MTU_RANGE`] (code 7 otherwise). Checked before the node changes, since the kernel refuses
/// only once the links are being made.
pub fn mtu_field(field: &str, value: Option<u32>) -> Result<Option<u32>> {
    match value {
        None | Some(0) => Ok(None),
        Some(m) if MTU_RANGE.contains(&m) => Ok(Some(m)),
        Some(m) => Err(Error::invalid_config(format!(
            "{field} {m} is out of range: 0 (unchanged) or {} to {}",
            MTU_RANGE.start(),
            MTU_RANGE.end()
        ))),
    }
}

/// The IPAM plugin's name, as a config names it: a file name (no directory, not `.` or `..`,
/// no NUL, at most 255 bytes), since it is exec'd as root from CNI_PATH.
pub fn check_plugin_name(plugin: &str) -> Result<()> {
    let bad = plugin.contains(['/', '\0']) || plugin == "." || plugin == ".." || plugin.len() > 255;
    match bad {
        true => Err(Error::invalid_config(format!(
            "ipam.type {:?}: must be a file name on CNI_PATH",
            plugin.chars().take(120).collect::<String>()
        ))),
        false => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_mtu_is_unset_at_0_and_otherwise_68_to_65535() {
        assert_eq!(mtu_field("mtu", None).expect("unset"), None);
        assert_eq!(mtu_field("mtu", Some(0)).expect("unset"), None);
        assert_eq!(mtu_field("mtu", Some(68)).expect("lowest"), Some(68));
        assert_eq!(mtu_field("mtu", Some(65535)).expect("highest"), Some(65535));
        for bad in [1, 67, 65536, u32::MAX] {
            let e = mtu_field("args.cni.mtu", Some(bad)).expect_err("out of range");
            assert_eq!(e.code(), crate::Code::InvalidConfig);
            assert_eq!(
                e.msg(),
                format!("args.cni.mtu {bad} is out of range: 0 (unchanged) or 68 to 65535")
            );
        }
    }

    #[test]
    fn pick_mac_takes_the_last_given_and_refuses_multicast() {
        let m = |s: &str| Some(MacAddr::parse(s).expect("mac"));
        assert_eq!(
            pick_mac([m("02:00:00:00:00:01"), None, m("02:00:00:00:00:03"), None]).expect("ok"),
            m("02:00:00:00:00:03")
        );
        assert_eq!(pick_mac([None, None]).expect("ok"), None);
        let e = pick_mac([m("01:00:5e:00:00:01")]).expect_err("multicast");
        assert_eq!(e.code(), Code::InvalidConfig);
        assert!(pick_mac([m("00:00:00:00:00:00")]).is_err());
    }
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    struct Plugin {
        #[serde(default)]
        mtu: Option<u32>,
        #[serde(default)]
        bridge: Option<String>,
    }

    #[test]
    fn plugin_fields_are_flattened_next_to_spec_fields() {
        let raw = json!({
            "cniVersion": "1.0.0", "name": "n", "type": "bridge",
            "bridge": "br1", "mtu": 1400,
            "capabilities": {"mac": true},
            "runtimeConfig": {"mac": "c2:11:22:33:44:55", "io.kubernetes.cri.pod-annotations": {}},
            "args": {"cni": {"mac": "c2:11:22:33:44:66"}},
            "ipam": {"type": "host-local", "subnet": "10.1.0.0/24"},
            "somethingUnknown": [1, 2]
        });
        let c: NetConf<Plugin> = NetConf::parse(raw.to_string().as_bytes()).expect("parses");
        assert_eq!(c.plugin.mtu, Some(1400));
        assert_eq!(c.plugin.bridge.as_deref(), Some("br1"));
        assert_eq!(c.ipam_type(), Some("host-local"));
        assert_eq!(
            c.runtime_config_mac()
                .expect("ok")
                .map(|m| m.to_string())
                .as_deref(),
            Some("c2:11:22:33:44:55")
        );
        assert_eq!(
            c.args_mac().expect("ok").map(|m| m.to_string()).as_deref(),
            Some("c2:11:22:33:44:66")
        );
    }

    #[test]
    fn missing_version_and_empty_ipam_mean_0_1_0_and_no_ipam() {
        let c: NetConf<Plugin> = NetConf::parse(br#"{"name":"n","ipam":{}}"#).expect("parses");
        assert_eq!(c.cni_version, "");
        assert_eq!(c.ipam_type(), None);
    }

    #[test]
    fn wrong_types_are_decoding_errors() {
        for bad in [
            r#"{"name":"n","mtu":"big"}"#,
            r#"{"name":"n","mtu":-1}"#,
            r#"{"name":"n","mtu":99999999999999999999}"#,
            r#"{"name":5}"#,
            r#"{"name":"n","cniVersion":1.0}"#,
        ] {
            let e = NetConf::<Plugin>::parse(bad.as_bytes()).expect_err(bad);
            assert_eq!(e.code(), Code::Decoding, "{bad}");
        }
    }

    #[test]
    fn a_wrong_type_is_placed_by_line_and_column() {
        let e = NetConf::<Plugin>::parse(b"{\"name\":\"n\",\n\"mtu\":\"big\"}").expect_err("mtu");
        assert!(e.msg().contains(" at line 2 column "), "{}", e.msg());
    }

    #[test]
    fn a_key_given_twice_is_a_decoding_error() {
        let e = NetConf::<Plugin>::parse(br#"{"name":"n","name":"m"}"#).expect_err("twice");
        assert_eq!(e.code(), Code::Decoding, "{}", e.msg());
    }

    #[test]
    fn gc_reads_either_attachment_key() {
        let new: NetConf<Plugin> = NetConf::parse(
            br#"{"name":"n","cni.dev/valid-attachments":[{"containerID":"a","ifname":"eth0"}]}"#,
        )
        .expect("parses");
        assert_eq!(new.gc_valid_attachments().len(), 1);
        let old: NetConf<Plugin> = NetConf::parse(
            br#"{"name":"n","cni.dev/attachments":[{"containerID":"a","ifname":"eth0"}]}"#,
        )
        .expect("parses");
        assert_eq!(old.gc_valid_attachments()[0].container_id, "a");
    }

    #[test]
    fn a_wrong_type_under_args_cni_is_an_invalid_config_naming_the_key() {
        let c: NetConf<Plugin> =
            NetConf::parse(br#"{"name":"n","args":{"cni":{"mac":7}}}"#).expect("parses");
        let e = c.arg_as::<String>("mac").expect_err("a number");
        assert_eq!(e.code(), Code::InvalidConfig);
        assert!(
            e.msg().starts_with("args.cni.mac: invalid type"),
            "{}",
            e.msg()
        );
    }

    #[test]
    fn invalid_macs_name_their_source() {
        let c: NetConf<Plugin> =
            NetConf::parse(br#"{"name":"n","runtimeConfig":{"mac":"zz"}}"#).expect("parses");
        let e = c.runtime_config_mac().expect_err("bad mac");
        assert_eq!(e.code(), Code::InvalidConfig);
        assert!(e.msg().starts_with("runtimeConfig.mac"), "{}", e.msg());
        let args = CniArgs::parse("MAC=01:02").expect("ok");
        assert!(cni_args_mac(&args)
            .expect_err("bad")
            .msg()
            .contains("CNI_ARGS MAC"));
    }
}
