//! VirtualMachines (`kubevirt.io/v1`): which interfaces get a MAC, what an admission asks of the
//! pool, and the JSON Patch that answers it. Pure logic on JSON: no I/O, no client.
//!
//! An interface gets a MAC when its binding is `masquerade`, or when the network of the same
//! name is a `multus` network (any binding). Pod-network `bridge`, `passt`, `slirp` and
//! `binding` (plugin) interfaces get none. A VM without `spec.template.spec.networks` gets none.
//!
//! CREATE always stamps [`TRANSACTION_TIMESTAMP`], even when nothing is allocated: the pool
//! commits a VM's MACs once it sees the stored object at least that new.
//!
//! UPDATE acts only when `spec`, `metadata.labels` or `metadata.annotations` (the timestamp
//! aside) changed; it then stamps, and looks at the interfaces only when they changed. An
//! interface left without a MAC takes the one the interface of the same name had in the old
//! object (`kubectl apply` of a manifest without MACs keeps them); one that had none gets a
//! new MAC if it is an interface that gets one. A VM being deleted is left alone but for the
//! legacy finalizer, which every admission removes.
//!
//! What is refused (before anything is allocated): shapes KubeVirt's schema cannot hold
//! (`interfaces`/`networks` not lists of objects, a `name` or `macAddress` not a string, the
//! objects on the way not objects), more than [`MAX_INTERFACES`] interfaces, two interfaces of
//! one name, a MAC of a managed interface that is not a unicast address, and one MAC on two
//! interfaces of the VM (any binding: the guest would see both). One MAC on two VMs is
//! allowed: restores and imports do that.
//! `null` counts as absent, as it does when KubeVirt decodes the object.
//!
//! Other odd inputs pass through unchanged or get a correct patch: a MAC on an interface that
//! gets none is left to KubeVirt to judge; an old object that cannot be read keeps nothing.

use std::collections::{HashMap, HashSet};

use net_types::MacAddr;
use serde_json::{json, Map, Value};

pub use crate::patch::Denial;
use crate::patch::{escape_pointer, parse_unicast};

pub const TRANSACTION_TIMESTAMP: &str = "kubemacpool.io/transaction-timestamp";
pub const LEGACY_FINALIZER: &str = "k8s.v1.cni.cncf.io/kubeMacPool";
/// Above this many interfaces a VM is refused. KubeVirt cannot attach that many PCI devices to
/// one guest anyway; the bound caps the work (and the MACs) one request may ask of the
/// allocator.
pub const MAX_INTERFACES: usize = 256;

const INTERFACES: &str = "/spec/template/spec/domain/devices/interfaces";
const NETWORKS: &str = "/spec/template/spec/networks";

/// What one VM admission asks of the pool, found before anything is allocated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Needs {
    /// Indices of the interfaces that get a new MAC, in order.
    targets: Vec<usize>,
    /// Interfaces left blank by an UPDATE, with the MAC text they had.
    kept: Vec<(usize, String)>,
    requested: Vec<MacAddr>,
    stamp: bool,
    /// Indices of the legacy finalizer in `metadata.finalizers`.
    legacy: Vec<usize>,
}

impl Needs {
    /// How many new MACs the VM needs.
    pub fn count(&self) -> usize {
        self.targets.len()
    }

    /// MACs the VM names itself (set on interfaces that get one, and those kept from the old
    /// object), to be recorded as held.
    pub fn requested(&self) -> &[MacAddr] {
        &self.requested
    }

    /// True when the webhook has nothing to do: respond allowed without a patch.
    pub fn is_noop(&self) -> bool {
        !self.stamp && self.targets.is_empty() && self.kept.is_empty() && self.legacy.is_empty()
    }
}

/// One interface as read from the VM.
struct Iface<'a> {
    name: &'a str,
    mac: Option<&'a str>,
    managed: bool,
}

/// Reads a VM (CREATE: `old` is `None`; UPDATE: the previous object) and validates all that
/// can be refused before the caller allocates anything. An UPDATE whose `old` is not an object
/// is treated as a change of everything, with nothing to keep.
pub fn needs(vm: &Value, old: Option<&Value>) -> Result<Needs, Denial> {
    // The stamp goes into the annotations: they must be an object, if present.
    object_at(vm, "/metadata/annotations")?;
    let mut needs = Needs {
        legacy: legacy_finalizers(vm),
        ..Needs::default()
    };
    if at(vm, "/metadata/deletionTimestamp").is_some() {
        // Being deleted: only the legacy finalizer may go, or the deletion would wait on it.
        return Ok(needs);
    }
    let create = old.is_none();
    let old = old.filter(|o| o.is_object());
    let interfaces_changed = match old {
        None => true,
        Some(old) => {
            if !changed(vm, old) {
                return Ok(needs);
            }
            at(vm, INTERFACES) != at(old, INTERFACES)
        }
    };
    needs.stamp = true;
    if interfaces_changed {
        // Upstream words the refusals of a create so; an update's come bare.
        let context = |Denial(m)| match create {
            true => Denial(format!("Failed to allocate mac to the vm object: {m}")),
            false => Denial(m),
        };
        assign(vm, old, &mut needs).map_err(context)?;
    }
    Ok(needs)
}

/// Fills `targets`, `kept` and `requested` from the interfaces.
fn assign(vm: &Value, old: Option<&Value>, needs: &mut Needs) -> Result<(), Denial> {
    let ifaces = read_interfaces(vm)?;
    let mut names = HashSet::new();
    if ifaces.iter().any(|i| !names.insert(i.name)) {
        return Err(Denial(
            "Failed to mutate virtual machine: every interface must have a unique name".into(),
        ));
    }
    let previous = old.map(previous_macs).unwrap_or_default();
    // Every MAC the VM will carry, with the interface that carries it.
    let mut carried: HashMap<MacAddr, &str> = HashMap::new();
    for (i, iface) in ifaces.iter().enumerate() {
        let (text, kept) = match iface.mac {
            Some(text) => (text, false),
            None => match previous.get(iface.name) {
                Some(text) => (*text, true),
                None => {
                    if iface.managed {
                        needs.targets.push(i);
                    }
                    continue;
                }
            },
        };
        let mac = if kept {
            // The old object's own MAC: kept as written; held only if it reads as one.
            needs.kept.push((i, text.to_string()));
            MacAddr::parse(text).ok()
        } else if iface.managed {
            Some(parse_unicast(text).map_err(|why| invalid(text, why))?)
        } else {
            // Not ours to judge; KubeVirt validates it.
            MacAddr::parse(text).ok()
        };
        let Some(mac) = mac else { continue };
        if let Some(first) = carried.insert(mac, iface.name) {
            return Err(Denial(format!(
                "duplicate MAC address {text} found on interfaces {first} and {}",
                iface.name
            )));
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

/// The interfaces with whether each gets a MAC; refuses what KubeVirt's schema cannot hold.
fn read_interfaces(vm: &Value) -> Result<Vec<Iface<'_>>, Denial> {
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

/// Interface name → MAC text in a stored object, read leniently: it is already stored.
fn previous_macs(old: &Value) -> HashMap<&str, &str> {
    let list = at(old, INTERFACES).and_then(Value::as_array);
    list.into_iter()
        .flatten()
        .filter_map(|i| {
            let name = i.get("name").and_then(Value::as_str).unwrap_or_default();
            let mac = i.get("macAddress").and_then(Value::as_str)?;
            (!mac.is_empty()).then_some((name, mac))
        })
        .collect()
}

/// Whether an UPDATE changed what upstream looks at: spec, labels, annotations but the stamp.
fn changed(vm: &Value, old: &Value) -> bool {
    let map = |v: &Value, p| {
        v.pointer(p)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let labels = |v: &Value| map(v, "/metadata/labels");
    let annotations = |v: &Value| {
        let mut a = map(v, "/metadata/annotations");
        a.remove(TRANSACTION_TIMESTAMP);
        a
    };
    at(vm, "/spec") != at(old, "/spec")
        || labels(vm) != labels(old)
        || annotations(vm) != annotations(old)
}

/// Where the legacy finalizer is, last first: removed in that order, each index stays right.
fn legacy_finalizers(vm: &Value) -> Vec<usize> {
    let list = vm.pointer("/metadata/finalizers").and_then(Value::as_array);
    list.into_iter()
        .flat_map(|l| l.iter().enumerate().rev())
        .filter(|(_, f)| f.as_str() == Some(LEGACY_FINALIZER))
        .map(|(i, _)| i)
        .collect()
}

/// The value at a JSON pointer; `None` if it or anything on the way is absent, null or not
/// an object.
fn at<'a>(v: &'a Value, pointer: &str) -> Option<&'a Value> {
    v.pointer(pointer).filter(|v| !v.is_null())
}

/// The object at `pointer`; a non-object on the way is refused.
fn object_at<'a>(v: &'a Value, pointer: &str) -> Result<Option<&'a Map<String, Value>>, Denial> {
    let keys: Vec<&str> = pointer.split('/').skip(1).collect();
    let not_an_object = |depth: usize| match depth {
        0 => Denial("the virtual machine is not an object".into()),
        _ => Denial(format!("{} is not an object", keys[..depth].join("."))),
    };
    let mut cur = v;
    for (depth, key) in keys.iter().enumerate() {
        match cur
            .as_object()
            .ok_or_else(|| not_an_object(depth))?
            .get(*key)
        {
            None | Some(Value::Null) => return Ok(None),
            Some(next) => cur = next,
        }
    }
    cur.as_object()
        .map(Some)
        .ok_or_else(|| not_an_object(keys.len()))
}

/// The list of objects at `pointer` (objects on the way); anything else present is refused.
type Objects<'a> = Vec<&'a Map<String, Value>>;
fn objects_at<'a>(v: &'a Value, pointer: &str, what: &str) -> Result<Option<Objects<'a>>, Denial> {
    let (parent, last) = pointer.rsplit_once('/').unwrap_or_default();
    let list = match object_at(v, parent)?.and_then(|p| p.get(last)) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(Denial(format!("{what} is not a list"))),
    };
    let object = |(i, item): (usize, &'a Value)| {
        item.as_object()
            .ok_or_else(|| Denial(format!("{what}[{i}] is not an object")))
    };
    list.iter()
        .enumerate()
        .map(object)
        .collect::<Result<_, _>>()
        .map(Some)
}

fn string_field<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    what: &str,
) -> Result<Option<&'a str>, Denial> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(Denial(format!("{what}: {key} is not a string"))),
    }
}

/// The JSON Patch (RFC 6902) that gives the interfaces their MACs (`macs` in the order of the
/// interfaces, `macs.len() == needs.count()`; extra MACs are ignored), restores kept MACs,
/// stamps [`TRANSACTION_TIMESTAMP`] with `timestamp` (creating the annotations if absent) and
/// removes [`LEGACY_FINALIZER`]. `vm` must be the object `needs` was read from.
pub fn patch(vm: &Value, needs: &Needs, macs: &[MacAddr], timestamp: &str) -> Value {
    debug_assert_eq!(macs.len(), needs.count());
    let mac_at = |i: usize| format!("{INTERFACES}/{i}/macAddress");
    let mut ops = Vec::new();
    for (i, mac) in needs.targets.iter().zip(macs) {
        // `add` sets a member whether or not it exists (RFC 6902 4.1).
        ops.push(json!({"op": "add", "path": mac_at(*i), "value": mac.to_string()}));
    }
    for (i, text) in &needs.kept {
        ops.push(json!({"op": "add", "path": mac_at(*i), "value": text}));
    }
    if needs.stamp {
        let stamp = json!({ TRANSACTION_TIMESTAMP: timestamp });
        let has_metadata = vm.get("metadata").is_some_and(Value::is_object);
        ops.push(match at(vm, "/metadata/annotations") {
            Some(_) => {
                let path = format!(
                    "/metadata/annotations/{}",
                    escape_pointer(TRANSACTION_TIMESTAMP)
                );
                json!({"op": "add", "path": path, "value": timestamp})
            }
            None if has_metadata => {
                json!({"op": "add", "path": "/metadata/annotations", "value": stamp})
            }
            None => json!({"op": "add", "path": "/metadata", "value": {"annotations": stamp}}),
        });
    }
    for i in &needs.legacy {
        ops.push(json!({"op": "remove", "path": format!("/metadata/finalizers/{i}")}));
    }
    Value::Array(ops)
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

#[cfg(test)]
mod tests {
    use super::*;

    const TS: &str = "2025-01-02T03:04:05.123456789Z";

    fn vm(interfaces: Value) -> Value {
        let networks = json!([{"name": "default", "pod": {}}, {"name": "br1", "multus": {}}]);
        json!({
            "metadata": {"name": "vm1", "namespace": "default"},
            "spec": {"running": false, "template": {"spec": {
                "domain": {"devices": {"interfaces": interfaces}}, "networks": networks}}},
        })
    }

    /// Applies `add`, `replace` and `remove` on JSON pointers, as the API server does.
    fn apply(doc: &Value, patch: &Value) -> Value {
        let mut doc = doc.clone();
        for op in patch.as_array().expect("a list") {
            let path = op["path"].as_str().expect("a path");
            let (parent, last) = path.rsplit_once('/').expect("a pointer");
            let key = last.replace("~1", "/").replace("~0", "~");
            let target = doc.pointer_mut(parent).expect("a parent");
            match (op["op"].as_str(), target) {
                (Some("add" | "replace"), Value::Object(m)) => {
                    m.insert(key, op["value"].clone());
                }
                (Some("remove"), Value::Array(a)) => {
                    a.remove(key.parse::<usize>().expect("an index"));
                }
                (op, target) => panic!("{op:?} on {target}"),
            }
        }
        doc
    }

    /// Admits `object`, gives it MACs 02:00:00:00:00:10 onwards and applies the patch.
    fn admit(object: &Value, old: Option<&Value>) -> (Needs, Value) {
        let needs = needs(object, old).expect("admitted");
        let macs: Vec<MacAddr> = (0..needs.count() as u64)
            .map(|i| MacAddr::from_u64(0x0200_0000_0010 + i))
            .collect();
        let patched = apply(object, &patch(object, &needs, &macs, TS));
        (needs, patched)
    }

    fn mac(vm: &Value, i: usize) -> Option<&str> {
        vm.pointer(&format!("{INTERFACES}/{i}/macAddress"))
            .and_then(Value::as_str)
    }

    fn refusal(object: &Value, old: Option<&Value>) -> String {
        needs(object, old).expect_err("refused").0
    }

    #[test]
    fn a_masquerade_interface_gets_a_mac() {
        let (needs, patched) = admit(&vm(json!([{"name": "default", "masquerade": {}}])), None);
        assert_eq!(needs.count(), 1);
        assert_eq!(mac(&patched, 0), Some("02:00:00:00:00:10"));
    }

    #[test]
    fn a_bridge_interface_on_the_pod_network_gets_none() {
        let (needs, patched) = admit(&vm(json!([{"name": "default", "bridge": {}}])), None);
        assert_eq!((needs.count(), mac(&patched, 0)), (0, None));
    }

    #[test]
    fn passt_slirp_and_plugin_bindings_on_the_pod_network_get_none() {
        for binding in ["passt", "slirp", "binding"] {
            let v = vm(json!([{"name": "default", binding: {}}]));
            assert_eq!(needs(&v, None).expect("ok").count(), 0, "{binding}");
        }
    }

    #[test]
    fn any_binding_on_a_multus_network_gets_a_mac() {
        for binding in ["bridge", "sriov", "masquerade"] {
            let v = vm(json!([{"name": "br1", binding: {}, "macAddress": null}]));
            assert_eq!(needs(&v, None).expect("ok").count(), 1, "{binding}");
        }
    }

    #[test]
    fn a_vm_without_networks_gets_no_mac() {
        let mut v = vm(json!([{"name": "default", "masquerade": {}}]));
        v["spec"]["template"]["spec"]["networks"] = json!([]);
        assert_eq!(needs(&v, None).expect("ok").count(), 0);
    }

    #[test]
    fn a_mac_the_vm_names_is_held_and_left_as_written() {
        let v = vm(json!([{"name": "br1", "bridge": {}, "macAddress": "02:AB:00:00:00:01"}]));
        let (needs, patched) = admit(&v, None);
        assert_eq!(needs.count(), 0);
        assert_eq!(needs.requested(), &[MacAddr([2, 0xab, 0, 0, 0, 1])]);
        assert_eq!(mac(&patched, 0), Some("02:AB:00:00:00:01"));
    }

    #[test]
    fn one_mac_on_two_interfaces_is_refused_with_upstreams_words() {
        let v = vm(json!([
            {"name": "default", "masquerade": {}, "macAddress": "02:00:00:00:ff:ff"},
            {"name": "br1", "bridge": {}, "macAddress": "02-00-00-00-FF-FF"}]));
        assert_eq!(
            refusal(&v, None),
            "Failed to allocate mac to the vm object: duplicate MAC address 02-00-00-00-FF-FF \
             found on interfaces default and br1"
        );
    }

    #[test]
    fn duplicate_interface_names_are_refused_with_upstreams_words() {
        let v = vm(json!([{"name": "br1", "bridge": {}}, {"name": "br1", "bridge": {}}]));
        assert_eq!(
            refusal(&v, None),
            "Failed to allocate mac to the vm object: Failed to mutate virtual machine: \
             every interface must have a unique name"
        );
    }

    #[test]
    fn an_invalid_or_multicast_mac_is_refused() {
        let v = vm(json!([{"name": "br1", "bridge": {}, "macAddress": "02:00:zz"}]));
        assert_eq!(
            refusal(&v, None),
            "Failed to allocate mac to the vm object: address 02:00:zz: invalid MAC address"
        );
        let v = vm(json!([{"name": "br1", "bridge": {}, "macAddress": "01:00:5e:00:00:01"}]));
        assert!(refusal(&v, None).ends_with("invalid MAC address, it is a multicast address"));
    }

    #[test]
    fn the_mac_of_an_interface_that_gets_none_is_left_to_kubevirt() {
        let v = vm(json!([{"name": "default", "bridge": {}, "macAddress": "nope"}]));
        assert!(needs(&v, None).expect("ok").requested().is_empty());
    }

    #[test]
    fn a_vm_with_1000_interfaces_is_refused() {
        let list: Vec<Value> = (0..1000)
            .map(|i| json!({"name": format!("n{i}"), "masquerade": {}}))
            .collect();
        assert!(refusal(&vm(Value::Array(list)), None).ends_with("1000 interfaces, more than 256"));
    }

    #[test]
    fn a_non_string_mac_is_refused() {
        let v = vm(json!([{"name": "br1", "bridge": {}, "macAddress": 12}]));
        assert!(refusal(&v, None).ends_with("interfaces[0]: macAddress is not a string"));
    }

    #[test]
    fn shapes_kubevirt_cannot_hold_are_refused() {
        let mut bad_networks = vm(json!([{"name": "br1", "bridge": {}}]));
        bad_networks["spec"]["template"]["spec"]["networks"] = json!([7]);
        for v in [
            vm(json!({"name": "br1"})),
            vm(json!(["br1"])),
            vm(json!([{"name": 1}])),
            bad_networks,
            json!({"metadata": {"name": "vm1"}, "spec": {"template": "x"}}),
            json!({"metadata": {"name": "vm1", "annotations": "x"}}),
            json!("a string"),
        ] {
            assert!(needs(&v, None).is_err(), "{v}");
        }
    }

    #[test]
    fn a_create_without_interfaces_still_gets_the_timestamp() {
        let (needs, patched) = admit(&json!({"metadata": {"name": "vm1"}}), None);
        let want = json!({TRANSACTION_TIMESTAMP: TS});
        assert!(!needs.is_noop() && patched["metadata"]["annotations"] == want);
    }

    #[test]
    fn the_patch_touches_nothing_else() {
        let mut v = vm(
            json!([{"name": "default", "masquerade": {}}, {"name": "x", "bridge": {}},
                              {"name": "br1", "bridge": {}}]),
        );
        v["metadata"]["labels"] = json!({"app": "x"});
        v["metadata"]["annotations"] = json!({"k8s/a~b": "c", TRANSACTION_TIMESTAMP: "old"});
        let mut expected = v.clone();
        expected["metadata"]["annotations"][TRANSACTION_TIMESTAMP] = json!(TS);
        let ifaces = &mut expected["spec"]["template"]["spec"]["domain"]["devices"]["interfaces"];
        ifaces[0]["macAddress"] = json!("02:00:00:00:00:10");
        ifaces[2]["macAddress"] = json!("02:00:00:00:00:11");
        assert_eq!(admit(&v, None).1, expected);
    }

    #[test]
    fn the_legacy_finalizer_is_removed() {
        let mut v = vm(json!([]));
        v["metadata"]["finalizers"] = json!([LEGACY_FINALIZER, "keep/me", LEGACY_FINALIZER]);
        let (_, patched) = admit(&v, None);
        assert_eq!(patched["metadata"]["finalizers"], json!(["keep/me"]));
    }

    #[test]
    fn an_update_that_changes_only_status_or_the_timestamp_is_a_noop() {
        let old = vm(json!([{"name": "br1", "bridge": {}}]));
        let mut new = old.clone();
        new["status"] = json!({"ready": true});
        new["metadata"]["resourceVersion"] = json!("7");
        new["metadata"]["annotations"] = json!({TRANSACTION_TIMESTAMP: "later"});
        assert!(needs(&new, Some(&old)).expect("ok").is_noop());
    }

    #[test]
    fn an_update_that_changes_only_a_label_stamps_but_allocates_nothing() {
        let old = vm(json!([{"name": "br1", "bridge": {}}]));
        let mut new = old.clone();
        new["metadata"]["labels"] = json!({"a": "b"});
        let (needs, patched) = admit(&new, Some(&old));
        let stamp = &patched["metadata"]["annotations"][TRANSACTION_TIMESTAMP];
        assert_eq!(
            (needs.count(), mac(&patched, 0), stamp),
            (0, None, &json!(TS))
        );
    }

    #[test]
    fn an_update_that_blanks_a_mac_keeps_the_old_one() {
        let old = vm(json!([
            {"name": "default", "masquerade": {}, "macAddress": "02:00:00:00:aa:01"},
            {"name": "br1", "bridge": {}, "macAddress": "02:00:00:00:aa:02"}]));
        let new = vm(json!([{"name": "default", "masquerade": {}},
                            {"name": "br1", "bridge": {}, "macAddress": ""}]));
        let (needs, patched) = admit(&new, Some(&old));
        assert_eq!((needs.count(), needs.requested().len()), (0, 2));
        assert_eq!(mac(&patched, 0), Some("02:00:00:00:aa:01"));
        assert_eq!(mac(&patched, 1), Some("02:00:00:00:aa:02"));
    }

    #[test]
    fn an_update_that_adds_an_interface_gives_only_it_a_new_mac() {
        let old =
            vm(json!([{"name": "default", "masquerade": {}, "macAddress": "02:00:00:00:aa:01"}]));
        let new = vm(json!([{"name": "default", "masquerade": {}}, {"name": "br1", "bridge": {}}]));
        let (needs, patched) = admit(&new, Some(&old));
        assert_eq!(needs.count(), 1);
        assert_eq!(mac(&patched, 0), Some("02:00:00:00:aa:01"));
        assert_eq!(mac(&patched, 1), Some("02:00:00:00:00:10"));
    }

    #[test]
    fn an_update_refusal_has_no_create_context_and_sees_kept_macs() {
        let old = vm(json!([{"name": "br1", "bridge": {}, "macAddress": "02:00:00:00:aa:01"}]));
        let new = vm(json!([{"name": "br1", "bridge": {}},
            {"name": "default", "masquerade": {}, "macAddress": "02:00:00:00:aa:01"}]));
        assert_eq!(
            refusal(&new, Some(&old)),
            "duplicate MAC address 02:00:00:00:aa:01 found on interfaces br1 and default"
        );
    }

    #[test]
    fn an_update_with_unchanged_interfaces_does_not_judge_them_again() {
        let twice = json!({"name": "br1", "bridge": {}, "macAddress": "02:00:00:00:aa:01"});
        let old = vm(json!([twice, twice]));
        let mut new = old.clone();
        new["spec"]["running"] = json!(true);
        let needs = needs(&new, Some(&old)).expect("ok");
        assert!(!needs.is_noop() && needs.count() == 0);
    }

    #[test]
    fn a_vm_being_deleted_is_left_alone_but_for_the_legacy_finalizer() {
        let mut old = vm(json!([{"name": "br1", "bridge": {}}]));
        old["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:00:00Z");
        old["metadata"]["finalizers"] = json!([LEGACY_FINALIZER, "kubevirt.io/x"]);
        let mut new = old.clone();
        new["metadata"]["labels"] = json!({"a": "b"});
        let mut expected = new.clone();
        expected["metadata"]["finalizers"] = json!(["kubevirt.io/x"]);
        assert_eq!(admit(&new, Some(&old)).1, expected);
        new["metadata"]["finalizers"] = json!(["kubevirt.io/x"]);
        assert!(needs(&new, Some(&old)).expect("ok").is_noop());
    }

    #[test]
    fn held_macs_are_every_parseable_mac_of_any_binding_once() {
        let v = vm(json!([
            {"name": "a", "bridge": {}, "macAddress": "02:00:00:00:00:01"},
            {"name": "b", "masquerade": {}, "macAddress": "bad"},
            {"name": "c", "sriov": {}, "macAddress": "02-00-00-00-00-02"},
            {"name": "d", "bridge": {}, "macAddress": "02:00:00:00:00:01"},
            {"name": "e", "bridge": {}}]));
        let want = vec![MacAddr([2, 0, 0, 0, 0, 1]), MacAddr([2, 0, 0, 0, 0, 2])];
        assert_eq!(held_macs(&v), want);
        assert!(held_macs(&json!({"spec": "x"})).is_empty());
    }
}
