//! The bridge config, field for field the reference plugin's (v1.9), validated before anything
//! changes: every refusal is code 7 and names the field.

use cni_common::config::cni_args_mac;
use cni_common::mac::MacAddr;
use cni_common::skel::Request;
use cni_common::{Error, Result};
use serde::Deserialize;

pub const DEFAULT_BRIDGE: &str = "cni0";
pub const MAX_VID: u16 = 4094;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BridgeConf {
    #[serde(default)]
    pub bridge: Option<String>,
    #[serde(default)]
    pub is_gateway: bool,
    #[serde(default)]
    pub is_default_gateway: bool,
    #[serde(default)]
    pub force_address: bool,
    #[serde(default)]
    pub ip_masq: bool,
    #[serde(default)]
    pub ip_masq_backend: Option<String>,
    #[serde(default)]
    pub mtu: Option<u32>,
    #[serde(default)]
    pub hairpin_mode: bool,
    #[serde(default)]
    pub promisc_mode: bool,
    #[serde(default)]
    pub vlan: Option<i64>,
    #[serde(default)]
    pub vlan_trunk: Option<Vec<TrunkEntry>>,
    #[serde(default)]
    pub preserve_default_vlan: bool,
    #[serde(default)]
    pub macspoofchk: bool,
    #[serde(default)]
    pub enabledad: bool,
    #[serde(default)]
    pub disable_container_interface: bool,
    #[serde(default)]
    pub port_isolation: bool,
}

/// One `vlanTrunk` entry: `{"id": N}` or `{"minID": A, "maxID": B}`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct TrunkEntry {
    #[serde(default)]
    pub id: Option<i64>,
    #[serde(default, rename = "minID")]
    pub min_id: Option<i64>,
    #[serde(default, rename = "maxID")]
    pub max_id: Option<i64>,
}

/// What an ADD must build, resolved and validated.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub bridge: String,
    pub is_gateway: bool,
    pub is_default_gateway: bool,
    pub force_address: bool,
    /// Masquerade traffic from the container's addresses leaving their subnets.
    pub ip_masq: bool,
    pub mtu: Option<u32>,
    pub hairpin: bool,
    pub promisc: bool,
    /// Access VLAN: PVID and untagged on the port.
    pub vlan: Option<u16>,
    /// Tagged VLANs, sorted, without duplicates.
    pub trunk: Vec<u16>,
    pub preserve_default_vlan: bool,
    pub spoofchk: bool,
    pub enable_dad: bool,
    pub disable_container_interface: bool,
    pub port_isolation: bool,
    pub mac: Option<MacAddr>,
}

impl Settings {
    pub fn wants_vlans(&self) -> bool {
        self.vlan.is_some() || !self.trunk.is_empty()
    }

    /// MAC precedence is the reference plugin's: CNI_ARGS `MAC` < `args.cni.mac` <
    /// `runtimeConfig.mac`.
    pub fn resolve(req: &Request<BridgeConf>) -> Result<Settings> {
        let c = &req.conf.plugin;
        let bridge = c
            .bridge
            .clone()
            .unwrap_or_else(|| DEFAULT_BRIDGE.to_string());
        cni_common::env::validate_ifname(&bridge)
            .map_err(|e| Error::invalid_config(format!("bridge: {}", e.msg())))?;
        let vlan = match c.vlan {
            None | Some(0) => None,
            Some(v) => Some(vid("vlan", v)?),
        };
        let trunk = match &c.vlan_trunk {
            None => Vec::new(),
            Some(entries) => collect_trunk(entries)?,
        };
        if c.hairpin_mode && c.promisc_mode {
            return Err(Error::invalid_config(
                "hairpinMode and promiscMode cannot both be set",
            ));
        }
        if c.disable_container_interface && req.conf.ipam_type().is_some() {
            return Err(Error::invalid_config(
                "disableContainerInterface cannot be used with ipam: an interface that stays down cannot carry addresses",
            ));
        }
        // Both backends give the same NAT; the rules always go in through nftables, which
        // the kernel runs alongside iptables' tables (see the README).
        match c.ip_masq_backend.as_deref() {
            None | Some("nftables") | Some("iptables") => {}
            Some(other) => {
                return Err(Error::invalid_config(format!(
                    "ipMasqBackend {other:?}: must be \"nftables\" or \"iptables\""
                )))
            }
        }
        let mut mac = cni_args_mac(&req.cmd.args)?;
        for candidate in [req.conf.args_mac()?, req.conf.runtime_config_mac()?] {
            if candidate.is_some() {
                mac = candidate;
            }
        }
        if let Some(m) = mac {
            if m.is_multicast() || m.is_zero() {
                return Err(Error::invalid_config(format!(
                    "mac {m} is not a unicast address"
                )));
            }
        }
        req.cmd.args.check_known(&["MAC"])?;
        Ok(Settings {
            bridge,
            // isDefaultGateway implies isGateway, as in the reference plugin.
            is_gateway: c.is_gateway || c.is_default_gateway,
            is_default_gateway: c.is_default_gateway,
            force_address: c.force_address,
            ip_masq: c.ip_masq,
            mtu: c.mtu.filter(|m| *m != 0),
            hairpin: c.hairpin_mode,
            promisc: c.promisc_mode,
            vlan,
            trunk,
            preserve_default_vlan: c.preserve_default_vlan,
            spoofchk: c.macspoofchk,
            enable_dad: c.enabledad,
            disable_container_interface: c.disable_container_interface,
            port_isolation: c.port_isolation,
            mac,
        })
    }
}

fn vid(field: &str, v: i64) -> Result<u16> {
    u16::try_from(v)
        .ok()
        .filter(|v| (1..=MAX_VID).contains(v))
        .ok_or_else(|| {
            Error::invalid_config(format!(
                "{field} {v} is out of range: VLAN IDs are 1 to {MAX_VID}"
            ))
        })
}

/// Expands ids and inclusive ranges, sorted and without duplicates.
pub fn collect_trunk(entries: &[TrunkEntry]) -> Result<Vec<u16>> {
    let mut out = Vec::new();
    for e in entries {
        match (e.id, e.min_id, e.max_id) {
            (Some(id), None, None) => out.push(vid("vlanTrunk id", id)?),
            (None, Some(min), Some(max)) => {
                let (lo, hi) = (vid("vlanTrunk minID", min)?, vid("vlanTrunk maxID", max)?);
                if lo > hi {
                    return Err(Error::invalid_config(format!(
                        "vlanTrunk minID {lo} is greater than maxID {hi}"
                    )));
                }
                out.extend(lo..=hi);
            }
            (None, Some(_), None) | (None, None, Some(_)) => {
                return Err(Error::invalid_config(
                    "vlanTrunk: minID and maxID must be given together",
                ))
            }
            (None, None, None) => {
                return Err(Error::invalid_config(
                    "vlanTrunk: an entry needs id or minID and maxID",
                ))
            }
            _ => {
                return Err(Error::invalid_config(
                    "vlanTrunk: an entry has either id or minID and maxID, not both",
                ))
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: Option<i64>, min: Option<i64>, max: Option<i64>) -> TrunkEntry {
        TrunkEntry {
            id,
            min_id: min,
            max_id: max,
        }
    }

    #[test]
    fn trunk_expands_ranges_sorted_and_deduplicated() {
        let t = collect_trunk(&[
            entry(Some(200), None, None),
            entry(None, Some(100), Some(102)),
            entry(Some(101), None, None),
        ])
        .expect("valid");
        assert_eq!(t, vec![100, 101, 102, 200]);
    }

    #[test]
    fn trunk_refuses_inverted_or_half_ranges_and_out_of_range_ids() {
        for bad in [
            entry(None, Some(300), Some(200)),
            entry(None, Some(10), None),
            entry(None, None, Some(10)),
            entry(Some(0), None, None),
            entry(Some(4095), None, None),
            entry(None, Some(1), Some(5000)),
            entry(Some(5), Some(1), Some(2)),
            entry(None, None, None),
        ] {
            let e = collect_trunk(std::slice::from_ref(&bad)).expect_err("invalid");
            assert_eq!(e.code(), cni_common::Code::InvalidConfig, "{bad:?}");
            assert!(e.msg().contains("vlanTrunk"), "{}", e.msg());
        }
    }

    #[test]
    fn vlan_4095_is_refused_naming_the_field() {
        let e = vid("vlan", 4095).expect_err("invalid");
        assert!(e.msg().starts_with("vlan 4095"), "{}", e.msg());
        assert_eq!(vid("vlan", 4094).expect("valid"), 4094);
    }
}
