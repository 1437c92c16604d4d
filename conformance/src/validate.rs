//! Pure logic of the suite: CNI versions, the shape of a plugin's stdout,
//! error objects, VERSION replies, result formats per version, chaining
//! (prevResult pass-through) and synthesized prevResults.
//!
//! Nothing here touches the system, so all of it is unit-tested below.

use serde_json::{json, Map, Value};
use std::net::IpAddr;

/// Every CNI specification version the suite knows, oldest first.
pub const KNOWN_VERSIONS: [&str; 7] = [
    "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0",
];

/// Address and gateway the suite puts into a synthesized prevResult (TEST-NET-1).
pub const PREV_ADDRESS: &str = "192.0.2.10/24";
pub const PREV_GATEWAY: &str = "192.0.2.1";

/// The three result formats that the CNI versions use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// 0.1.0 and 0.2.0: `ip4` / `ip6` objects.
    V02,
    /// 0.3.0, 0.3.1 and 0.4.0: `interfaces` / `ips` with `ips[].version`.
    V04,
    /// 1.0.0 and 1.1.0: `interfaces` / `ips` without `ips[].version`.
    V1,
}

pub fn family(version: &str) -> Option<Family> {
    match version {
        "0.1.0" | "0.2.0" => Some(Family::V02),
        "0.3.0" | "0.3.1" | "0.4.0" => Some(Family::V04),
        "1.0.0" | "1.1.0" => Some(Family::V1),
        _ => None,
    }
}

pub fn is_known(version: &str) -> bool {
    KNOWN_VERSIONS.contains(&version)
}

fn version_triple(version: &str) -> Option<(u64, u64, u64)> {
    let mut parts = version.split('.').map(|p| p.parse::<u64>().ok());
    let triple = (parts.next()??, parts.next()??, parts.next()??);
    if parts.next().is_some() {
        return None;
    }
    Some(triple)
}

/// `version >= minimum`, comparing numerically; unparsable versions are never "at least".
pub fn version_at_least(version: &str, minimum: &str) -> bool {
    match (version_triple(version), version_triple(minimum)) {
        (Some(v), Some(m)) => v >= m,
        _ => false,
    }
}

/// What a plugin printed on stdout.
#[derive(Clone, Debug, PartialEq)]
pub enum Stdout {
    /// Nothing, or only whitespace.
    Empty,
    /// Exactly one JSON value (surrounding whitespace allowed).
    Json(Value),
    /// Anything else; the string says what is wrong.
    Invalid(String),
}

pub fn classify_stdout(bytes: &[u8]) -> Stdout {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => return Stdout::Invalid(format!("stdout is not UTF-8 ({e})")),
    };
    if text.trim().is_empty() {
        return Stdout::Empty;
    }
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let first = match values.next() {
        Some(Ok(v)) => v,
        Some(Err(e)) => {
            return Stdout::Invalid(format!("stdout is not JSON ({e}): {}", excerpt(text)))
        }
        None => return Stdout::Empty,
    };
    match values.next() {
        None => Stdout::Json(first),
        Some(Ok(_)) => Stdout::Invalid(format!(
            "stdout holds more than one JSON value: {}",
            excerpt(text)
        )),
        Some(Err(e)) => Stdout::Invalid(format!(
            "stdout has data after the JSON value ({e}): {}",
            excerpt(text)
        )),
    }
}

/// A short, single-line excerpt of some output, for messages.
pub fn excerpt(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 160 {
        let cut: String = flat.chars().take(160).collect();
        format!("{cut}...")
    } else {
        flat
    }
}

/// A CNI error object as printed by a failing plugin.
#[derive(Clone, Debug, PartialEq)]
pub struct CniError {
    pub code: u64,
    pub msg: String,
    pub details: Option<String>,
}

impl std::fmt::Display for CniError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "code {} \"{}\"", self.code, self.msg)?;
        if let Some(d) = &self.details {
            if !d.is_empty() {
                write!(f, " ({})", excerpt(d))?;
            }
        }
        Ok(())
    }
}

/// Parse an error object: `code` an unsigned integer, `msg` a string,
/// `details` and `cniVersion` strings when present.
pub fn parse_error(value: &Value) -> Result<CniError, String> {
    let obj = value.as_object().ok_or_else(|| {
        format!(
            "error output is not a JSON object: {}",
            excerpt(&value.to_string())
        )
    })?;
    let code = match obj.get("code") {
        Some(c) => c
            .as_u64()
            .ok_or_else(|| format!("error `code` is not an unsigned integer: {c}"))?,
        None => {
            return Err(format!(
                "error object has no `code`: {}",
                excerpt(&value.to_string())
            ))
        }
    };
    let msg = match obj.get("msg") {
        Some(Value::String(m)) => m.clone(),
        Some(other) => return Err(format!("error `msg` is not a string: {other}")),
        None => {
            return Err(format!(
                "error object has no `msg`: {}",
                excerpt(&value.to_string())
            ))
        }
    };
    let details = match obj.get("details") {
        None | Some(Value::Null) => None,
        Some(Value::String(d)) => Some(d.clone()),
        Some(other) => return Err(format!("error `details` is not a string: {other}")),
    };
    if let Some(v) = obj.get("cniVersion") {
        if !v.is_string() {
            return Err(format!("error `cniVersion` is not a string: {v}"));
        }
    }
    Ok(CniError { code, msg, details })
}

/// The stdout rule that holds for every invocation: a successful ADD or
/// VERSION prints exactly one JSON object; any other successful verb prints
/// nothing; a failure prints exactly one error object.
pub fn stdout_violation(verb: Option<&str>, success: bool, out: &Stdout) -> Option<String> {
    let verb_name = verb.unwrap_or("(no CNI_COMMAND)");
    if !success {
        return match out {
            Stdout::Empty => Some(
                "non-zero exit with nothing on stdout (the error must be a JSON object on stdout)"
                    .into(),
            ),
            Stdout::Invalid(why) => Some(format!("non-zero exit: {why}")),
            Stdout::Json(v) => parse_error(v).err(),
        };
    }
    let wants_object = matches!(verb, Some("ADD") | Some("VERSION"));
    match (wants_object, out) {
        (true, Stdout::Json(Value::Object(_))) => None,
        (true, Stdout::Json(v)) => Some(format!(
            "{verb_name} succeeded but printed a non-object: {}",
            excerpt(&v.to_string())
        )),
        (true, Stdout::Empty) => Some(format!("{verb_name} succeeded but printed nothing")),
        (true, Stdout::Invalid(why)) => Some(why.clone()),
        (false, Stdout::Empty) => None,
        (false, Stdout::Json(v)) => Some(format!(
            "{verb_name} succeeded but printed {} (must print nothing)",
            excerpt(&v.to_string())
        )),
        (false, Stdout::Invalid(why)) => {
            Some(format!("{verb_name} succeeded but printed output: {why}"))
        }
    }
}

/// A VERSION reply.
#[derive(Clone, Debug, PartialEq)]
pub struct VersionReply {
    pub cni_version: String,
    pub supported: Vec<String>,
}

/// Parse a VERSION reply: `cniVersion` a non-empty string and
/// `supportedVersions` a non-empty list of known versions.
pub fn parse_version_reply(value: &Value) -> Result<VersionReply, String> {
    let obj = value
        .as_object()
        .ok_or("VERSION reply is not a JSON object")?;
    let cni_version = match obj.get("cniVersion") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(other) => return Err(format!("`cniVersion` is not a non-empty string: {other}")),
        None => return Err("VERSION reply has no `cniVersion`".into()),
    };
    let list = match obj.get("supportedVersions") {
        Some(Value::Array(a)) => a,
        Some(other) => return Err(format!("`supportedVersions` is not a list: {other}")),
        None => return Err("VERSION reply has no `supportedVersions`".into()),
    };
    if list.is_empty() {
        return Err("`supportedVersions` is empty".into());
    }
    let mut supported = Vec::new();
    for item in list {
        match item.as_str() {
            Some(s) if is_known(s) => supported.push(s.to_string()),
            Some(s) => return Err(format!("`supportedVersions` lists unknown version {s:?}")),
            None => return Err(format!("`supportedVersions` holds a non-string: {item}")),
        }
    }
    Ok(VersionReply {
        cni_version,
        supported,
    })
}

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

struct Problems(Vec<String>);

impl Problems {
    fn push(&mut self, p: String) {
        self.0.push(p);
    }
    fn into_result(self) -> Result<(), String> {
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
    let mut p = Problems(Vec::new());
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

/// Chaining rule: a plugin given a prevResult must output it, possibly
/// modified. The suite checks that every interface of `prev` is still listed
/// (same name and sandbox) and every address is still listed (same address,
/// same gateway, attached to an interface of the same name).
pub fn check_passthrough(prev: &Value, result: &Value) -> Result<(), String> {
    let before = summarize(prev);
    let after = summarize(result);
    let mut p = Problems(Vec::new());
    for iface in &before.interfaces {
        if !after
            .interfaces
            .iter()
            .any(|a| a.name == iface.name && a.sandbox == iface.sandbox)
        {
            p.push(format!(
                "prevResult interface {} (sandbox {}) is missing from the result",
                iface.name,
                iface.sandbox.as_deref().unwrap_or("none")
            ));
        }
    }
    let name_of = |s: &ResultSummary, idx: Option<usize>| {
        idx.and_then(|i| s.interfaces.get(i))
            .map(|i| i.name.clone())
    };
    for ip in &before.ips {
        let found = after.ips.iter().find(|a| a.address == ip.address);
        match found {
            None => p.push(format!(
                "prevResult address {} is missing from the result",
                ip.text
            )),
            Some(a) => {
                if a.gateway != ip.gateway {
                    p.push(format!(
                        "address {}: gateway changed from {:?} to {:?}",
                        ip.text, ip.gateway, a.gateway
                    ));
                }
                let want = name_of(&before, ip.interface);
                if want.is_some() && name_of(&after, a.interface) != want {
                    p.push(format!(
                        "address {} is no longer attached to interface {}",
                        ip.text,
                        want.unwrap_or_default()
                    ));
                }
            }
        }
    }
    p.into_result()
}

/// A prevResult in the format of `version` for one container interface
/// carrying PREV_ADDRESS, as the previous plugin of a chain would return it.
pub fn synth_prev_result(version: &str, ifname: &str, mac: &str, sandbox: &str) -> Value {
    match family(version) {
        Some(Family::V02) | None => json!({
            "cniVersion": version,
            "ip4": {"ip": PREV_ADDRESS, "gateway": PREV_GATEWAY},
        }),
        Some(Family::V04) => json!({
            "cniVersion": version,
            "interfaces": [{"name": ifname, "mac": mac, "sandbox": sandbox}],
            "ips": [{"version": "4", "address": PREV_ADDRESS, "gateway": PREV_GATEWAY, "interface": 0}],
        }),
        Some(Family::V1) => json!({
            "cniVersion": version,
            "interfaces": [{"name": ifname, "mac": mac, "sandbox": sandbox}],
            "ips": [{"address": PREV_ADDRESS, "gateway": PREV_GATEWAY, "interface": 0}],
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn versions() {
        assert!(version_at_least("1.0.0", "0.4.0"));
        assert!(version_at_least("0.4.0", "0.4.0"));
        assert!(!version_at_least("0.3.1", "0.4.0"));
        assert!(!version_at_least("1.0.0", "1.1.0"));
        assert!(version_at_least("1.10.0", "1.2.0"));
        assert!(!version_at_least("junk", "0.1.0"));
        assert_eq!(family("0.3.1"), Some(Family::V04));
        assert_eq!(family("1.1.0"), Some(Family::V1));
        assert_eq!(family("0.1.0"), Some(Family::V02));
        assert_eq!(family("9.9.9"), None);
    }

    #[test]
    fn stdout_shapes() {
        assert_eq!(classify_stdout(b""), Stdout::Empty);
        assert_eq!(classify_stdout(b" \n\t"), Stdout::Empty);
        assert_eq!(
            classify_stdout(b"{\"a\":1}\n"),
            Stdout::Json(json!({"a": 1}))
        );
        assert!(matches!(
            classify_stdout(b"{\"a\":1}{\"b\":2}"),
            Stdout::Invalid(_)
        ));
        assert!(matches!(
            classify_stdout(b"{\"a\":1} trailing"),
            Stdout::Invalid(_)
        ));
        assert!(matches!(
            classify_stdout(b"log line\n{\"a\":1}"),
            Stdout::Invalid(_)
        ));
        assert!(matches!(classify_stdout(&[0xff, 0xfe]), Stdout::Invalid(_)));
    }

    #[test]
    fn stdout_rules_per_verb() {
        let obj = Stdout::Json(json!({"cniVersion": "1.0.0"}));
        let err = Stdout::Json(json!({"code": 7, "msg": "bad"}));
        assert_eq!(stdout_violation(Some("ADD"), true, &obj), None);
        assert!(stdout_violation(Some("ADD"), true, &Stdout::Empty).is_some());
        assert!(stdout_violation(Some("ADD"), true, &Stdout::Json(json!([1]))).is_some());
        assert_eq!(stdout_violation(Some("DEL"), true, &Stdout::Empty), None);
        assert!(stdout_violation(Some("DEL"), true, &obj).is_some());
        assert!(stdout_violation(Some("CHECK"), true, &obj).is_some());
        assert_eq!(stdout_violation(Some("GC"), false, &err), None);
        assert!(stdout_violation(Some("GC"), false, &Stdout::Empty).is_some());
        assert!(stdout_violation(
            Some("ADD"),
            false,
            &Stdout::Json(json!({"code": "7", "msg": "x"}))
        )
        .is_some());
        assert_eq!(stdout_violation(None, true, &Stdout::Empty), None);
    }

    #[test]
    fn error_objects() {
        let e =
            parse_error(&json!({"code": 1, "msg": "incompatible CNI versions", "details": "x"}));
        assert_eq!(
            e,
            Ok(CniError {
                code: 1,
                msg: "incompatible CNI versions".into(),
                details: Some("x".into())
            })
        );
        assert!(parse_error(&json!({"cniVersion": "1.0.0", "code": 999, "msg": "m"})).is_ok());
        assert!(parse_error(&json!({"code": -1, "msg": "m"})).is_err());
        assert!(parse_error(&json!({"code": 1.5, "msg": "m"})).is_err());
        assert!(parse_error(&json!({"code": 1})).is_err());
        assert!(parse_error(&json!({"msg": "m"})).is_err());
        assert!(parse_error(&json!({"code": 1, "msg": 5})).is_err());
        assert!(parse_error(&json!({"code": 1, "msg": "m", "details": {}})).is_err());
        assert!(parse_error(&json!("error")).is_err());
    }

    #[test]
    fn version_replies() {
        let r = parse_version_reply(
            &json!({"cniVersion": "1.0.0", "supportedVersions": ["0.1.0", "1.0.0"]}),
        );
        assert_eq!(
            r.map(|r| r.supported),
            Ok(vec!["0.1.0".to_string(), "1.0.0".to_string()])
        );
        assert!(
            parse_version_reply(&json!({"cniVersion": "1.0.0", "supportedVersions": []})).is_err()
        );
        assert!(parse_version_reply(&json!({"cniVersion": "1.0.0"})).is_err());
        assert!(parse_version_reply(&json!({"supportedVersions": ["1.0.0"]})).is_err());
        assert!(
            parse_version_reply(&json!({"cniVersion": "", "supportedVersions": ["1.0.0"]}))
                .is_err()
        );
        assert!(parse_version_reply(
            &json!({"cniVersion": "1.0.0", "supportedVersions": ["1.0.0", "2.5.0"]})
        )
        .is_err());
        assert!(
            parse_version_reply(&json!({"cniVersion": "1.0.0", "supportedVersions": [1]})).is_err()
        );
    }

    #[test]
    fn v1_results() {
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
    fn v1_results_rejected() {
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
    fn v04_results() {
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
    fn v02_results() {
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
    fn summaries_and_passthrough() {
        let prev = synth_prev_result("1.0.0", "net1", "0e:d9:68:95:2c:30", "/run/netns/x");
        assert_eq!(validate_result("1.0.0", &prev), Ok(()));
        let s = summarize(&prev);
        assert_eq!(s.interfaces.len(), 1);
        assert!(s.routes.is_empty());
        let r = summarize(
            &json!({"ip4": {"ip": "10.0.0.2/24", "routes": [{"dst": "0.0.0.0/0", "gw": "10.0.0.1"}]},
            "routes": [{"dst": "fd00::/8"}]}),
        );
        assert_eq!(r.routes.len(), 2);
        assert_eq!(r.routes[0].2, "10.0.0.1".parse().ok());
        assert_eq!(r.routes[1].2, None);
        assert_eq!(s.ips[0].interface, Some(0));
        // Unchanged and extended results pass.
        assert_eq!(check_passthrough(&prev, &prev), Ok(()));
        let mut extended = prev.clone();
        extended["interfaces"] = json!([
            {"name": "net1", "mac": "02:00:00:00:00:01", "sandbox": "/run/netns/x"},
            {"name": "other"}
        ]);
        extended["dns"] = json!({});
        assert_eq!(check_passthrough(&prev, &extended), Ok(()));
        // Dropped interface, dropped address, moved address all fail.
        let mut r = prev.clone();
        r["interfaces"] = json!([]);
        r["ips"][0].as_object_mut().map(|o| o.remove("interface"));
        assert!(check_passthrough(&prev, &r).is_err());
        let mut r = prev.clone();
        r["ips"] = json!([]);
        assert!(check_passthrough(&prev, &r).is_err());
        let mut r = prev.clone();
        r["interfaces"] = json!([{"name": "x"}, {"name": "net1", "sandbox": "/run/netns/x"}]);
        assert!(check_passthrough(&prev, &r).is_err());
        let mut r = prev.clone();
        r["ips"][0]["gateway"] = json!("192.0.2.254");
        assert!(check_passthrough(&prev, &r).is_err());
    }

    #[test]
    fn synthesized_prev_results_are_valid() {
        for v in KNOWN_VERSIONS {
            let prev = synth_prev_result(v, "net1", "0e:d9:68:95:2c:30", "/run/netns/x");
            assert_eq!(validate_result(v, &prev), Ok(()), "{v}");
            assert_eq!(summarize(&prev).ips.len(), 1, "{v}");
        }
    }

    #[test]
    fn cidrs_and_macs() {
        assert!(parse_cidr("10.0.0.1/24").is_some());
        assert!(parse_cidr("fd00::1/128").is_some());
        assert!(parse_cidr("10.0.0.1/33").is_none());
        assert!(parse_cidr("10.0.0.1").is_none());
        assert!(is_mac("0E:d9:68:95:2c:30"));
        assert!(!is_mac("0e:d9:68:95:2c"));
        assert!(!is_mac("0e-d9-68-95-2c-30"));
    }
}
