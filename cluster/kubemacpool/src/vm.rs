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
//! aside) changed; it then stamps, and looks at the interfaces only when they changed. As
//! upstream, an interface that existed keeps what it had: left without a MAC, it takes the one
//! the interface of the same name had in the old object (`kubectl apply` of a manifest without
//! MACs keeps them), and one that had none stays without. Only an interface the update adds
//! gets a new MAC, if its binding gets one. A VM being deleted is left alone but for the legacy
//! finalizer, which every admission removes.
//!
//! What is refused (before anything is allocated): shapes KubeVirt's schema cannot hold
//! (`interfaces`/`networks` not lists of objects, a `name` or `macAddress` not a string, the
//! objects on the way not objects) and more than [`MAX_INTERFACES`] interfaces; and, outside a
//! dry run as upstream, two interfaces of one name, a MAC that is not one (any binding), a MAC
//! of a managed interface that is multicast or all zeros, and one MAC on two interfaces of the
//! VM (any binding: the guest would see both). One MAC on two VMs is allowed: restores and
//! imports do that.
//! `null` counts as absent, as it does when KubeVirt decodes the object.
//!
//! An old object that cannot be read keeps nothing.

mod interfaces;
mod json;
mod json_patch;
mod macs;
#[cfg(test)]
mod tests;

use net_types::MacAddr;
use serde_json::Value;

pub use crate::admission::Denial;
pub use json_patch::patch;
pub use macs::{distinct_macs, held_macs};

use json::{at, object_at};
use macs::assign;

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

/// Reads a VM (CREATE: `old` is `None`; UPDATE: the previous object) and validates all that
/// can be refused before the caller allocates anything. An UPDATE whose `old` is not an object
/// is treated as a change of everything, with nothing to keep. A dry run's MACs are not judged.
pub fn needs(vm: &Value, old: Option<&Value>, dry_run: bool) -> Result<Needs, Denial> {
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
        assign(vm, old, dry_run, &mut needs)?;
    }
    Ok(needs)
}

/// What the API server shows for a refused VM admission, in upstream's words: a create's cause
/// comes after the allocation's context, an update's bare.
pub fn refusal_text(create: bool, cause: &str) -> String {
    match create {
        true => format!(
            "Failed to create virtual machine allocation error: \
             Failed to allocate mac to the vm object: {cause}"
        ),
        false => format!("Failed to update virtual machine allocation error: {cause}"),
    }
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

/// The merge patch that takes the legacy finalizer off a stored VM, the other finalizers kept;
/// `None` when it has none. It carries the VM's resourceVersion, so the API server refuses it
/// (409) if the finalizers changed since `vm` was read.
pub fn legacy_finalizer_removal(vm: &Value) -> Option<Value> {
    let list = vm.pointer("/metadata/finalizers")?.as_array()?;
    if !list.iter().any(|f| f.as_str() == Some(LEGACY_FINALIZER)) {
        return None;
    }
    let kept: Vec<&Value> = list
        .iter()
        .filter(|f| f.as_str() != Some(LEGACY_FINALIZER))
        .collect();
    Some(serde_json::json!({"metadata": {
        "finalizers": kept,
        "resourceVersion": vm.pointer("/metadata/resourceVersion"),
    }}))
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
