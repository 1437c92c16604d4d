//! The interfaces, addresses and routes of a result, whatever its format: what the suite
//! compares with the live namespaces and with a prevResult.

use super::result::parse_cidr;
use serde_json::{Map, Value};
use std::net::IpAddr;

/// An interface as listed in a result.
#[derive(Clone, Debug, PartialEq)]
pub struct ResultInterface {
    pub name: String,
    pub mac: Option<String>,
    pub sandbox: Option<String>,
}

/// An address as listed in a result.
#[derive(Clone, Debug, PartialEq)]
pub struct ResultIp {
    pub address: (IpAddr, u8),
    pub text: String,
    pub gateway: Option<IpAddr>,
    pub interface: Option<usize>,
}

/// The interfaces and addresses of a result, whatever its format. Entries
/// that do not parse are left out (validate_result reports them).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResultSummary {
    pub interfaces: Vec<ResultInterface>,
    pub ips: Vec<ResultIp>,
    /// Routes (top-level, or nested in ip4/ip6 for 0.1.0/0.2.0): dst text, dst, gw.
    pub routes: Vec<(String, (IpAddr, u8), Option<IpAddr>)>,
}

fn summarize_routes(value: Option<&Value>, out: &mut Vec<(String, (IpAddr, u8), Option<IpAddr>)>) {
    for route in value.and_then(Value::as_array).into_iter().flatten() {
        let Some(text) = route.get("dst").and_then(Value::as_str) else {
            continue;
        };
        let Some(dst) = parse_cidr(text) else {
            continue;
        };
        let gw = route
            .get("gw")
            .and_then(Value::as_str)
            .and_then(|g| g.parse().ok());
        out.push((text.to_string(), dst, gw));
    }
}

fn summarize_ip(obj: &Map<String, Value>, addr_key: &str) -> Option<ResultIp> {
    let text = obj.get(addr_key)?.as_str()?.to_string();
    let address = parse_cidr(&text)?;
    let gateway = obj
        .get("gateway")
        .and_then(Value::as_str)
        .and_then(|g| g.parse().ok());
    let interface = obj
        .get("interface")
        .and_then(Value::as_u64)
        .map(|n| n as usize);
    Some(ResultIp {
        address,
        text,
        gateway,
        interface,
    })
}

pub fn summarize(result: &Value) -> ResultSummary {
    let mut s = ResultSummary::default();
    let Some(obj) = result.as_object() else {
        return s;
    };
    for key in ["ip4", "ip6"] {
        if let Some(block) = obj.get(key).and_then(Value::as_object) {
            if let Some(ip) = summarize_ip(block, "ip") {
                s.ips.push(ip);
            }
            summarize_routes(block.get("routes"), &mut s.routes);
        }
    }
    summarize_routes(obj.get("routes"), &mut s.routes);
    if let Some(list) = obj.get("interfaces").and_then(Value::as_array) {
        for iface in list {
            let Some(io) = iface.as_object() else {
                continue;
            };
            let name = io
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let mac = io
                .get("mac")
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty())
                .map(str::to_string);
            let sandbox = io
                .get("sandbox")
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty())
                .map(str::to_string);
            s.interfaces.push(ResultInterface { name, mac, sandbox });
        }
    }
    if let Some(list) = obj.get("ips").and_then(Value::as_array) {
        for ip in list {
            if let Some(parsed) = ip.as_object().and_then(|o| summarize_ip(o, "address")) {
                s.ips.push(parsed);
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_summary_takes_routes_from_ip4_blocks_and_the_top_level() {
        let s = summarize(&json!({
            "ip4": {"ip": "10.0.0.2/24", "routes": [{"dst": "0.0.0.0/0", "gw": "10.0.0.1"}]},
            "routes": [{"dst": "fd00::/8"}]
        }));
        assert_eq!(s.routes.len(), 2);
        assert_eq!(s.routes[0].2, "10.0.0.1".parse().ok());
        assert_eq!(s.routes[1].2, None);
    }

    #[test]
    fn a_summary_keeps_the_interface_each_address_is_attached_to() {
        let s = summarize(&json!({
            "cniVersion": "1.0.0",
            "interfaces": [{"name": "net1", "sandbox": "/run/netns/x"}],
            "ips": [{"address": "192.0.2.10/24", "interface": 0}]
        }));
        assert_eq!(s.interfaces.len(), 1);
        assert_eq!(s.ips[0].interface, Some(0));
        assert!(s.routes.is_empty());
    }
}
