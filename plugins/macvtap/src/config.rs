//! The macvtap config (macvtap-cni's fields, plus `master`/`mode` for the standalone mode) and
//! the settings it resolves to. Everything is validated before anything is changed; a value of
//! the wrong type is an invalid config (code 7) naming its field, like a value out of range.

use cni_common::config::{cni_args_mac, parse_mac_field, pick_mac};
use cni_common::env::ifname_problem;
use cni_common::mac::MacAddr;
use cni_common::netlink::MTU_RANGE;
use cni_common::skel::Request;
use cni_common::{Error, Result};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// KubeVirt's qemu user and group: who opens /dev/tapN in virt-launcher.
pub const DEFAULT_OWNER: u32 = 107;
pub const DEFAULT_GROUP: u32 = 107;

/// `mode` when `master` is given without one, as `ip` and macvtap-cni's device plugin default.
pub const DEFAULT_MODE: &str = "bridge";

/// The modes a macvtap can be created in (`source` needs a list of senders: not offered).
pub const MODES: [&str; 4] = ["bridge", "vepa", "private", "passthru"];

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MacvtapConf {
    /// The macvtap the device plugin created for this pod, in the host namespace.
    #[serde(default, rename = "deviceID")]
    pub device_id: Field<String>,
    /// Standalone mode: the parent link in the host namespace to create the macvtap on.
    #[serde(default)]
    pub master: Field<String>,
    #[serde(default)]
    pub mode: Field<String>,
    /// 0 means "leave the MTU alone", as in macvtap-cni.
    #[serde(default)]
    pub mtu: Field<u32>,
    #[serde(default)]
    pub promisc_mode: Field<bool>,
    /// Owner and group of /dev/tapN.
    #[serde(default)]
    pub owner: Field<u32>,
    #[serde(default)]
    pub group: Field<u32>,
    /// Listed in macvtap-cni's README though its code ignores it: the lowest-precedence MAC.
    #[serde(default)]
    pub mac: Field<String>,
}

/// A config value as written: absent (or null), of the expected type, or not. Keeping the wrong
/// value lets validation name the field with code 7, where a typed decode would fail the whole
/// config with code 6.
#[derive(Debug, Clone, Default)]
pub enum Field<T> {
    #[default]
    Absent,
    Valid(T),
    Invalid(Value),
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Field<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        if value.is_null() {
            return Ok(Field::Absent);
        }
        Ok(match serde_json::from_value(value.clone()) {
            Ok(v) => Field::Valid(v),
            Err(_) => Field::Invalid(value),
        })
    }
}

impl<T> Field<T> {
    /// The value, or code 7 saying what `field` must be.
    fn get(&self, field: &str, must_be: &str) -> Result<Option<&T>> {
        match self {
            Field::Absent => Ok(None),
            Field::Valid(v) => Ok(Some(v)),
            Field::Invalid(v) => Err(invalid(field, must_be, v)),
        }
    }

    /// The value when it has the right type; for DEL, which cleans up whatever the config says.
    pub fn lenient(&self) -> Option<&T> {
        match self {
            Field::Valid(v) => Some(v),
            _ => None,
        }
    }
}

/// Where the macvtap comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Created by macvtap-cni's device plugin under this name in the host namespace.
    Device(String),
    /// Created by this plugin on `master` in `mode`.
    Master { master: String, mode: &'static str },
}

/// What one call must do, resolved from the config, the runtime's arguments and CNI_ARGS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// None only when the config names neither: STATUS and GC can do without (Multus supplies
    /// `deviceID` per ADD); ADD and CHECK ask [`Settings::source`], which refuses it.
    pub source: Option<Source>,
    pub mtu: Option<u32>,
    pub promisc: bool,
    pub owner: u32,
    pub group: u32,
    pub mac: Option<MacAddr>,
}

impl Settings {
    /// The device ID precedence is `runtimeConfig.deviceID` (the `deviceID` capability) over the
    /// `deviceID` field (where Multus writes it); the MAC precedence is the reference plugins':
    /// `mac` < CNI_ARGS `MAC` < `runtimeConfig.mac` < `args.cni.mac`.
    pub fn resolve(req: &Request<MacvtapConf>) -> Result<Settings> {
        let conf = &req.conf;
        let own = &conf.plugin;

        let field_id = own.device_id.get("deviceID", "a string")?;
        let device_id = conf
            .runtime_config
            .device_id
            .as_ref()
            .or(field_id)
            .filter(|id| !id.is_empty());
        let master = own
            .master
            .get("master", "a string")?
            .filter(|m| !m.is_empty());
        let mode = own.mode.get("mode", "a string")?;
        let source =
            match (device_id, master) {
                (Some(_), Some(_)) => return Err(Error::invalid_config(
                    "deviceID and master exclude each other: deviceID names a macvtap the device \
                     plugin created, master a link to create one on",
                )),
                (Some(id), None) => {
                    if mode.is_some() {
                        return Err(Error::invalid_config(
                            "mode applies only with master: with deviceID the device plugin's \
                         configuration sets the mode",
                        ));
                    }
                    check_device_id(id)?;
                    Some(Source::Device(id.clone()))
                }
                (None, Some(master)) => {
                    check_link_name("master", master)?;
                    let mode = match mode {
                        None => DEFAULT_MODE,
                        Some(m) => MODES.iter().find(|known| *known == m).ok_or_else(|| {
                            invalid(
                                "mode",
                                "one of bridge, vepa, private, passthru",
                                &Value::from(m.as_str()),
                            )
                        })?,
                    };
                    Some(Source::Master {
                        master: master.clone(),
                        mode,
                    })
                }
                (None, None) => {
                    if mode.is_some() {
                        return Err(Error::invalid_config("mode applies only with master"));
                    }
                    None
                }
            };

        let mtu_rule = format!(
            "0 (unchanged) or an integer from {} to {}",
            MTU_RANGE.start(),
            MTU_RANGE.end()
        );
        let mtu = match own.mtu.get("mtu", &mtu_rule)?.copied() {
            None | Some(0) => None,
            Some(m) if MTU_RANGE.contains(&m) => Some(m),
            Some(m) => return Err(invalid("mtu", &mtu_rule, &Value::from(m))),
        };
        let promisc = own
            .promisc_mode
            .get("promiscMode", "true or false")?
            .copied()
            .unwrap_or(false);
        let owner = id_field(&own.owner, "owner", DEFAULT_OWNER)?;
        let group = id_field(&own.group, "group", DEFAULT_GROUP)?;

        let mac_field = own.mac.get("mac", "a MAC address string")?;
        let mac = pick_mac([
            parse_mac_field("mac", mac_field.map(String::as_str))?,
            cni_args_mac(&req.cmd.args)?,
            conf.runtime_config_mac()?,
            conf.args_mac()?,
        ])?;
        // Only tolerate CNI_ARGS keys we read; runtimes send IgnoreUnknown anyway.
        req.cmd.args.check_known(&["MAC"])?;

        Ok(Settings {
            source,
            mtu,
            promisc,
            owner,
            group,
            mac,
        })
    }

    /// The macvtap's source, which ADD and CHECK cannot do without.
    pub fn source(&self) -> Result<&Source> {
        self.source.as_ref().ok_or_else(|| {
            Error::invalid_config(
                "either deviceID (the device plugin's macvtap, which Multus fills in) or master \
                 (a link to create the macvtap on) is required",
            )
        })
    }
}

/// An owner or group: a number that chown accepts as an ID (u32::MAX means "unchanged" there).
fn id_field(field: &Field<u32>, name: &str, default: u32) -> Result<u32> {
    let rule = "a numeric ID from 0 to 4294967294";
    match field.get(name, rule)?.copied() {
        None => Ok(default),
        Some(u32::MAX) => Err(invalid(name, rule, &Value::from(u32::MAX))),
        Some(id) => Ok(id),
    }
}

/// A device plugin's device ID: any text without a NUL (the link's name is derived from it,
/// see [`crate::macvtap::device_link_names`]), of a sane length.
fn check_device_id(id: &str) -> Result<()> {
    if id.len() > 253 || id.contains('\0') {
        return Err(invalid(
            "deviceID",
            "a device ID of the device plugin (at most 253 characters)",
            &Value::from(id),
        ));
    }
    Ok(())
}

/// A link name the kernel would accept, checked up front for a clear error.
fn check_link_name(field: &str, name: &str) -> Result<()> {
    match ifname_problem(name) {
        None => Ok(()),
        Some(_) => Err(invalid(
            field,
            "an interface name (1-15 characters, no '/', ':' or spaces)",
            &Value::from(name),
        )),
    }
}

/// "mtu must be ..., not 70000", with the value shortened when it is long.
fn invalid(field: &str, must_be: &str, value: &Value) -> Error {
    const MAX: usize = 64;
    let mut shown = value.to_string();
    if shown.len() > MAX {
        let mut end = MAX;
        while !shown.is_char_boundary(end) {
            end -= 1;
        }
        shown.truncate(end);
        shown.push_str("...");
    }
    Error::invalid_config(format!("{field} must be {must_be}, not {shown}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cni_common::config::NetConf;
    use cni_common::env::CmdArgs;
    use cni_common::version::SpecVersion;
    use cni_common::Code;
    use serde_json::json;

    fn request(conf: Value, cni_args: &str) -> Request<MacvtapConf> {
        let text = conf.to_string();
        let env = [
            ("CNI_COMMAND", "ADD"),
            ("CNI_CONTAINERID", "c1"),
            ("CNI_NETNS", "/run/netns/x"),
            ("CNI_IFNAME", "net1"),
            ("CNI_ARGS", cni_args),
        ];
        let cmd = CmdArgs::from_env(|k| {
            env.iter()
                .find(|(key, _)| *key == k)
                .map(|(_, v)| v.to_string())
        })
        .expect("valid environment");
        Request {
            cmd,
            conf: NetConf::parse(text.as_bytes()).expect("decodes"),
            version: SpecVersion::V1_1_0,
            prev_result: None,
            stdin: text.into_bytes(),
            raw: conf,
        }
    }

    fn resolve(fields: Value) -> Result<Settings> {
        let mut conf = json!({"cniVersion": "1.1.0", "name": "n", "type": "macvtap"});
        if let (Some(c), Some(f)) = (conf.as_object_mut(), fields.as_object()) {
            c.extend(f.clone());
        }
        Settings::resolve(&request(conf, ""))
    }

    #[test]
    fn device_id_alone_takes_macvtap_cni_defaults() {
        let s = resolve(json!({"deviceID": "dp0Mvp1"})).expect("valid");
        assert_eq!(s.source, Some(Source::Device("dp0Mvp1".into())));
        assert_eq!(
            (s.owner, s.group, s.mtu, s.promisc),
            (107, 107, None, false)
        );
    }

    #[test]
    fn master_defaults_to_bridge_mode() {
        let s = resolve(json!({"master": "eth1"})).expect("valid");
        assert_eq!(
            s.source,
            Some(Source::Master {
                master: "eth1".into(),
                mode: "bridge"
            })
        );
    }

    #[test]
    fn runtime_config_device_id_wins_over_the_field() {
        let s = resolve(json!({"deviceID": "old", "runtimeConfig": {"deviceID": "new"}}))
            .expect("valid");
        assert_eq!(s.source, Some(Source::Device("new".into())));
    }

    #[test]
    fn neither_source_is_allowed_until_one_is_needed() {
        let s = resolve(json!({})).expect("valid for STATUS and GC");
        assert_eq!(s.source().expect_err("needed").code(), Code::InvalidConfig);
    }

    #[test]
    fn mtu_zero_means_unchanged() {
        assert_eq!(
            resolve(json!({"master": "eth1", "mtu": 0}))
                .expect("ok")
                .mtu,
            None
        );
        assert_eq!(
            resolve(json!({"master": "eth1", "mtu": 68}))
                .expect("ok")
                .mtu,
            Some(68)
        );
    }

    #[test]
    fn invalid_values_are_code_7_naming_their_field() {
        for (fields, field) in [
            (json!({"deviceID": "a", "master": "b"}), "deviceID"),
            (json!({"deviceID": "a", "mode": "vepa"}), "mode"),
            (json!({"mode": "vepa"}), "mode"),
            (json!({"master": "eth1", "mode": "source"}), "mode"),
            (json!({"master": "eth1", "mode": 3}), "mode"),
            (json!({"master": "eth1/x"}), "master"),
            (json!({"master": "a-name-far-too-long"}), "master"),
            (json!({"master": 7}), "master"),
            (json!({"deviceID": ["x"]}), "deviceID"),
            (json!({"deviceID": "x".repeat(254)}), "deviceID"),
            (json!({"deviceID": "a\u{0}b"}), "deviceID"),
            (json!({"master": "eth1", "mtu": 67}), "mtu"),
            (json!({"master": "eth1", "mtu": 65536}), "mtu"),
            (json!({"master": "eth1", "mtu": -1}), "mtu"),
            (json!({"master": "eth1", "mtu": "1500"}), "mtu"),
            (json!({"master": "eth1", "mtu": 1500.5}), "mtu"),
            (
                json!({"master": "eth1", "promiscMode": "yes"}),
                "promiscMode",
            ),
            (json!({"master": "eth1", "owner": "qemu"}), "owner"),
            (json!({"master": "eth1", "owner": -1}), "owner"),
            (json!({"master": "eth1", "owner": 4294967295u64}), "owner"),
            (json!({"master": "eth1", "group": 1e3}), "group"),
            (json!({"master": "eth1", "mac": "zz"}), "mac"),
            (json!({"master": "eth1", "mac": "01:00:5e:00:00:01"}), "mac"),
            (
                json!({"master": "eth1", "runtimeConfig": {"mac": "bad"}}),
                "runtimeConfig.mac",
            ),
            (
                json!({"master": "eth1", "args": {"cni": {"mac": 5}}}),
                "args.cni.mac",
            ),
        ] {
            let e = resolve(fields.clone()).expect_err(&fields.to_string());
            assert_eq!(e.code(), Code::InvalidConfig, "{fields}");
            assert!(e.msg().contains(field), "{fields}: {}", e.msg());
        }
    }

    #[test]
    fn long_values_are_shortened_in_errors() {
        let e = resolve(json!({"master": "eth1", "mode": "x".repeat(4096)})).expect_err("bad");
        assert!(e.msg().len() < 200, "{}", e.msg());
    }

    #[test]
    fn mac_precedence_is_args_cni_over_runtime_config_over_cni_args_over_config() {
        let base = json!({"cniVersion": "1.1.0", "name": "n", "master": "eth1",
            "mac": "02:00:00:00:00:01"});
        let mac = |conf: &Value, args: &str| {
            Settings::resolve(&request(conf.clone(), args))
                .expect("valid")
                .mac
                .map(|m| m.to_string())
        };
        assert_eq!(mac(&base, "").as_deref(), Some("02:00:00:00:00:01"));
        let args = "MAC=02:00:00:00:00:02";
        assert_eq!(mac(&base, args).as_deref(), Some("02:00:00:00:00:02"));
        let mut conf = base.clone();
        conf["runtimeConfig"] = json!({"mac": "02:00:00:00:00:03"});
        assert_eq!(mac(&conf, args).as_deref(), Some("02:00:00:00:00:03"));
        conf["args"] = json!({"cni": {"mac": "02:00:00:00:00:04"}});
        assert_eq!(mac(&conf, args).as_deref(), Some("02:00:00:00:00:04"));
    }

    #[test]
    fn unknown_cni_args_are_refused_unless_ignored() {
        let conf = json!({"cniVersion": "1.1.0", "name": "n", "master": "eth1"});
        let e = Settings::resolve(&request(conf.clone(), "FOO=1")).expect_err("unknown");
        assert_eq!(e.code(), Code::InvalidEnvironment);
        assert!(Settings::resolve(&request(conf, "IgnoreUnknown=1;FOO=1")).is_ok());
    }
}
