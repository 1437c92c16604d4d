//! What the node publishes about its bridges, as kubevirt's bridge-marker and ovs-cni's marker
//! do: every Linux bridge as `bridge.network.kubevirt.io/<name>`, every Open vSwitch bridge as
//! `ovs-cni.network.kubevirt.io/<name>`, an extended resource of 1000 ("1k": the API has no
//! unlimited quantity) in the Node's `status.capacity`. The kubelet copies capacity into
//! `status.allocatable` (and drops what left capacity) on its next status update. No bridge is
//! skipped, except names that cannot be a resource name (the API server would refuse the
//! whole patch for one of them). Only keys under our prefix are ever touched, and a key
//! already present is left with its value (an administrator may have lowered it), unless that
//! value is zero: the kubelet zeroes extended resources when the Node object is recreated, and
//! a bridge left at 0 would take no attachment ever again, so it is published afresh.
//!
//! The computation is pure: desired bridges + the node's current capacity -> a JSON merge
//! patch, where null removes a key.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

/// Which bridges a node agent marks; `--mark linux-bridge` or `--mark ovs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mark {
    LinuxBridge,
    Ovs,
}

/// Each bridge's quantity: 1000 attachments, which the API server writes as "1k".
pub const QUANTITY: &str = "1k";

impl Mark {
    pub fn as_str(self) -> &'static str {
        match self {
            Mark::LinuxBridge => "linux-bridge",
            Mark::Ovs => "ovs",
        }
    }

    /// The resource prefix (before the `/`).
    pub fn prefix(self) -> &'static str {
        match self {
            Mark::LinuxBridge => "bridge.network.kubevirt.io",
            Mark::Ovs => "ovs-cni.network.kubevirt.io",
        }
    }

    /// `<prefix>/<bridge>`.
    pub fn resource(self, bridge: &str) -> String {
        format!("{}/{bridge}", self.prefix())
    }
}

/// Whether `name` can follow the prefix: a qualified name's name part (at most 63 characters,
/// alphanumeric at both ends, `-`, `_`, `.` inside).
pub fn valid_resource_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    name.len() <= 63
        && first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The change to publish.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Bridges to add, then bridges to remove, sorted.
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// Bridges whose name cannot be a resource name.
    pub skipped: Vec<String>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty()
    }

    /// The JSON merge patch for the node's status; None when nothing changes.
    pub fn patch(&self, mark: Mark) -> Option<Value> {
        if self.is_empty() {
            return None;
        }
        let mut capacity = Map::new();
        for bridge in &self.added {
            capacity.insert(mark.resource(bridge), Value::from(QUANTITY));
        }
        for bridge in &self.removed {
            capacity.insert(mark.resource(bridge), Value::Null);
        }
        Some(serde_json::json!({ "status": { "capacity": capacity } }))
    }
}

/// Whether a quantity as the API server writes it is zero, however spelt: `0`, `0k`, `0Ki`,
/// `0.0`, `-0`, `0e3`. Anything that does not parse is not zero.
pub fn is_zero_quantity(quantity: &str) -> bool {
    let q = quantity.trim();
    let q = q.strip_prefix(['+', '-']).unwrap_or(q);
    let number_end = q
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(q.len());
    let (number, suffix) = q.split_at(number_end);
    let digits = number.chars().filter(char::is_ascii_digit).count();
    let one_point = number.chars().filter(|&c| c == '.').count() <= 1;
    const SUFFIXES: [&str; 16] = [
        "", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
    ];
    let exponent = suffix
        .strip_prefix(['e', 'E'])
        .map(|e| e.strip_prefix(['+', '-']).unwrap_or(e))
        .is_some_and(|e| !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit()));
    digits > 0
        && one_point
        && number.chars().all(|c| c == '0' || c == '.')
        && (SUFFIXES.contains(&suffix) || exponent)
}

/// Compares the bridges that exist with what the node's capacity lists under `mark`'s prefix.
/// A key whose quantity is zero counts as absent for a bridge that exists (it is published
/// again) and as present for one that does not (it is removed).
pub fn plan(mark: Mark, bridges: &BTreeSet<String>, capacity: &BTreeMap<String, String>) -> Plan {
    let prefix = format!("{}/", mark.prefix());
    let reported: BTreeMap<&str, &str> = capacity
        .iter()
        .filter_map(|(k, q)| Some((k.strip_prefix(&prefix)?, q.as_str())))
        .collect();
    let (valid, skipped): (Vec<&String>, Vec<&String>) =
        bridges.iter().partition(|b| valid_resource_name(b));
    let valid: BTreeSet<&str> = valid.into_iter().map(String::as_str).collect();
    Plan {
        added: valid
            .iter()
            .filter(|b| reported.get(*b).is_none_or(|q| is_zero_quantity(q)))
            .map(|s| s.to_string())
            .collect(),
        removed: reported
            .keys()
            .filter(|b| !valid.contains(*b))
            .map(|s| s.to_string())
            .collect(),
        skipped: skipped.into_iter().cloned().collect(),
    }
}

/// When to ask the API server: the node is read only when the bridges changed since the last
/// successful round, or when `resync` has passed (to undo changes made by someone else), as
/// the upstream markers do to keep the load on the API server low.
#[derive(Debug, Clone)]
pub struct Published {
    last: Option<(BTreeSet<String>, Instant)>,
    resync: Duration,
}

impl Published {
    pub fn new(resync: Duration) -> Published {
        Published { last: None, resync }
    }

    pub fn needs_sync(&self, bridges: &BTreeSet<String>, now: Instant) -> bool {
        match &self.last {
            None => true,
            Some((last, at)) => {
                last != bridges || now.saturating_duration_since(*at) >= self.resync
            }
        }
    }

    pub fn synced(&mut self, bridges: BTreeSet<String>, now: Instant) {
        self.last = Some((bridges, now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    fn capacity(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// (mark, bridges on the node, node capacity, expected patch)
    type Case = (
        Mark,
        BTreeSet<String>,
        BTreeMap<String, String>,
        Option<Value>,
    );

    #[test]
    fn patches_add_new_bridges_and_remove_vanished_ones_only_under_our_prefix() {
        let base = [("cpu", "2"), ("memory", "4Gi"), ("pods", "110")];
        let with = |extra: &[(&'static str, &'static str)]| {
            let mut c = capacity(&base);
            c.extend(capacity(extra));
            c
        };
        let table: Vec<Case> = vec![
            // Nothing there, nothing published.
            (Mark::LinuxBridge, set(&[]), with(&[]), None),
            // New bridges are added with 1k.
            (
                Mark::LinuxBridge,
                set(&["br0", "br1"]),
                with(&[]),
                Some(json!({"status": {"capacity": {
                    "bridge.network.kubevirt.io/br0": "1k",
                    "bridge.network.kubevirt.io/br1": "1k"}}})),
            ),
            // Already published (whatever the value): no patch at all.
            (
                Mark::LinuxBridge,
                set(&["br0", "br1"]),
                with(&[
                    ("bridge.network.kubevirt.io/br0", "1k"),
                    ("bridge.network.kubevirt.io/br1", "10"),
                ]),
                None,
            ),
            // A vanished bridge is removed with null, a new one added, in one patch.
            (
                Mark::LinuxBridge,
                set(&["br1", "br2"]),
                with(&[
                    ("bridge.network.kubevirt.io/br0", "1k"),
                    ("bridge.network.kubevirt.io/br1", "1k"),
                ]),
                Some(json!({"status": {"capacity": {
                    "bridge.network.kubevirt.io/br0": null,
                    "bridge.network.kubevirt.io/br2": "1k"}}})),
            ),
            // The other marker's keys, and other extended resources, are never touched.
            (
                Mark::Ovs,
                set(&["br-ex"]),
                with(&[
                    ("bridge.network.kubevirt.io/br0", "1k"),
                    ("devices.kubevirt.io/kvm", "1k"),
                    ("ovs-cni.network.kubevirt.io/br-old", "1k"),
                ]),
                Some(json!({"status": {"capacity": {
                    "ovs-cni.network.kubevirt.io/br-ex": "1k",
                    "ovs-cni.network.kubevirt.io/br-old": null}}})),
            ),
            (
                Mark::LinuxBridge,
                set(&[]),
                with(&[
                    ("bridge.network.kubevirt.io/br0", "1k"),
                    ("ovs-cni.network.kubevirt.io/br0", "1k"),
                ]),
                Some(json!({"status": {"capacity": {
                    "bridge.network.kubevirt.io/br0": null}}})),
            ),
            // A name that cannot be a resource name is skipped, not sent.
            (
                Mark::Ovs,
                set(&["br+x", "br1"]),
                with(&[]),
                Some(json!({"status": {"capacity": {
                    "ovs-cni.network.kubevirt.io/br1": "1k"}}})),
            ),
            // A bridge at zero (the kubelet zeroes extended resources when the Node object is
            // recreated) is published again, whatever the spelling of zero; one that vanished
            // is removed all the same.
            (
                Mark::LinuxBridge,
                set(&["br0", "br1", "br2"]),
                with(&[
                    ("bridge.network.kubevirt.io/br0", "0"),
                    ("bridge.network.kubevirt.io/br1", "0k"),
                    ("bridge.network.kubevirt.io/br2", "10"),
                    ("bridge.network.kubevirt.io/gone", "0"),
                ]),
                Some(json!({"status": {"capacity": {
                    "bridge.network.kubevirt.io/br0": "1k",
                    "bridge.network.kubevirt.io/br1": "1k",
                    "bridge.network.kubevirt.io/gone": null}}})),
            ),
            // A key that merely starts like ours is not ours.
            (
                Mark::LinuxBridge,
                set(&[]),
                with(&[("bridge.network.kubevirt.io.example/br0", "1")]),
                None,
            ),
        ];
        for (mark, bridges, capacity, want) in table {
            let got = plan(mark, &bridges, &capacity).patch(mark);
            assert_eq!(got, want, "{mark:?} {bridges:?} {capacity:?}");
        }
    }

    #[test]
    fn zero_quantities_in_any_spelling() {
        for zero in [
            "0", "0k", "0Ki", "0M", "0m", "0.0", "00", "+0", "-0", "0e3", "0E-2", ".0",
        ] {
            assert!(is_zero_quantity(zero), "{zero}");
        }
        for other in [
            "1", "1k", "10", "0.5", "100m", "0x1", "", "k", ".", "0kk", "0e", "1e0",
        ] {
            assert!(!is_zero_quantity(other), "{other}");
        }
    }

    #[test]
    fn skipped_names_are_reported() {
        let p = plan(Mark::Ovs, &set(&["-bad", "ok"]), &BTreeMap::new());
        assert_eq!(p.added, ["ok"]);
        assert_eq!(p.skipped, ["-bad"]);
    }

    #[test]
    fn resource_names() {
        for ok in ["br0", "br-ex", "a", "virbr0", "br_1.2", &"b".repeat(63)] {
            assert!(valid_resource_name(ok), "{ok}");
        }
        for bad in ["", "-br", "br-", "br+x", "br@1", "br/1", &"b".repeat(64)] {
            assert!(!valid_resource_name(bad), "{bad}");
        }
    }

    #[test]
    fn the_node_is_read_again_only_on_change_or_resync() {
        let t0 = Instant::now();
        let mut p = Published::new(Duration::from_secs(600));
        assert!(p.needs_sync(&set(&[]), t0));
        p.synced(set(&["br0"]), t0);
        assert!(!p.needs_sync(&set(&["br0"]), t0 + Duration::from_secs(60)));
        assert!(p.needs_sync(&set(&["br0", "br1"]), t0 + Duration::from_secs(60)));
        assert!(p.needs_sync(&set(&["br0"]), t0 + Duration::from_secs(600)));
    }

    #[test]
    fn marks_are_named_as_on_the_command_line() {
        use clap::ValueEnum;
        for mark in Mark::value_variants() {
            assert_eq!(Mark::from_str(mark.as_str(), false), Ok(*mark));
        }
        assert_eq!(Mark::value_variants(), [Mark::LinuxBridge, Mark::Ovs]);
        assert!(Mark::from_str("bridge", false).is_err());
        assert_eq!(Mark::Ovs.resource("br1"), "ovs-cni.network.kubevirt.io/br1");
    }
}
