//! The port's VLANs, as the reference plugin v1.9 sets them: the access `vlan` is the PVID and
//! leaves untagged, trunk VLANs are tagged, and the bridge's default VLAN (normally 1) is taken
//! off the port unless `preserveDefaultVlan`.

use cni_common::netlink::{Link, Netlink, PortVlan};
use cni_common::Result;

use crate::config::Settings;

/// The VLANs the port must carry. A trunk without an access VLAN keeps VID 1 as its native
/// (PVID, untagged) VLAN, as the reference plugin does.
pub fn port_vlans(s: &Settings) -> Vec<PortVlan> {
    let native = match (s.vlan, s.trunk.is_empty()) {
        (Some(vid), _) => Some(vid),
        (None, false) => Some(1),
        (None, true) => None,
    };
    let mut vlans: Vec<PortVlan> = native.into_iter().map(PortVlan::access).collect();
    // A VID that is the access VLAN stays untagged; adding it again tagged would take its PVID.
    vlans.extend(
        s.trunk
            .iter()
            .filter(|vid| Some(**vid) != native)
            .map(|vid| PortVlan::tagged(*vid)),
    );
    vlans
}

/// `bridge vlan del dev <port> vid <default pvid>; bridge vlan add dev <port> vid ...`. A new
/// port holds only the bridge's default PVID, read from the bridge, so nothing is listed first.
pub fn set_port_vlans(nl: &Netlink, port: u32, bridge: &Link, s: &Settings) -> Result<()> {
    apply_port_vlans(nl, port, bridge, &port_vlans(s), s.preserve_default_vlan)
}

/// Makes `port` an access port of `vid`, as [`set_port_vlans`] does for a pod's port. Applied
/// again to a port that is one already, it changes nothing: the kernel takes an existing VLAN's
/// flags as they are and ignores the deletion of a VLAN the port does not carry.
pub fn set_access_port_vlan(
    nl: &Netlink,
    port: u32,
    bridge: &Link,
    vid: u16,
    preserve_default_vlan: bool,
) -> Result<()> {
    apply_port_vlans(
        nl,
        port,
        bridge,
        &[PortVlan::access(vid)],
        preserve_default_vlan,
    )
}

fn apply_port_vlans(
    nl: &Netlink,
    port: u32,
    bridge: &Link,
    vlans: &[PortVlan],
    preserve_default_vlan: bool,
) -> Result<()> {
    if vlans.is_empty() {
        return Ok(());
    }
    if !preserve_default_vlan {
        let default = bridge.vlan_default_pvid.unwrap_or(1);
        if default != 0 && !vlans.iter().any(|v| v.vid == default) {
            nl.bridge_vlan_del(port, &[PortVlan::access(default)])?;
        }
    }
    nl.bridge_vlan_add(port, vlans)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(vlan: Option<u16>, trunk: &[u16]) -> Settings {
        Settings {
            vlan,
            trunk: trunk.to_vec(),
            ..Settings::default()
        }
    }

    #[test]
    fn an_access_vlan_is_pvid_and_untagged() {
        assert_eq!(
            port_vlans(&settings(Some(100), &[])),
            vec![PortVlan::access(100)]
        );
    }

    #[test]
    fn a_trunk_without_access_vlan_keeps_vid_1_native() {
        assert_eq!(
            port_vlans(&settings(None, &[100, 200])),
            vec![
                PortVlan::access(1),
                PortVlan::tagged(100),
                PortVlan::tagged(200)
            ]
        );
    }

    #[test]
    fn access_and_trunk_combine_without_tagging_the_access_vlan() {
        assert_eq!(
            port_vlans(&settings(Some(100), &[100, 200])),
            vec![PortVlan::access(100), PortVlan::tagged(200)]
        );
    }

    #[test]
    fn no_vlan_config_leaves_the_port_alone() {
        assert!(port_vlans(&settings(None, &[])).is_empty());
    }
}
