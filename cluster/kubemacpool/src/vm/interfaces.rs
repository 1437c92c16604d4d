//! The interfaces of a VM and its networks, and which interfaces get a MAC: a `masquerade`
//! binding, or any binding on a `multus` network.

use std::collections::HashMap;

use serde_json::Value;

use super::json::{at, objects_at, string_field};
use super::{Denial, INTERFACES, MAX_INTERFACES, NETWORKS};

/// One interface as read from the VM.
pub(super) struct Iface<'a> {
    pub(super) name: &'a str,
    pub(super) mac: Option<&'a str>,
    pub(super) managed: bool,
}

/// The interfaces with whether each gets a MAC; refuses what KubeVirt's schema cannot hold.
pub(super) fn read_interfaces(vm: &Value) -> Result<Vec<Iface<'_>>, Denial> {
    let Some(list) = objects_at(vm, INTERFACES, "interfaces")? else {
        return Ok(Vec::new());
    };
    if list.len() > MAX_INTERFACES {
        return Err(Denial(format!(
            "the virtual machine has {} interfaces, more than {MAX_INTERFACES}",
            list.len()
        )));
    }
    let networks = read_networks(vm)?;
    let mut out = Vec::with_capacity(list.len());
    for (i, item) in list.into_iter().enumerate() {
        let what = format!("interfaces[{i}]");
        let name = string_field(item, "name", &what)?.unwrap_or_default();
        let mac = string_field(item, "macAddress", &what)?.filter(|m| !m.is_empty());
        let masquerade = item.get("masquerade").is_some_and(|m| !m.is_null());
        let managed = match &networks {
            None => false,
            Some(nets) => masquerade || nets.get(name).copied().unwrap_or(false),
        };
        out.push(Iface { name, mac, managed });
    }
    Ok(out)
}

/// Network name → whether it is a `multus` network; `None` when the VM has no networks.
fn read_networks(vm: &Value) -> Result<Option<HashMap<&str, bool>>, Denial> {
    let Some(list) = objects_at(vm, NETWORKS, "networks")?.filter(|l| !l.is_empty()) else {
        return Ok(None);
    };
    let mut nets = HashMap::with_capacity(list.len());
    for (i, item) in list.into_iter().enumerate() {
        let what = format!("networks[{i}]");
        let name = string_field(item, "name", &what)?.unwrap_or_default();
        let multus = item.get("multus").is_some_and(|m| !m.is_null());
        nets.entry(name).or_insert(multus);
    }
    Ok(Some(nets))
}

/// Interface name → its MAC text, if it had one, in a stored object, read leniently: it is
/// already stored.
pub(super) fn previous_macs(old: &Value) -> HashMap<&str, Option<&str>> {
    let list = at(old, INTERFACES).and_then(Value::as_array);
    list.into_iter()
        .flatten()
        .map(|i| {
            let name = i.get("name").and_then(Value::as_str).unwrap_or_default();
            let mac = i.get("macAddress").and_then(Value::as_str);
            (name, mac.filter(|m| !m.is_empty()))
        })
        .collect()
}
