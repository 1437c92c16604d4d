//! ADD results for every spec version, and the conversions libcni performs between them.
//!
//! One in-memory model (the 1.1.0 shape, a superset of the others) is parsed from and printed as
//! any version's layout:
//! - 0.1.0 / 0.2.0: `ip4` and `ip6`, each with nested `routes`; at most one address per family.
//! - 0.3.0 / 0.3.1 / 0.4.0: `interfaces`, `ips` with a required `version`, flat `routes`.
//! - 1.0.0 / 1.1.0: like 0.4.0 without `ips[].version`; 1.1.0 adds interface `mtu`, `socketPath`,
//!   `pciID` and route `mtu`, `advmss`, `priority`, `table`, `scope`.

use std::net::IpAddr;

use ipnetwork::IpNetwork;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::error::{Code, Context, ContextAs, Error, Result};
use crate::version::{ResultFormat, SpecVersion};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CniResult {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<Interface>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ips: Vec<IpConfig>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<Route>,
    #[serde(default, skip_serializing_if = "Dns::is_empty")]
    pub dns: Dns,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Interface {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mac: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sandbox: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub socket_path: String,
    #[serde(default, rename = "pciID", skip_serializing_if = "String::is_empty")]
    pub pci_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IpConfig {
    pub address: IpNetwork,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<IpAddr>,
    /// Index into `interfaces`; some plugins write -1 (spec-upgrades.md), so it is signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Route {
    pub dst: IpNetwork,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gw: Option<IpAddr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advmss: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Dns {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nameservers: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub search: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}

impl Dns {
    pub fn is_empty(&self) -> bool {
        self.nameservers.is_empty()
            && self.domain.is_empty()
            && self.search.is_empty()
            && self.options.is_empty()
    }
}

/// The 0.1.0/0.2.0 per-family object.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct LegacyIp {
    ip: IpNetwork,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gateway: Option<IpAddr>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    routes: Vec<LegacyRoute>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct LegacyRoute {
    dst: IpNetwork,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gw: Option<IpAddr>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct LegacyResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ip4: Option<LegacyIp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ip6: Option<LegacyIp>,
    #[serde(default, skip_serializing_if = "Dns::is_empty")]
    dns: Dns,
}

impl CniResult {
    /// Parses a result (a plugin's stdout, or a prevResult) laid out as `version` says. A
    /// `cniVersion` inside the value wins over `version`, as libcni's creator picks the type from
    /// it; a value without one is read in `version` (libcni's fixupResultVersion).
    pub fn from_value(value: &Value, version: SpecVersion) -> Result<CniResult> {
        let own = value
            .get("cniVersion")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let version = match own {
            Some(v) => SpecVersion::parse(v).context("result")?,
            None => version,
        };
        let invalid = || format!("invalid {version} result");
        match version.result_format() {
            ResultFormat::Legacy => {
                let legacy: LegacyResult =
                    serde_json::from_value(value.clone()).with_context(invalid)?;
                Ok(CniResult::from_legacy(legacy))
            }
            // `ips[].version` (0.x) is ignored on input: the address says its family.
            ResultFormat::V04 | ResultFormat::V1 => {
                serde_json::from_value(value.clone()).with_context(invalid)
            }
        }
    }

    fn from_legacy(legacy: LegacyResult) -> CniResult {
        let mut result = CniResult {
            dns: legacy.dns,
            ..CniResult::default()
        };
        for ip in [legacy.ip4, legacy.ip6].into_iter().flatten() {
            result.ips.push(IpConfig {
                address: ip.ip,
                gateway: ip.gateway,
                interface: None,
            });
            result.routes.extend(ip.routes.into_iter().map(|r| Route {
                dst: r.dst,
                gw: r.gw,
                ..Route::plain()
            }));
        }
        result
    }

    /// Prints the result in `version`'s layout, with `cniVersion` set.
    pub fn to_value(&self, version: SpecVersion) -> Result<Value> {
        let mut value = match version.result_format() {
            ResultFormat::V1 => serde_json::to_value(self),
            ResultFormat::V04 => serde_json::to_value(self.as_v04()),
            ResultFormat::Legacy => serde_json::to_value(self.as_legacy(version)?),
        }
        // Our own result that does not encode is a failure of the plugin (100), not JSON it was
        // given (6).
        .context_as(Code::System, "encoding result")?;
        if let Value::Object(map) = &mut value {
            map.insert("cniVersion".into(), json!(version.as_str()));
        }
        Ok(value)
    }

    /// 0.3.x/0.4.0: interfaces lose the 1.1 fields; each IP gets `version` by its family.
    fn as_v04(&self) -> Value {
        let mut map = Map::new();
        if !self.interfaces.is_empty() {
            let ifaces: Vec<Value> = self
                .interfaces
                .iter()
                .map(|i| {
                    let mut o = Map::new();
                    o.insert("name".into(), json!(i.name));
                    if !i.mac.is_empty() {
                        o.insert("mac".into(), json!(i.mac));
                    }
                    if !i.sandbox.is_empty() {
                        o.insert("sandbox".into(), json!(i.sandbox));
                    }
                    Value::Object(o)
                })
                .collect();
            map.insert("interfaces".into(), Value::Array(ifaces));
        }
        if !self.ips.is_empty() {
            let ips: Vec<Value> = self
                .ips
                .iter()
                .map(|ip| {
                    let mut o = Map::new();
                    let family = if ip.address.is_ipv4() { "4" } else { "6" };
                    o.insert("version".into(), json!(family));
                    o.insert("address".into(), json!(ip.address.to_string()));
                    if let Some(gw) = ip.gateway {
                        o.insert("gateway".into(), json!(gw.to_string()));
                    }
                    if let Some(idx) = ip.interface {
                        o.insert("interface".into(), json!(idx));
                    }
                    Value::Object(o)
                })
                .collect();
            map.insert("ips".into(), Value::Array(ips));
        }
        // Routes share one Go type across versions, so their extra fields survive the way down.
        if !self.routes.is_empty() {
            map.insert("routes".into(), json!(self.routes));
        }
        if !self.dns.is_empty() {
            map.insert("dns".into(), json!(self.dns));
        }
        Value::Object(map)
    }

    /// 0.1.0/0.2.0 keep only the first IPv4 and the first IPv6 address, with the routes of the
    /// same family; a result without addresses cannot be written in these versions.
    fn as_legacy(&self, version: SpecVersion) -> Result<LegacyResult> {
        let pick = |v4: bool| {
            self.ips
                .iter()
                .find(|ip| ip.address.is_ipv4() == v4)
                .map(|ip| LegacyIp {
                    ip: ip.address,
                    gateway: ip.gateway,
                    routes: self
                        .routes
                        .iter()
                        .filter(|r| r.dst.is_ipv4() == v4)
                        .map(|r| LegacyRoute {
                            dst: r.dst,
                            gw: r.gw,
                        })
                        .collect(),
                })
        };
        let legacy = LegacyResult {
            ip4: pick(true),
            ip6: pick(false),
            dns: self.dns.clone(),
        };
        if legacy.ip4.is_none() && legacy.ip6.is_none() {
            return Err(Error::incompatible_version(format!(
                "cannot convert result to {version}: no IP addresses (a result without addresses needs cniVersion 0.3.0 or later)"
            )));
        }
        Ok(legacy)
    }
}

impl Route {
    /// A route with no 1.1 extras.
    pub fn plain() -> Route {
        Route {
            dst: IpNetwork::V4(ipnetwork::Ipv4Network::from(
                std::net::Ipv4Addr::UNSPECIFIED,
            )),
            gw: None,
            mtu: None,
            advmss: None,
            priority: None,
            table: None,
            scope: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> CniResult {
        let v: Value = json!({
            "cniVersion": "1.1.0",
            "interfaces": [
                {"name": "cni0", "mac": "aa:bb:cc:dd:ee:01"},
                {"name": "eth0", "mac": "aa:bb:cc:dd:ee:02", "mtu": 1400,
                 "sandbox": "/run/netns/x", "socketPath": "/tmp/s", "pciID": "0000:00:01.0"}
            ],
            "ips": [
                {"address": "10.1.0.5/16", "gateway": "10.1.0.1", "interface": 1},
                {"address": "10.2.0.5/16", "interface": 1},
                {"address": "fd00::5/64", "gateway": "fd00::1", "interface": 1}
            ],
            "routes": [
                {"dst": "0.0.0.0/0", "gw": "10.1.0.1", "mtu": 1300},
                {"dst": "::/0", "gw": "fd00::1"}
            ],
            "dns": {"nameservers": ["10.1.0.2"], "search": ["example.test"]}
        });
        CniResult::from_value(&v, SpecVersion::V1_1_0).expect("parses")
    }

    #[test]
    fn v1_1_round_trips_every_field() {
        let r = sample();
        let out = r.to_value(SpecVersion::V1_1_0).expect("prints");
        assert_eq!(out["interfaces"][1]["mtu"], 1400);
        assert_eq!(out["interfaces"][1]["pciID"], "0000:00:01.0");
        assert_eq!(out["routes"][0]["mtu"], 1300);
        assert!(out["ips"][0].get("version").is_none());
        let back = CniResult::from_value(&out, SpecVersion::V1_1_0).expect("re-parses");
        assert_eq!(back, r);
    }

    #[test]
    fn v1_0_only_changes_the_version_string() {
        let out = sample().to_value(SpecVersion::V1_0_0).expect("prints");
        assert_eq!(out["cniVersion"], "1.0.0");
        assert_eq!(out["ips"].as_array().map(Vec::len), Some(3));
    }

    #[test]
    fn v04_adds_ip_version_and_drops_1_1_interface_fields() {
        let out = sample().to_value(SpecVersion::V0_4_0).expect("prints");
        assert_eq!(out["cniVersion"], "0.4.0");
        assert_eq!(out["ips"][0]["version"], "4");
        assert_eq!(out["ips"][2]["version"], "6");
        assert_eq!(out["ips"][0]["interface"], 1);
        let eth0 = &out["interfaces"][1];
        assert!(eth0.get("mtu").is_none());
        assert!(eth0.get("socketPath").is_none());
        assert!(eth0.get("pciID").is_none());
        assert_eq!(eth0["sandbox"], "/run/netns/x");
    }

    #[test]
    fn v03x_share_the_v04_layout() {
        for v in [SpecVersion::V0_3_0, SpecVersion::V0_3_1] {
            let out = sample().to_value(v).expect("prints");
            assert_eq!(out["cniVersion"], v.as_str());
            assert_eq!(out["ips"][1]["version"], "4");
        }
    }

    #[test]
    fn legacy_keeps_first_ipv4_and_first_ipv6_with_routes_by_family() {
        let out = sample().to_value(SpecVersion::V0_2_0).expect("prints");
        assert_eq!(out["cniVersion"], "0.2.0");
        assert_eq!(out["ip4"]["ip"], "10.1.0.5/16");
        assert_eq!(out["ip4"]["gateway"], "10.1.0.1");
        assert_eq!(out["ip4"]["routes"][0]["dst"], "0.0.0.0/0");
        assert!(out["ip4"]["routes"][0].get("mtu").is_none());
        assert_eq!(out["ip6"]["ip"], "fd00::5/64");
        assert_eq!(out["ip6"]["routes"][0]["dst"], "::/0");
        assert!(out.get("interfaces").is_none());
        assert_eq!(out["dns"]["nameservers"][0], "10.1.0.2");
    }

    #[test]
    fn legacy_without_addresses_fails() {
        let r = CniResult {
            interfaces: vec![Interface {
                name: "eth0".into(),
                ..Interface::default()
            }],
            ..CniResult::default()
        };
        for v in [SpecVersion::V0_1_0, SpecVersion::V0_2_0] {
            let e = r.to_value(v).expect_err("no IPs");
            assert!(e.msg().contains("no IP addresses"), "{}", e.msg());
        }
    }

    #[test]
    fn legacy_parses_into_flat_ips_and_routes() {
        let v = json!({
            "cniVersion": "0.2.0",
            "ip4": {"ip": "10.1.0.5/16", "gateway": "10.1.0.1",
                    "routes": [{"dst": "0.0.0.0/0", "gw": "10.1.0.1"}]},
            "ip6": {"ip": "fd00::5/64"},
            "dns": {}
        });
        let r = CniResult::from_value(&v, SpecVersion::V0_2_0).expect("parses");
        assert_eq!(r.ips.len(), 2);
        assert_eq!(r.routes.len(), 1);
        assert!(r.interfaces.is_empty());
        let up = r.to_value(SpecVersion::V0_4_0).expect("prints");
        assert_eq!(up["ips"][1]["version"], "6");
    }

    #[test]
    fn result_without_cni_version_is_read_in_the_config_version() {
        let v = json!({"ip4": {"ip": "10.1.0.5/16"}});
        let r = CniResult::from_value(&v, SpecVersion::V0_1_0).expect("parses");
        assert_eq!(r.ips[0].address.to_string(), "10.1.0.5/16");
    }

    #[test]
    fn v04_input_with_ip_version_and_empty_dns_is_accepted() {
        let v = json!({
            "cniVersion": "0.4.0",
            "interfaces": [{"name": "eth0", "sandbox": "/x"}],
            "ips": [{"version": "4", "address": "10.1.0.5/16", "interface": -1}],
            "dns": {}
        });
        let r = CniResult::from_value(&v, SpecVersion::V1_0_0).expect("parses");
        assert_eq!(r.ips[0].interface, Some(-1));
        let out = r.to_value(SpecVersion::V1_0_0).expect("prints");
        assert!(out.get("dns").is_none());
    }

    #[test]
    fn malformed_results_are_decoding_errors() {
        for v in [
            json!({"ips": [{"address": "not-an-ip"}]}),
            json!({"interfaces": "eth0"}),
            json!({"ips": [{"address": "10.0.0.1/40"}]}),
        ] {
            let e = CniResult::from_value(&v, SpecVersion::V1_0_0).expect_err("bad");
            assert_eq!(e.code(), crate::error::Code::Decoding, "{v}");
        }
    }
}
