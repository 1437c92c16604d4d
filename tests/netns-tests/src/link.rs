//! Link state as `ip -j -d link show` and `ip -j addr show` report it.

use serde::Deserialize;
use serde_json::Value;

/// One link as reported by `ip -j -d link show`. Unlisted keys are kept in `other`.
#[derive(Debug, Clone, Deserialize)]
pub struct Link {
    pub ifindex: u32,
    pub ifname: String,
    #[serde(default)]
    pub flags: Vec<String>,
    #[serde(default)]
    pub mtu: Option<u32>,
    #[serde(default)]
    pub operstate: Option<String>,
    /// The master device (bridge) name, if enslaved.
    #[serde(default)]
    pub master: Option<String>,
    /// The MAC address.
    #[serde(default)]
    pub address: Option<String>,
    #[serde(default)]
    pub promiscuity: Option<u32>,
    #[serde(default)]
    pub link_netnsid: Option<i64>,
    #[serde(default)]
    pub linkinfo: Option<LinkInfo>,
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

/// The `linkinfo` object of `ip -d`.
#[derive(Debug, Clone, Deserialize)]
pub struct LinkInfo {
    #[serde(default)]
    pub info_kind: Option<String>,
    #[serde(default)]
    pub info_data: Option<Value>,
    #[serde(default)]
    pub info_slave_kind: Option<String>,
    #[serde(default)]
    pub info_slave_data: Option<Value>,
}

impl Link {
    /// The link kind (`veth`, `bridge`, `macvtap`, ...), if any.
    pub fn kind(&self) -> Option<&str> {
        self.linkinfo.as_ref()?.info_kind.as_deref()
    }

    /// Whether the administrative UP flag is set.
    pub fn is_up(&self) -> bool {
        self.flags.iter().any(|f| f == "UP")
    }

    /// The MAC address, lower-case.
    pub fn mac(&self) -> Option<String> {
        self.address.as_ref().map(|a| a.to_ascii_lowercase())
    }
}

/// Parses the output of `ip -j [-d] link show`.
///
/// # Panics
/// If the text is not the expected JSON.
pub fn parse_links(json: &str) -> Vec<Link> {
    serde_json::from_str(json)
        .unwrap_or_else(|e| panic!("cannot parse `ip -j -d link show` output: {e}\n{json}"))
}

#[derive(Debug, Deserialize)]
struct AddrInfoLink {
    #[serde(default)]
    addr_info: Vec<AddrInfo>,
}

#[derive(Debug, Deserialize)]
struct AddrInfo {
    local: String,
    prefixlen: u8,
    #[serde(default)]
    scope: Option<String>,
}

/// The addresses in the output of `ip -j addr show`, in CIDR form, without link-local ones.
///
/// # Panics
/// If the text is not the expected JSON.
pub fn parse_addresses(json: &str) -> Vec<String> {
    let parsed: Vec<AddrInfoLink> = serde_json::from_str(json)
        .unwrap_or_else(|e| panic!("cannot parse `ip -j addr` output: {e}\n{json}"));
    parsed
        .into_iter()
        .flat_map(|l| l.addr_info)
        .filter(|a| a.scope.as_deref() != Some("link"))
        .map(|a| format!("{}/{}", a.local, a.prefixlen))
        .collect()
}

/// One port's VLAN table from `bridge -j vlan show dev <port>`, one `(vid, pvid, untagged)` per
/// VLAN (ranges expanded), sorted.
pub fn parse_port_vlans(json: &str) -> Vec<(u64, bool, bool)> {
    let parsed: Value = serde_json::from_str(json).expect("bridge -j prints JSON");
    let mut out = Vec::new();
    for entry in parsed[0]["vlans"].as_array().cloned().unwrap_or_default() {
        let flags = entry["flags"].as_array().cloned().unwrap_or_default();
        let pvid = flags.iter().any(|f| f == "PVID");
        let untagged = flags.iter().any(|f| f == "Egress Untagged");
        let first = entry["vlan"].as_u64().expect("vid");
        let last = entry["vlanEnd"].as_u64().unwrap_or(first);
        out.extend((first..=last).map(|vid| (vid, pvid, untagged)));
    }
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ip_link_json() {
        let json = r#"[{"ifindex":3,"link":"cnitestbr0","ifname":"veth1","flags":["BROADCAST","UP"],
            "mtu":1500,"master":"br0","operstate":"UP","address":"AA:bb:cc:dd:ee:ff",
            "link_netnsid":0,"promiscuity":1,"linkinfo":{"info_kind":"veth",
            "info_slave_kind":"bridge","info_slave_data":{"state":"forwarding"}}},
            {"ifindex":1,"ifname":"lo","flags":["LOOPBACK"],"mtu":65536,"address":"00:00:00:00:00:00"}]"#;
        let links = parse_links(json);
        assert_eq!(links.len(), 2);
        assert_eq!(links[0].kind(), Some("veth"));
        assert_eq!(links[0].master.as_deref(), Some("br0"));
        assert_eq!(links[0].mac().as_deref(), Some("aa:bb:cc:dd:ee:ff"));
        assert!(links[0].is_up());
        assert_eq!(links[0].other.get("link"), Some(&Value::from("cnitestbr0")));
        assert_eq!(links[1].kind(), None);
        assert!(!links[1].is_up());
    }

    #[test]
    fn addresses_leave_out_link_local_ones() {
        let json = r#"[{"ifindex":2,"ifname":"net1","addr_info":[
            {"family":"inet","local":"10.1.0.2","prefixlen":24,"scope":"global"},
            {"family":"inet6","local":"fe80::1","prefixlen":64,"scope":"link"}]}]"#;
        assert_eq!(parse_addresses(json), vec!["10.1.0.2/24".to_owned()]);
    }
}
