//! The JSON Patch that answers a VM admission.

use net_types::MacAddr;
use serde_json::{json, Value};

use super::json::at;
use super::{Needs, INTERFACES, TRANSACTION_TIMESTAMP};
use crate::patch::escape_pointer;

/// The JSON Patch (RFC 6902) that gives the interfaces their MACs (`macs` in the order of the
/// interfaces, `macs.len() == needs.count()`; extra MACs are ignored), restores kept MACs,
/// stamps [`TRANSACTION_TIMESTAMP`] with `timestamp` (creating the annotations if absent) and
/// removes [`LEGACY_FINALIZER`](super::LEGACY_FINALIZER). `vm` must be the object `needs` was
/// read from.
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
