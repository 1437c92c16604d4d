//! Property tests: the config, result and CNI_ARGS parsers return errors, never panic, whatever
//! bytes a runtime (or an attacker with write access to a NetworkAttachmentDefinition) sends.

use cni_common::args::CniArgs;
use cni_common::config::NetConf;
use cni_common::result::CniResult;
use cni_common::skel::{dispatch, Plugin, Request};
use cni_common::version::SpecVersion;
use cni_common::Result;
use proptest::prelude::*;
use serde_json::{Map, Value};

/// Keys the parsers look at, so random objects hit the interesting paths and not only `other`.
const KEYS: &[&str] = &[
    "cniVersion",
    "cniVersions",
    "name",
    "type",
    "ipam",
    "dns",
    "runtimeConfig",
    "args",
    "cni",
    "prevResult",
    "capabilities",
    "mac",
    "ips",
    "interfaces",
    "routes",
    "address",
    "gateway",
    "interface",
    "version",
    "dst",
    "gw",
    "ip4",
    "ip6",
    "ip",
    "nameservers",
    "mtu",
    "sandbox",
    "cni.dev/valid-attachments",
    "containerID",
    "ifname",
    "deviceID",
    "sysctl",
];

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop_oneof![
            Just("1.0.0".to_string()),
            Just("0.2.0".to_string()),
            Just("10.0.0.1/24".to_string()),
            Just("fd00::1".to_string()),
            Just("aa:bb:cc:dd:ee:ff".to_string()),
            ".{0,24}",
        ]
        .prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..8).prop_map(|kv| {
                let map: Map<String, Value> =
                    kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
                Value::Object(map)
            }),
        ]
    })
}

#[derive(Debug, serde::Deserialize)]
struct AnyConf {
    #[serde(default)]
    mtu: Option<u32>,
}

struct Echo;

impl Plugin for Echo {
    type Config = AnyConf;

    fn add(&self, req: &Request<AnyConf>) -> Result<CniResult> {
        let _ = req.conf.plugin.mtu;
        Ok(req.prev_result.clone().unwrap_or_default())
    }

    fn del(&self, _req: &Request<AnyConf>) -> Result<()> {
        Ok(())
    }

    fn check(&self, _req: &Request<AnyConf>) -> Result<()> {
        Ok(())
    }
}

fn add_env(k: &str) -> Option<String> {
    match k {
        "CNI_COMMAND" => Some("ADD".into()),
        "CNI_CONTAINERID" => Some("c1".into()),
        "CNI_NETNS" => Some("/run/netns/none".into()),
        "CNI_IFNAME" => Some("eth0".into()),
        _ => None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn cni_args_parser_never_panics(s in ".{0,200}") {
        let _ = CniArgs::parse(&s);
    }

    #[test]
    fn cni_args_parser_never_panics_on_pair_shaped_input(
        pairs in prop::collection::vec(("[A-Za-z_=]{0,12}", "[ -~]{0,12}"), 0..8)
    ) {
        let raw = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(";");
        if let Ok(args) = CniArgs::parse(&raw) {
            let _ = args.check_known(&["MAC", "IP"]);
            let _ = args.get("MAC");
        }
    }

    #[test]
    fn config_parser_never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = NetConf::<AnyConf>::parse(&bytes);
    }

    #[test]
    fn config_parser_never_panics_on_json(v in json_value()) {
        let bytes = v.to_string();
        if let Ok(conf) = NetConf::<AnyConf>::parse(bytes.as_bytes()) {
            let _ = conf.runtime_config_mac();
            let _ = conf.args_mac();
            let _ = conf.gc_valid_attachments();
        }
    }

    #[test]
    fn result_parser_never_panics_and_prints_what_it_parsed(v in json_value()) {
        for version in SpecVersion::ALL {
            if let Ok(r) = CniResult::from_value(&v, version) {
                for out in SpecVersion::ALL {
                    let _ = r.to_value(out);
                }
            }
        }
    }

    #[test]
    fn dispatcher_always_prints_one_json_value(v in json_value()) {
        let stdin = v.to_string();
        let outcome = dispatch(&Echo, add_env, stdin.as_bytes());
        let parsed: Value = serde_json::from_str(&outcome.stdout).expect("stdout is JSON");
        if !outcome.ok {
            prop_assert!(parsed["code"].is_u64());
            prop_assert!(parsed["msg"].is_string());
        }
    }
}
