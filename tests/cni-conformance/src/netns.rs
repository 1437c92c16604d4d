//! Named network namespaces owned by the suite, and what `ip -j` says is in them.
//!
//! Safety rule: every `ip` command the suite runs either adds/deletes one of
//! its own `cnic-*` namespaces or runs with `-n <its namespace>`; nothing is
//! ever done in the namespace the suite itself runs in.

use crate::error::{Context, Error};
use serde_json::Value;
use std::net::IpAddr;
use std::process::{Command, Stdio};

/// Where iproute2 keeps named namespaces.
pub const NETNS_DIR: &str = "/run/netns";

/// `ip args...`, its stdout on success.
pub fn ip(args: &[&str]) -> Result<String, Error> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context("cannot run ip")?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(Error::IpFailed {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// A link as seen live in a namespace.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveLink {
    pub name: String,
    pub mac: String,
    pub addrs: Vec<(IpAddr, u8)>,
}

/// Parse the output of `ip -j addr show`.
pub fn parse_ip_addr_json(text: &str) -> Result<Vec<LiveLink>, Error> {
    let value: Value = serde_json::from_str(text).context("cannot parse `ip -j addr` output")?;
    let list = value
        .as_array()
        .ok_or("`ip -j addr` output is not a list")?;
    let mut links = Vec::new();
    for item in list {
        let Some(name) = item.get("ifname").and_then(Value::as_str) else {
            continue;
        };
        let mac = item
            .get("address")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_ascii_lowercase();
        let mut addrs = Vec::new();
        for a in item
            .get("addr_info")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let local = a
                .get("local")
                .and_then(Value::as_str)
                .and_then(|s| s.parse::<IpAddr>().ok());
            let len = a
                .get("prefixlen")
                .and_then(Value::as_u64)
                .and_then(|n| u8::try_from(n).ok());
            if let (Some(ip), Some(len)) = (local, len) {
                addrs.push((ip, len));
            }
        }
        links.push(LiveLink {
            name: name.to_string(),
            mac,
            addrs,
        });
    }
    Ok(links)
}

/// A route as seen live in a namespace (any table).
#[derive(Clone, Debug, PartialEq)]
pub struct LiveRoute {
    pub dst: (IpAddr, u8),
    pub gw: Option<IpAddr>,
}

/// Parse the output of `ip -j -4|-6 route show table all`; `v6` says which
/// family "default" and prefix-less destinations belong to.
pub fn parse_ip_route_json(text: &str, v6: bool) -> Result<Vec<LiveRoute>, Error> {
    let value: Value = serde_json::from_str(text).context("cannot parse `ip -j route` output")?;
    let list = value
        .as_array()
        .ok_or("`ip -j route` output is not a list")?;
    let (any, full): (IpAddr, u8) = if v6 {
        (IpAddr::from([0u16; 8]), 128)
    } else {
        (IpAddr::from([0u8; 4]), 32)
    };
    let mut routes = Vec::new();
    for item in list {
        let Some(dst) = item.get("dst").and_then(Value::as_str) else {
            continue;
        };
        let dst = if dst == "default" {
            Some((any, 0))
        } else if let Some((a, l)) = dst.split_once('/') {
            a.parse().ok().zip(l.parse().ok())
        } else {
            dst.parse().ok().map(|a| (a, full))
        };
        let Some(dst) = dst else { continue };
        let gw = item
            .get("gateway")
            .and_then(Value::as_str)
            .and_then(|g| g.parse().ok());
        routes.push(LiveRoute { dst, gw });
    }
    Ok(routes)
}

/// A named network namespace owned by the suite.
pub struct Netns {
    name: String,
    live: bool,
}

impl Netns {
    pub fn create(name: String) -> Result<Self, Error> {
        ip(&["netns", "add", &name])?;
        Ok(Netns { name, live: true })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn path(&self) -> String {
        format!("{NETNS_DIR}/{}", self.name)
    }

    /// `ip -n <this namespace> args...`.
    pub fn ip(&self, args: &[&str]) -> Result<String, Error> {
        let mut full = vec!["-n", self.name.as_str()];
        full.extend_from_slice(args);
        self::ip(&full)
    }

    pub fn links(&self) -> Result<Vec<LiveLink>, Error> {
        parse_ip_addr_json(&self.ip(&["-j", "addr", "show"])?)
    }

    pub fn routes(&self) -> Result<Vec<LiveRoute>, Error> {
        let mut all = parse_ip_route_json(
            &self.ip(&["-j", "-4", "route", "show", "table", "all"])?,
            false,
        )?;
        all.extend(parse_ip_route_json(
            &self.ip(&["-j", "-6", "route", "show", "table", "all"])?,
            true,
        )?);
        Ok(all)
    }

    pub fn link_names(&self) -> Result<Vec<String>, Error> {
        let mut names: Vec<String> = self.links()?.into_iter().map(|l| l.name).collect();
        names.sort();
        Ok(names)
    }

    pub fn link(&self, name: &str) -> Result<Option<LiveLink>, Error> {
        Ok(self.links()?.into_iter().find(|l| l.name == name))
    }

    pub fn delete(&mut self) -> Result<(), Error> {
        if self.live {
            self.live = false;
            ip(&["netns", "delete", &self.name])?;
        }
        Ok(())
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = self.delete();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_addr_json_gives_each_link_its_lowercase_mac_and_addresses() {
        let text = r#"[{"ifindex":1,"ifname":"lo","address":"00:00:00:00:00:00","addr_info":[{"family":"inet","local":"127.0.0.1","prefixlen":8}]},
            {"ifindex":5,"ifname":"net1","link":"cnic-peer0","address":"0E:D9:68:95:2C:30","addr_info":[{"family":"inet","local":"10.99.0.2","prefixlen":24},{"family":"inet6","local":"fe80::1","prefixlen":64}]}]"#;
        let links = parse_ip_addr_json(text).unwrap_or_default();
        assert_eq!(links.len(), 2);
        assert_eq!(links[1].name, "net1");
        assert_eq!(links[1].mac, "0e:d9:68:95:2c:30");
        assert_eq!(links[1].addrs.len(), 2);
        assert!(parse_ip_addr_json("{}").is_err());
    }

    #[test]
    fn ip_route_json_reads_default_prefixes_host_routes_and_gateways() {
        let v4 = r#"[{"dst":"default","gateway":"10.99.0.1","dev":"net1","flags":[]},
            {"dst":"10.98.0.0/16","gateway":"10.99.0.1","dev":"net1","flags":[]},
            {"type":"local","dst":"10.99.0.2","table":"local","dev":"net1","flags":[]}]"#;
        let r = parse_ip_route_json(v4, false).unwrap_or_default();
        assert_eq!(r.len(), 3);
        assert_eq!(r[0].dst, (IpAddr::from([0u8; 4]), 0));
        assert_eq!(r[1].gw, "10.99.0.1".parse().ok());
        assert_eq!(r[2].dst.1, 32);
        let v6 = r#"[{"dst":"default","gateway":"fd00::1","dev":"net1"},{"dst":"fd00::/64","dev":"net1"}]"#;
        let r = parse_ip_route_json(v6, true).unwrap_or_default();
        assert_eq!(r[0].dst.1, 0);
        assert!(r[0].dst.0.is_ipv6());
        assert_eq!(r[1].gw, None);
    }
}
