//! The limits the kernel sets on what a state may ask for, checked while parsing so that a
//! value the kernel would refuse (or silently cut) is refused by name before anything is
//! touched.

use cni_common::netlink::{MTU_RANGE, RT_TABLE_DEFAULT, RT_TABLE_LOCAL, RT_TABLE_UNSPEC};

use super::model::IpConf;
use crate::fields::{refused, Obj};
use crate::Error;

/// Longest interface name (IFNAMSIZ - 1).
const MAX_NAME: usize = 15;

/// Longest link alias, in bytes (IFALIASZ - 1).
const MAX_DESCRIPTION: usize = 255;

/// IPv6's minimum MTU: the kernel takes IPv6 off a link whose MTU is below it.
const IPV6_MIN_MTU: u32 = 1280;

/// The kernel keeps bond timers and counts in ints and refuses larger values.
pub(super) const KERNEL_INT_MAX: u64 = i32::MAX as u64;

/// A link's name as the kernel takes it, and as no path or `ip` argument misreads it.
pub(super) fn check_name(owner: &str, name: &str) -> Result<(), Error> {
    let bad = name.is_empty()
        || name.len() > MAX_NAME
        || name == "."
        || name == ".."
        || name
            .chars()
            .any(|c| c == '/' || c == ':' || c.is_whitespace() || c.is_control());
    if bad {
        return Err(Error::Refused(format!(
            "{owner}: {name:?} is not a valid interface name (1 to {MAX_NAME} characters, no '/', ':' or spaces)"
        )));
    }
    Ok(())
}

/// An interface's MTU, from IPv4's minimum to the largest the kernel takes.
pub(super) fn mtu(o: &mut Obj) -> Result<Option<u32>, Error> {
    range(o, "mtu", *MTU_RANGE.start(), *MTU_RANGE.end())
}

/// An MTU too small for IPv6 is refused where the interface also lists IPv6 addresses.
pub(super) fn check_ipv6_mtu(
    owner: &str,
    mtu: Option<u32>,
    ipv6: Option<&IpConf>,
) -> Result<(), Error> {
    let ipv6_addresses = ipv6.and_then(|c| c.addresses.as_ref());
    if let (Some(m), Some(addrs)) = (mtu, ipv6_addresses) {
        if m < IPV6_MIN_MTU && !addrs.is_empty() {
            return Err(Error::Refused(format!(
                "{owner}: mtu {m} is below {IPV6_MIN_MTU}, IPv6's minimum: the kernel removes \
                 IPv6 from such a link, so its ipv6 addresses could not be set"
            )));
        }
    }
    Ok(())
}

/// The kernel's own tables: local holds the node's local addresses, default is looked up
/// after main; unspec is no table. A policy's routes go to main or to tables of their own.
pub(super) fn check_table(owner: &str, table: Option<u32>) -> Result<(), Error> {
    if let Some(t @ (RT_TABLE_UNSPEC | RT_TABLE_DEFAULT | RT_TABLE_LOCAL)) = table {
        return Err(refused(
            owner,
            "table-id",
            &format!("{t} is a table of the kernel's own, not for a policy's routes"),
        ));
    }
    Ok(())
}

/// A number from `min` to `max`, refused with both bounds named.
pub(super) fn range(o: &mut Obj, key: &str, min: u32, max: u32) -> Result<Option<u32>, Error> {
    Ok(o.number_in(&[key], min.into(), max.into())?
        .map(|n| n as u32))
}

/// A link's alias: what the kernel stores (IFLA_IFALIAS) and `ip link` prints on a line.
pub(super) fn check_description(owner: &str, d: &str) -> Result<(), Error> {
    if d.len() > MAX_DESCRIPTION {
        return Err(refused(
            owner,
            "description",
            &format!(
                "is {} bytes long: the kernel keeps at most {MAX_DESCRIPTION}",
                d.len()
            ),
        ));
    }
    if d.chars().any(char::is_control) {
        return Err(refused(
            owner,
            "description",
            "must not hold control characters",
        ));
    }
    Ok(())
}

/// A VLAN ID: 0 and 4095 are reserved.
pub(super) fn vlan_id(o: &mut Obj, key: &str) -> Result<Option<u16>, Error> {
    Ok(o.number_in(&[key], 1, 4094)?.map(|n| n as u16))
}

#[cfg(test)]
mod tests {
    use cni_common::netlink::RT_TABLE_MAIN;
    use serde_json::{json, Value};

    use super::*;
    use crate::desired::{refusal, DesiredState};

    fn iface(fields: Value) -> Value {
        let mut iface = json!({"name": "eth1", "type": "ethernet"});
        for (key, value) in fields.as_object().expect("fields").clone() {
            iface[key] = value;
        }
        json!({ "interfaces": [iface] })
    }

    fn route_in(table: u32) -> Value {
        json!({"routes": {"config": [{"destination": "10.0.0.0/8",
            "next-hop-interface": "eth1", "table-id": table}]}})
    }

    #[test]
    fn an_mtu_below_ipv4s_minimum_or_above_65535_is_refused_naming_both_bounds() {
        for mtu in [0, 67, 65536] {
            let msg = refusal(iface(json!({ "mtu": mtu })));
            assert_eq!(
                msg,
                format!(
                    r#"interface eth1: field "mtu" must be a number from 68 to 65535, not {mtu}"#
                )
            );
        }
    }

    #[test]
    fn an_mtu_of_68_or_65535_is_accepted() {
        for mtu in [68, 65535] {
            let state = DesiredState::parse(&iface(json!({ "mtu": mtu }))).expect("parses");
            assert_eq!(state.interfaces[0].mtu, Some(mtu));
        }
    }

    #[test]
    fn an_mtu_below_1280_with_ipv6_addresses_is_refused() {
        let msg = refusal(iface(json!({"mtu": 1279,
            "ipv6": {"address": [{"ip": "2001:db8::1", "prefix-length": 64}]}})));
        assert!(
            msg.starts_with(
                "interface eth1: mtu 1279 is below 1280, IPv6's minimum: the kernel removes IPv6"
            ),
            "{msg}"
        );
    }

    #[test]
    fn an_mtu_below_1280_without_ipv6_addresses_is_accepted() {
        let state = DesiredState::parse(&iface(json!({"mtu": 1279,
            "ipv4": {"address": [{"ip": "192.0.2.1", "prefix-length": 24}]},
            "ipv6": {"enabled": false}})))
        .expect("parses");
        assert_eq!(state.interfaces[0].mtu, Some(1279));
    }

    #[test]
    fn an_mtu_of_1280_takes_ipv6_addresses() {
        let state = DesiredState::parse(&iface(json!({"mtu": 1280,
            "ipv6": {"address": [{"ip": "2001:db8::1", "prefix-length": 64}]}})))
        .expect("parses");
        assert_eq!(state.interfaces[0].mtu, Some(1280));
    }

    #[test]
    fn a_description_longer_than_255_bytes_is_refused() {
        // 128 characters, 256 bytes: the kernel counts bytes.
        let msg = refusal(iface(json!({"description": "é".repeat(128)})));
        assert_eq!(
            msg,
            r#"interface eth1: field "description" is 256 bytes long: the kernel keeps at most 255"#
        );
    }

    #[test]
    fn a_description_of_255_bytes_is_accepted() {
        let long = "a".repeat(255);
        let state = DesiredState::parse(&iface(json!({ "description": long }))).expect("parses");
        assert_eq!(state.interfaces[0].description, Some(long));
    }

    #[test]
    fn a_description_with_control_characters_is_refused() {
        for description in ["two\nlines", "a\tb", "bell\u{7}"] {
            let msg = refusal(iface(json!({ "description": description })));
            assert_eq!(
                msg, r#"interface eth1: field "description" must not hold control characters"#,
                "{description:?}"
            );
        }
    }

    fn bond_option(key: &str, value: u64) -> Value {
        json!({"interfaces": [{"name": "bond0", "type": "bond",
            "link-aggregation": {"mode": "active-backup", "options": { key: value }}}]})
    }

    #[test]
    fn bond_timers_and_min_links_above_the_kernels_int_are_refused() {
        for key in ["miimon", "updelay", "downdelay", "min_links"] {
            let msg = refusal(bond_option(key, 2_147_483_648));
            assert_eq!(
                msg,
                format!(
                    r#"interface bond0: field "link-aggregation.options.{key}" must be a number from 0 to 2147483647, not 2147483648"#
                )
            );
        }
    }

    #[test]
    fn bond_timers_and_min_links_up_to_the_kernels_int_are_accepted() {
        for key in ["miimon", "updelay", "downdelay", "min_links"] {
            let state = DesiredState::parse(&bond_option(key, 2_147_483_647)).expect("parses");
            let bond = state.interfaces[0].bond.clone().expect("bond");
            let value = match key {
                "miimon" => bond.miimon,
                "updelay" => bond.updelay,
                "downdelay" => bond.downdelay,
                _ => bond.min_links,
            };
            assert_eq!(value, Some(2_147_483_647), "{key}");
        }
    }

    #[test]
    fn routes_into_the_kernels_own_tables_are_refused() {
        for table in [RT_TABLE_UNSPEC, RT_TABLE_DEFAULT, RT_TABLE_LOCAL] {
            let msg = refusal(route_in(table));
            assert_eq!(
                msg,
                format!(
                    r#"route 0: field "table-id" {table} is a table of the kernel's own, not for a policy's routes"#
                )
            );
        }
    }

    #[test]
    fn routes_into_main_and_tables_of_their_own_are_accepted() {
        for table in [RT_TABLE_MAIN, 1, 256] {
            let state = DesiredState::parse(&route_in(table)).expect("parses");
            assert_eq!(state.routes[0].table, Some(table));
        }
    }

    #[test]
    fn a_vlan_id_of_0_or_above_4094_is_refused_naming_both_bounds() {
        for id in [0, 4095] {
            let msg = refusal(
                json!({"interfaces": [{"name": "br0", "type": "linux-bridge",
                "bridge": {"port": [{"name": "eth1", "vlan": {"mode": "access", "tag": id}}]}}]}),
            );
            assert!(
                msg.ends_with(&format!("must be a number from 1 to 4094, not {id}")),
                "{msg}"
            );
        }
    }

    #[test]
    fn an_invalid_name_is_refused() {
        let msg = refusal(json!({"interfaces": [{"name": "a-name-far-too-long"}]}));
        assert!(msg.contains("is not a valid interface name"), "{msg}");
    }
}
