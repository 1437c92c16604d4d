//! The bridge config, field for field the reference plugin's (v1.9), validated before anything
//! changes: every refusal is code 7 and names the field.

use cni_common::config::{cni_args_mac, mtu_field, pick_mac};
use cni_common::mac::MacAddr;
use cni_common::skel::Request;
use cni_common::vlan::{collect_trunk, vlan_id, TrunkEntry};
use cni_common::{Error, Result};
use serde::Deserialize;

pub const DEFAULT_BRIDGE: &str = "cni0";

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
    #[serde(default)]
    pub vlan_filtering_required: bool,
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
    /// Refuse a VLAN config on an existing bridge that does not filter by VLAN, instead of
    /// programming the port's VLANs and warning that they are not enforced yet.
    pub vlan_filtering_required: bool,
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
        if let Some(why) = cni_common::env::ifname_problem(&bridge) {
            return Err(Error::invalid_config(format!(
                "bridge: interface name {why}"
            )));
        }
        let vlan = match c.vlan {
            None | Some(0) => None,
            Some(v) => Some(vlan_id("vlan", v, 1)?),
        };
        let mtu = mtu_field("mtu", c.mtu)?;
        let trunk = match &c.vlan_trunk {
            None => Vec::new(),
            Some(entries) => collect_trunk("vlanTrunk", entries, 1)?,
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
        // `<bridge>.<vlan>` holds the gateway of an access VLAN: refused now rather than after
        // the veth and the IPAM lease exist.
        if let (Some(vid), true) = (vlan, c.is_gateway || c.is_default_gateway) {
            let name = format!("{bridge}.{vid}");
            if req.conf.ipam_type().is_some() && name.len() > cni_common::env::MAX_IFNAME_LEN {
                return Err(Error::invalid_config(format!(
                    "isGateway with vlan {vid}: the gateway interface name {name} is longer than \
                     15 characters; use a shorter bridge name"
                )));
            }
        }
        let mac = pick_mac([
            cni_args_mac(&req.cmd.args)?,
            req.conf.args_mac()?,
            req.conf.runtime_config_mac()?,
        ])?;
        req.cmd.args.check_known(&["MAC"])?;
        Ok(Settings {
            bridge,
            // isDefaultGateway implies isGateway, as in the reference plugin.
            is_gateway: c.is_gateway || c.is_default_gateway,
            is_default_gateway: c.is_default_gateway,
            force_address: c.force_address,
            ip_masq: c.ip_masq,
            mtu,
            hairpin: c.hairpin_mode,
            promisc: c.promisc_mode,
            vlan,
            trunk,
            preserve_default_vlan: c.preserve_default_vlan,
            spoofchk: c.macspoofchk,
            enable_dad: c.enabledad,
            disable_container_interface: c.disable_container_interface,
            port_isolation: c.port_isolation,
            vlan_filtering_required: c.vlan_filtering_required,
            mac,
        })
    }
}
