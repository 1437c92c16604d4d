//! The sections of controllers: a bridge's options and ports (with their VLANs), and a bond's
//! mode, options and ports.

use serde_json::Value;

use super::bounds::{check_name, range, vlan_id, KERNEL_INT_MAX};
use super::model::{bond_mode, BondConf, BridgeConf, BridgePortConf, PortVlanConf};
use crate::fields::{refused, Obj};
use crate::Error;

/// `bridge`: its options and the exact set of its ports.
pub(super) fn parse_bridge(mut b: Obj) -> Result<BridgeConf, Error> {
    let owner = b.owner().to_string();
    let mut conf = BridgeConf::default();
    if let Some(o) = b.object(&["options"])? {
        parse_bridge_options(o, &mut conf)?;
    }
    if let Some((path, items)) = b.array(&["port", "ports"])? {
        let mut ports = Vec::new();
        for (i, item) in items.iter().enumerate() {
            ports.push(parse_bridge_port(&owner, &format!("{path}[{i}]"), item)?);
        }
        conf.ports = Some(ports);
    }
    b.finish()?;
    Ok(conf)
}

/// `bridge.options`: STP and the bridge's own settings.
fn parse_bridge_options(mut o: Obj, conf: &mut BridgeConf) -> Result<(), Error> {
    // Timers count down on their own: a report carries them, an apply ignores them.
    o.ignore(&["gc-timer", "hello-timer"]);
    if let Some(mut stp) = o.object(&["stp"])? {
        conf.stp = stp.bool(&["enabled"])?;
        conf.forward_delay = range(&mut stp, "forward-delay", 2, 30)?;
        conf.hello_time = range(&mut stp, "hello-time", 1, 10)?;
        conf.max_age = range(&mut stp, "max-age", 6, 40)?;
        conf.priority = stp
            .number(&["priority"], u16::MAX.into())?
            .map(|n| n as u16);
        stp.finish()?;
    }
    // Seconds; the kernel counts hundredths, in 32 bits.
    conf.ageing_time = o
        .number(&["mac-ageing-time"], u64::from(u32::MAX / 100))?
        .map(|n| n as u32);
    conf.multicast_snooping = o.bool(&["multicast-snooping"])?;
    o.finish()
}

/// One entry of `bridge.port`, at `here`.
fn parse_bridge_port(owner: &str, here: &str, item: &Value) -> Result<BridgePortConf, Error> {
    let mut p = Obj::new(owner, here, item)?;
    let name = p
        .string(&["name"])?
        .ok_or_else(|| refused(owner, &format!("{here}.name"), "is required"))?;
    check_name(owner, &name)?;
    let mut port = BridgePortConf {
        name,
        stp_priority: p.number(&["stp-priority"], 63)?.map(|n| n as u16),
        stp_path_cost: p.number(&["stp-path-cost"], 65535)?.map(|n| n as u32),
        stp_hairpin_mode: p.bool(&["stp-hairpin-mode"])?,
        vlan: None,
    };
    if let Some(v) = p.object(&["vlan"])? {
        port.vlan = Some(parse_port_vlan(owner, v)?);
    }
    p.finish()?;
    Ok(port)
}

/// A port's `vlan`: access (one VLAN) or trunk (its tags, and a native VLAN untagged).
fn parse_port_vlan(owner: &str, mut v: Obj) -> Result<PortVlanConf, Error> {
    let mut conf = PortVlanConf::default();
    let here = v.path_of("mode");
    conf.trunk = match v.string(&["mode"])?.as_deref() {
        None | Some("access") => false,
        Some("trunk") => true,
        Some(other) => {
            return Err(refused(
                owner,
                &here,
                &format!("must be access or trunk, not {other:?}"),
            ))
        }
    };
    conf.tag = vlan_id(&mut v, "tag")?;
    conf.enable_native = v.bool(&["enable-native"])?.unwrap_or(false);
    if let Some((path, items)) = v.array(&["trunk-tags"])? {
        for (i, item) in items.iter().enumerate() {
            conf.trunk_tags
                .push(parse_trunk_tag(owner, &format!("{path}[{i}]"), item)?);
        }
    }
    v.finish()?;
    check_port_vlan(owner, conf)
}

/// One entry of `trunk-tags`, at `here`: an `id`, or an `id-range` from `min` to `max`.
fn parse_trunk_tag(owner: &str, here: &str, item: &Value) -> Result<(u16, u16), Error> {
    let mut t = Obj::new(owner, here, item)?;
    let tags = if let Some(id) = vlan_id(&mut t, "id")? {
        (id, id)
    } else if let Some(mut r) = t.object(&["id-range"])? {
        let min = vlan_id(&mut r, "min")?;
        let max = vlan_id(&mut r, "max")?;
        let (Some(min), Some(max)) = (min, max) else {
            return Err(refused(owner, &r.path_of("min"), "and max are required"));
        };
        if min > max {
            return Err(refused(owner, &r.path_of("min"), "is larger than max"));
        }
        r.finish()?;
        (min, max)
    } else {
        return Err(refused(owner, here, "needs id or id-range"));
    };
    t.finish()?;
    Ok(tags)
}

/// What each mode of port carries: an access port one VLAN, a trunk its tags.
fn check_port_vlan(owner: &str, conf: PortVlanConf) -> Result<PortVlanConf, Error> {
    match (conf.trunk, conf.tag, conf.trunk_tags.is_empty()) {
        (false, _, false) => Err(Error::Refused(format!(
            "{owner}: an access port cannot have trunk-tags"
        ))),
        (false, None, _) if conf.enable_native => Err(Error::Refused(format!(
            "{owner}: enable-native is for trunk ports"
        ))),
        (true, _, true) => Err(Error::Refused(format!(
            "{owner}: a trunk port needs trunk-tags"
        ))),
        (true, None, _) if conf.enable_native => Err(Error::Refused(format!(
            "{owner}: enable-native needs a tag"
        ))),
        _ => Ok(conf),
    }
}

/// `link-aggregation`: the mode, the timers and counts, and the exact set of ports.
pub(super) fn parse_bond(mut b: Obj) -> Result<BondConf, Error> {
    let owner = b.owner().to_string();
    let mut conf = BondConf::default();
    let here = b.path_of("mode");
    if let Some((_, v)) = b.value(&["mode"]) {
        let text = match &v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            other => other.to_string(),
        };
        conf.mode = Some(
            bond_mode(&text)
                .ok_or_else(|| refused(&owner, &here, &format!("{text:?} is not a bond mode")))?,
        );
    }
    if let Some(mut o) = b.object(&["options"])? {
        let max = KERNEL_INT_MAX;
        conf.miimon = o.number(&["miimon"], max)?.map(|n| n as u32);
        conf.updelay = o.number(&["updelay"], max)?.map(|n| n as u32);
        conf.downdelay = o.number(&["downdelay"], max)?.map(|n| n as u32);
        conf.min_links = o.number(&["min_links"], max)?.map(|n| n as u32);
        o.finish()?;
    }
    if let Some((path, items)) = b.array(&["port", "ports"])? {
        let mut ports = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let name = item.as_str().ok_or_else(|| {
                refused(&owner, &format!("{path}[{i}]"), "must be an interface name")
            })?;
            check_name(&owner, name)?;
            ports.push(name.to_string());
        }
        conf.ports = Some(ports);
    }
    b.finish()?;
    Ok(conf)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::desired::{refusal, DesiredState};

    #[test]
    fn an_unknown_bridge_option_is_refused_by_its_path() {
        let msg = refusal(
            json!({"interfaces": [{"name": "br0", "type": "linux-bridge",
            "bridge": {"options": {"vlan-protocol": "802.1ad"}}}]}),
        );
        assert_eq!(
            msg,
            r#"interface br0: field "bridge.options.vlan-protocol" is not supported"#
        );
    }

    #[test]
    fn ports_is_an_alias_of_port() {
        let state = DesiredState::parse(&json!({"interfaces": [
            {"name": "bond0", "type": "bond", "link-aggregation": {"mode": "active-backup", "ports": ["eth1", "eth2"]}},
            {"name": "br0", "type": "linux-bridge", "bridge": {"ports": [{"name": "bond0"}]}}
        ]}))
        .expect("parses");
        assert_eq!(
            state.interfaces[0].ports(),
            Some(vec!["eth1".to_string(), "eth2".to_string()])
        );
        assert_eq!(
            state.interfaces[0].bond.as_ref().and_then(|b| b.mode),
            Some(1)
        );
        assert_eq!(state.interfaces[1].ports(), Some(vec!["bond0".to_string()]));
    }

    #[test]
    fn a_trunk_port_reads_ids_and_ranges() {
        let state = DesiredState::parse(&json!({"interfaces": [{"name": "br0", "type": "linux-bridge",
            "bridge": {"port": [{"name": "eth1", "vlan": {"mode": "trunk", "enable-native": true, "tag": 100,
                "trunk-tags": [{"id": 101}, {"id-range": {"min": 200, "max": 299}}]}}]}}]}))
        .expect("parses");
        let vlan = state.interfaces[0]
            .bridge
            .as_ref()
            .and_then(|b| b.ports.as_ref())
            .and_then(|p| p[0].vlan.clone());
        assert_eq!(
            vlan,
            Some(PortVlanConf {
                trunk: true,
                tag: Some(100),
                enable_native: true,
                trunk_tags: vec![(101, 101), (200, 299)]
            })
        );
    }

    #[test]
    fn an_access_port_with_trunk_tags_is_refused() {
        let msg = refusal(
            json!({"interfaces": [{"name": "br0", "type": "linux-bridge",
            "bridge": {"port": [{"name": "eth1", "vlan": {"mode": "access", "tag": 5, "trunk-tags": [{"id": 6}]}}]}}]}),
        );
        assert!(msg.contains("access port cannot have trunk-tags"), "{msg}");
    }
}
