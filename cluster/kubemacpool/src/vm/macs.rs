//! The MACs of a VM's interfaces: which interfaces get a new one, which keep the one the old
//! object had, which MACs are refused; and the MACs a stored VM holds.

use std::collections::{HashMap, HashSet};

use net_types::MacAddr;
use serde_json::Value;

use super::interfaces::{previous_macs, read_interfaces};
use super::json::at;
use super::{Denial, Needs, INTERFACES};
use crate::patch::parse_unicast;

/// Fills `targets`, `kept` and `requested` from the interfaces; outside a dry run, refuses
/// what upstream refuses of them.
pub(super) fn assign(
    vm: &Value,
    old: Option<&Value>,
    dry_run: bool,
    needs: &mut Needs,
) -> Result<(), Denial> {
    let ifaces = read_interfaces(vm)?;
    let mut names = HashSet::new();
    if !dry_run && ifaces.iter().any(|i| !names.insert(i.name)) {
        return Err(Denial(
            "Failed to mutate virtual machine: every interface must have a unique name".into(),
        ));
    }
    let previous = old.map(previous_macs).unwrap_or_default();
    // Every MAC the VM will carry, with the interface that carries it.
    let mut carried: HashMap<MacAddr, &str> = HashMap::new();
    for (i, iface) in ifaces.iter().enumerate() {
        let (text, kept) = match (iface.mac, previous.get(iface.name)) {
            (Some(text), _) => (text, false),
            (None, Some(Some(text))) => (*text, true),
            // An interface that existed without a MAC stays without, as upstream.
            (None, Some(None)) => continue,
            (None, None) => {
                if iface.managed {
                    needs.targets.push(i);
                }
                continue;
            }
        };
        let mac = if kept {
            // The old object's own MAC: kept as written; held only if it reads as one.
            needs.kept.push((i, text.to_string()));
            MacAddr::parse(text).ok()
        } else if dry_run {
            MacAddr::parse(text).ok()
        } else if iface.managed {
            Some(parse_unicast(text).map_err(|why| invalid(text, why))?)
        } else {
            Some(MacAddr::parse(text).map_err(|_| invalid(text, "is not a MAC address"))?)
        };
        let Some(mac) = mac else { continue };
        match carried.insert(mac, iface.name) {
            Some(first) if !dry_run => {
                return Err(Denial(format!(
                    "duplicate MAC address {mac} found on interfaces: {first} and {}",
                    iface.name
                )));
            }
            _ => {}
        }
        if kept || iface.managed {
            needs.requested.push(mac);
        }
    }
    Ok(())
}

fn invalid(text: &str, why: &str) -> Denial {
    match why {
        // Go's net.ParseMAC words, as upstream returns them.
        "is not a MAC address" => Denial(format!("address {text}: invalid MAC address")),
        _ => Denial(format!("address {text}: invalid MAC address, it {why}")),
    }
}

/// The MACs a stored VM holds: every non-empty, parseable `macAddress` of its interfaces (any
/// binding), once each, for the pool's view of what is in use.
pub fn held_macs(vm: &Value) -> Vec<MacAddr> {
    let list = at(vm, INTERFACES).and_then(Value::as_array);
    distinct_macs(
        list.into_iter()
            .flatten()
            .filter_map(|i| i.get("macAddress").and_then(Value::as_str)),
    )
}

/// The MACs among `addresses` that parse, each once.
pub fn distinct_macs<'a>(addresses: impl Iterator<Item = &'a str>) -> Vec<MacAddr> {
    let mut seen = HashSet::new();
    addresses
        .filter_map(|m| MacAddr::parse(m).ok())
        .filter(|m| seen.insert(*m))
        .collect()
}
