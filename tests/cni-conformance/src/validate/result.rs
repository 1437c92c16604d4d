//! The ADD result: well-formed in the format of the requested version.

use super::versions::{family, Family};
use serde_json::{Map, Value};
use std::net::IpAddr;

/// Parse `a.b.c.d/len` or `x::y/len`.
pub fn parse_cidr(text: &str) -> Option<(IpAddr, u8)> {
    let (addr, len) = text.split_once('/')?;
    let ip: IpAddr = addr.parse().ok()?;
    let len: u8 = len.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    (len <= max).then_some((ip, len))
}

fn is_mac(text: &str) -> bool {
    let octets: Vec<&str> = text.split(':').collect();
    matches!(octets.len(), 6 | 8 | 20)
        && octets
            .iter()
            .all(|o| o.len() == 2 && o.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Everything wrong with a result, reported together.
#[derive(Default)]
pub(super) struct Problems(Vec<String>);

impl Problems {
    pub(super) fn push(&mut self, p: String) {
        self.0.push(p);
    }
    pub(super) fn into_result(self) -> Result<(), String> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(self.0.join("; "))
        }
    }
}

fn check_optional_string(obj: &Map<String, Value>, key: &str, ctx: &str, p: &mut Problems) {
    if let Some(v) = obj.get(key) {
        if !v.is_string() {
            p.push(format!("{ctx}.{key} is not a string: {v}"));
        }
    }
}

fn check_optional_ip(
    obj: &Map<String, Value>,
    key: &str,
    ctx: &str,
    p: &mut Problems,
) -> Option<IpAddr> {
    match obj.get(key) {
        None => None,
        Some(Value::String(s)) => match s.parse::<IpAddr>() {
            Ok(ip) => Some(ip),
            Err(_) => {
                p.push(format!("{ctx}.{key} is not an IP address: {s:?}"));
                None
            }
        },
        Some(other) => {
            p.push(format!("{ctx}.{key} is not a string: {other}"));
            None
        }
    }
}

fn check_required_cidr(
    obj: &Map<String, Value>,
    key: &str,
    ctx: &str,
    p: &mut Problems,
) -> Option<(IpAddr, u8)> {
    match obj.get(key) {
        Some(Value::String(s)) => {
            let parsed = parse_cidr(s);
            if parsed.is_none() {
                p.push(format!("{ctx}.{key} is not an address/prefix: {s:?}"));
            }
            parsed
        }
        Some(other) => {
            p.push(format!("{ctx}.{key} is not a string: {other}"));
            None
        }
        None => {
            p.push(format!("{ctx} has no `{key}`"));
            None
        }
    }
}

fn check_routes(value: &Value, ctx: &str, family: Family, p: &mut Problems) {
    let Some(routes) = value.as_array() else {
        p.push(format!("{ctx} is not a list"));
        return;
    };
    for (i, route) in routes.iter().enumerate() {
        let rctx = format!("{ctx}[{i}]");
        let Some(obj) = route.as_object() else {
            p.push(format!("{rctx} is not an object"));
            continue;
        };
        let dst = check_required_cidr(obj, "dst", &rctx, p);
        let gw = check_optional_ip(obj, "gw", &rctx, p);
        if let (Some((d, _)), Some(g)) = (dst, gw) {
            if d.is_ipv4() != g.is_ipv4() {
                p.push(format!(
                    "{rctx}: gw {g} and dst {d} are of different address families"
                ));
            }
        }
        if family == Family::V1 {
            for key in ["mtu", "advmss", "priority", "table", "scope"] {
                if let Some(v) = obj.get(key) {
                    if !v.is_u64() {
                        p.push(format!("{rctx}.{key} is not an unsigned integer: {v}"));
                    }
                }
            }
        }
    }
}

fn check_dns(value: &Value, p: &mut Problems) {
    let Some(obj) = value.as_object() else {
        p.push(format!("dns is not an object: {value}"));
        return;
    };
    for key in ["nameservers", "search", "options"] {
        if let Some(v) = obj.get(key) {
            let ok = v.as_array().is_some_and(|a| a.iter().all(Value::is_string));
            if !ok {
                p.push(format!("dns.{key} is not a list of strings: {v}"));
            }
        }
    }
    check_optional_string(obj, "domain", "dns", p);
}

fn check_ip_block(value: &Value, key: &str, want_v4: bool, p: &mut Problems) {
    let Some(obj) = value.as_object() else {
        p.push(format!("{key} is not an object"));
        return;
    };
    if let Some((ip, _)) = check_required_cidr(obj, "ip", key, p) {
        if ip.is_ipv4() != want_v4 {
            p.push(format!("{key}.ip {ip} is of the wrong address family"));
        }
    }
    if let Some(gw) = check_optional_ip(obj, "gateway", key, p) {
        if gw.is_ipv4() != want_v4 {
            p.push(format!("{key}.gateway {gw} is of the wrong address family"));
        }
    }
    if let Some(routes) = obj.get("routes") {
        check_routes(routes, &format!("{key}.routes"), Family::V02, p);
    }
}

/// Check that `result` is a well-formed ADD result in the format of
/// `requested` (which must be a known version), with `cniVersion` equal to it.
pub fn validate_result(requested: &str, result: &Value) -> Result<(), String> {
    let family = family(requested).ok_or_else(|| format!("unknown version {requested}"))?;
    let obj = result
        .as_object()
        .ok_or("the result is not a JSON object")?;
    let mut p = Problems::default();
    match obj.get("cniVersion") {
        Some(Value::String(v)) if v == requested => {}
        Some(other) => p.push(format!(
            "result cniVersion is {other}, requested {requested:?}"
        )),
        None => p.push(format!(
            "result has no cniVersion (requested {requested:?})"
        )),
    }
    if let Some(dns) = obj.get("dns") {
        check_dns(dns, &mut p);
    }
    match family {
        Family::V02 => validate_v02(obj, &mut p),
        Family::V04 | Family::V1 => validate_v04_v1(obj, family, &mut p),
    }
    p.into_result()
}

fn validate_v02(obj: &Map<String, Value>, p: &mut Problems) {
    for key in ["interfaces", "ips", "routes"] {
        if obj.contains_key(key) {
            p.push(format!(
                "`{key}` does not exist in the 0.1.0/0.2.0 result format"
            ));
        }
    }
    let ip4 = obj.get("ip4").filter(|v| !v.is_null());
    let ip6 = obj.get("ip6").filter(|v| !v.is_null());
    if ip4.is_none() && ip6.is_none() {
        p.push("a 0.1.0/0.2.0 result needs `ip4` or `ip6`".into());
    }
    if let Some(v) = ip4 {
        check_ip_block(v, "ip4", true, p);
    }
    if let Some(v) = ip6 {
        check_ip_block(v, "ip6", false, p);
    }
}

fn validate_v04_v1(obj: &Map<String, Value>, family: Family, p: &mut Problems) {
    for key in ["ip4", "ip6"] {
        if obj.contains_key(key) {
            p.push(format!(
                "`{key}` belongs to the 0.1.0/0.2.0 format, not to this version"
            ));
        }
    }
    let mut n_interfaces = 0;
    match obj.get("interfaces") {
        None => {}
        Some(Value::Array(list)) => {
            n_interfaces = list.len();
            for (i, iface) in list.iter().enumerate() {
                let ctx = format!("interfaces[{i}]");
                let Some(io) = iface.as_object() else {
                    p.push(format!("{ctx} is not an object"));
                    continue;
                };
                match io.get("name") {
                    Some(Value::String(n)) if !n.is_empty() => {}
                    other => p.push(format!(
                        "{ctx}.name is missing or not a non-empty string: {other:?}"
                    )),
                }
                match io.get("mac") {
                    None => {}
                    Some(Value::String(m)) if m.is_empty() || is_mac(m) => {}
                    Some(other) => p.push(format!("{ctx}.mac is not a MAC address: {other}")),
                }
                check_optional_string(io, "sandbox", &ctx, p);
                if family == Family::V1 {
                    if let Some(v) = io.get("mtu") {
                        if !v.is_u64() {
                            p.push(format!("{ctx}.mtu is not an unsigned integer: {v}"));
                        }
                    }
                    check_optional_string(io, "socketPath", &ctx, p);
                    check_optional_string(io, "pciID", &ctx, p);
                }
            }
        }
        Some(other) => p.push(format!("interfaces is not a list: {other}")),
    }
    match obj.get("ips") {
        None => {}
        Some(Value::Array(list)) => {
            for (i, ip) in list.iter().enumerate() {
                let ctx = format!("ips[{i}]");
                let Some(io) = ip.as_object() else {
                    p.push(format!("{ctx} is not an object"));
                    continue;
                };
                let addr = check_required_cidr(io, "address", &ctx, p);
                let gw = check_optional_ip(io, "gateway", &ctx, p);
                if let (Some((a, _)), Some(g)) = (addr, gw) {
                    if a.is_ipv4() != g.is_ipv4() {
                        p.push(format!(
                            "{ctx}: gateway {g} and address {a} are of different address families"
                        ));
                    }
                }
                match (family, io.get("version")) {
                    (Family::V04, None) => {
                        p.push(format!("{ctx}.version is required in 0.3.x/0.4.0 results"))
                    }
                    (Family::V04, Some(Value::String(v))) => {
                        if v != "4" && v != "6" {
                            p.push(format!("{ctx}.version must be \"4\" or \"6\", got {v:?}"));
                        } else if let Some((a, _)) = addr {
                            if (v == "4") != a.is_ipv4() {
                                p.push(format!("{ctx}.version {v:?} does not match address {a}"));
                            }
                        }
                    }
                    (Family::V04, Some(other)) => {
                        p.push(format!("{ctx}.version is not a string: {other}"))
                    }
                    (_, Some(_)) => p.push(format!(
                        "{ctx}.version was removed in 1.0.0 and must not be present"
                    )),
                    (_, None) => {}
                }
                if let Some(idx) = io.get("interface") {
                    match idx.as_u64() {
                        Some(n) if (n as usize) < n_interfaces => {}
                        _ => p.push(format!("{ctx}.interface {idx} is not an index into `interfaces` (which has {n_interfaces})")),
                    }
                }
            }
        }
        Some(other) => p.push(format!("ips is not a list: {other}")),
    }
    if let Some(routes) = obj.get("routes") {
        check_routes(routes, "routes", family, p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn v1_good() -> Value {
        json!({
            "cniVersion": "1.0.0",
            "interfaces": [
                {"name": "cnitest0", "mac": "ce:c4:8a:78:7d:8e"},
                {"name": "veth1", "mac": "9a:a0:b3:56:41:c1"},
                {"name": "net1", "mac": "0e:d9:68:95:2c:30", "sandbox": "/run/netns/x"}
            ],
            "ips": [{"interface": 2, "address": "10.99.0.4/24", "gateway": "10.99.0.1"}],
            "routes": [{"dst": "0.0.0.0/0", "gw": "10.99.0.1"}],
            "dns": {}
        })
    }

    fn v04_good(version: &str) -> Value {
        json!({
            "cniVersion": version,
            "interfaces": [{"name": "net1", "mac": "0e:d9:68:95:2c:30", "sandbox": "/run/netns/x"}],
            "ips": [
                {"version": "4", "interface": 0, "address": "10.99.0.4/24", "gateway": "10.99.0.1"},
                {"version": "6", "interface": 0, "address": "fd00::4/64"}
            ],
            "dns": {"nameservers": ["10.0.0.10"], "search": ["svc"], "domain": "x"}
        })
    }

    #[test]
    fn well_formed_1_x_results_pass() {
        assert_eq!(validate_result("1.0.0", &v1_good()), Ok(()));
        let mut r = v1_good();
        r["cniVersion"] = json!("1.1.0");
        r["interfaces"][2]["mtu"] = json!(1500);
        r["routes"][0]["table"] = json!(100);
        assert_eq!(validate_result("1.1.0", &r), Ok(()));
        // L2-only result: no ips at all.
        let l2 = json!({"cniVersion": "1.0.0", "interfaces": [{"name": "net1", "sandbox": "/x"}], "dns": {}});
        assert_eq!(validate_result("1.0.0", &l2), Ok(()));
    }

    #[test]
    fn malformed_1_x_results_are_rejected() {
        // Wrong cniVersion.
        assert!(validate_result("1.1.0", &v1_good()).is_err());
        // `version` in ips is gone since 1.0.0.
        let mut r = v1_good();
        r["ips"][0]["version"] = json!("4");
        assert!(validate_result("1.0.0", &r).is_err());
        // Interface index out of range.
        let mut r = v1_good();
        r["ips"][0]["interface"] = json!(3);
        assert!(validate_result("1.0.0", &r).is_err());
        let mut r = v1_good();
        r["ips"][0]["interface"] = json!(-1);
        assert!(validate_result("1.0.0", &r).is_err());
        // Address without prefix, bad MAC, missing name, 0.2.0 keys.
        let mut r = v1_good();
        r["ips"][0]["address"] = json!("10.99.0.4");
        assert!(validate_result("1.0.0", &r).is_err());
        let mut r = v1_good();
        r["interfaces"][0]["mac"] = json!("zz:zz");
        assert!(validate_result("1.0.0", &r).is_err());
        let mut r = v1_good();
        r["interfaces"][1] = json!({"mac": "9a:a0:b3:56:41:c1"});
        assert!(validate_result("1.0.0", &r).is_err());
        let mut r = v1_good();
        r["ip4"] = json!({"ip": "10.99.0.4/24"});
        assert!(validate_result("1.0.0", &r).is_err());
        // Gateway of another family, bad dns, cniVersion missing.
        let mut r = v1_good();
        r["ips"][0]["gateway"] = json!("fd00::1");
        assert!(validate_result("1.0.0", &r).is_err());
        let mut r = v1_good();
        r["dns"] = json!({"nameservers": "10.0.0.1"});
        assert!(validate_result("1.0.0", &r).is_err());
        let mut r = v1_good();
        r.as_object_mut().map(|o| o.remove("cniVersion"));
        assert!(validate_result("1.0.0", &r).is_err());
        assert!(validate_result("1.0.0", &json!([])).is_err());
    }

    #[test]
    fn results_0_3_and_0_4_need_an_ips_version_matching_the_address() {
        for v in ["0.3.0", "0.3.1", "0.4.0"] {
            assert_eq!(validate_result(v, &v04_good(v)), Ok(()), "{v}");
        }
        // `version` is required and must match the address family.
        let mut r = v04_good("0.4.0");
        r["ips"][0].as_object_mut().map(|o| o.remove("version"));
        assert!(validate_result("0.4.0", &r).is_err());
        let mut r = v04_good("0.4.0");
        r["ips"][1]["version"] = json!("4");
        assert!(validate_result("0.4.0", &r).is_err());
        let mut r = v04_good("0.4.0");
        r["ips"][0]["version"] = json!(4);
        assert!(validate_result("0.4.0", &r).is_err());
        // A 1.0.0-shaped result is not a 0.4.0 result.
        let mut r = v1_good();
        r["cniVersion"] = json!("0.4.0");
        assert!(validate_result("0.4.0", &r).is_err());
    }

    #[test]
    fn results_0_1_and_0_2_carry_ip4_or_ip6_and_nothing_newer() {
        let good = json!({
            "cniVersion": "0.2.0",
            "ip4": {"ip": "10.99.0.3/24", "gateway": "10.99.0.1", "routes": [{"dst": "0.0.0.0/0"}]},
            "ip6": {"ip": "fd00::3/64"},
            "dns": {}
        });
        assert_eq!(validate_result("0.2.0", &good), Ok(()));
        let mut r = good.clone();
        r["cniVersion"] = json!("0.1.0");
        assert_eq!(validate_result("0.1.0", &r), Ok(()));
        // Needs an IP.
        assert!(validate_result("0.2.0", &json!({"cniVersion": "0.2.0", "dns": {}})).is_err());
        // Wrong family inside ip4, and no rich-result keys.
        let mut r = good.clone();
        r["ip4"]["ip"] = json!("fd00::3/64");
        assert!(validate_result("0.2.0", &r).is_err());
        let mut r = good.clone();
        r["interfaces"] = json!([]);
        assert!(validate_result("0.2.0", &r).is_err());
        assert!(validate_result("0.2.0", &v04_good("0.2.0")).is_err());
    }

    #[test]
    fn cidrs_need_a_prefix_in_range_and_macs_hex_octets() {
        assert!(parse_cidr("10.0.0.1/24").is_some());
        assert!(parse_cidr("fd00::1/128").is_some());
        assert!(parse_cidr("10.0.0.1/33").is_none());
        assert!(parse_cidr("10.0.0.1").is_none());
        assert!(is_mac("0E:d9:68:95:2c:30"));
        assert!(!is_mac("0e:d9:68:95:2c"));
        assert!(!is_mac("0e-d9-68-95-2c-30"));
    }
}
