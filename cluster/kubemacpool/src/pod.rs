//! Pods: the JSON list form of `k8s.v1.cni.cncf.io/networks` gets a `mac` in every element that
//! lacks one, for Multus to hand to the plugins as the `mac` capability.
//!
//! The annotation is written by whoever may create a pod in an opted-in namespace, so it is
//! read as untrusted input:
//! - the comma form (`net1,ns/net2@eth1`) is passed through unchanged, as upstream does: it has
//!   no place for a MAC;
//! - a value with any of `[`, `{` or `"` in it is JSON, as upstream tells the two forms apart,
//!   and must be a JSON list of objects, each with a string `name` and, if present, a string
//!   `namespace`, `interface` and `mac`; anything else (a single object too) is refused, as
//!   upstream refuses it and as Multus would refuse the pod later, where the user sees it less;
//!   so is an empty value;
//! - an empty or null `mac` asks for nothing, as upstream reads it: the element gets one;
//! - a requested `mac` must be a unicast address other than 00:00:00:00:00:00; it may lie
//!   outside the range and may be held by another object (restores and imports do this), and is
//!   held for this pod;
//! - at most [`MAX_NETWORKS`] elements and [`MAX_ANNOTATION_BYTES`] of text: past them the pod
//!   is refused before anything is parsed or allocated;
//! - other keys, and an element's `namespace` other than the pod's (Multus decides whether it
//!   may be used), are kept as they are: only `mac` is added.

use net_types::MacAddr;
use serde_json::{Map, Value};

use crate::admission::Denial;
use crate::patch;

pub const NETWORKS: &str = "k8s.v1.cni.cncf.io/networks";
pub const NETWORK_STATUS: &str = "k8s.v1.cni.cncf.io/network-status";
/// The API server refuses a pod whose annotations together pass 256 KiB; one annotation that
/// large is refused here before it is parsed.
pub const MAX_ANNOTATION_BYTES: usize = 256 * 1024;
/// More secondary networks than any pod can use (each is a kernel interface Multus creates one
/// by one); a bound on the work one request may ask for.
pub const MAX_NETWORKS: usize = 256;
/// Upstream's words for an annotation that is JSON but not a list of elements; users and
/// scripts match them.
const NOT_A_LIST: &str = "parsePodNetworkAnnotation: failed to parse pod Network Attachment \
                          Selection Annotation JSON format: ";

/// What the webhook does with one pod.
#[derive(Debug, Clone, PartialEq)]
pub enum PodNeeds {
    /// Nothing to do: pass it through unchanged.
    Skip,
    /// `count` elements need a MAC; `requested` are the ones it names itself.
    Macs {
        elements: Vec<Map<String, Value>>,
        count: usize,
        requested: Vec<MacAddr>,
    },
}

/// Reads the pod's networks annotation; refuses what Multus could not use.
pub fn needs(pod: &Value) -> Result<PodNeeds, Denial> {
    let annotations = pod.pointer("/metadata/annotations");
    let Some(text) = annotations.and_then(|a| a.get(NETWORKS)) else {
        return Ok(PodNeeds::Skip);
    };
    if annotations.is_some_and(|a| a.get(NETWORK_STATUS).is_some()) {
        // Already attached (a pod made again from a stored one): its MACs are in use as written.
        return Ok(PodNeeds::Skip);
    }
    let Some(text) = text.as_str() else {
        return Err(Denial(format!("annotation {NETWORKS} is not a string")));
    };
    if text.len() > MAX_ANNOTATION_BYTES {
        return Err(Denial(format!(
            "annotation {NETWORKS} is {} bytes, more than the {MAX_ANNOTATION_BYTES} a pod's annotations may hold",
            text.len()
        )));
    }
    if text.is_empty() {
        return Err(Denial(
            "parsePodNetworkAnnotation: pod annotation not having \"network\" as key, refer \
             Multus README.md for the usage guide"
                .into(),
        ));
    }
    if !text.contains(['[', '{', '"']) {
        return Ok(PodNeeds::Skip);
    }
    let elements = parse_list(text)?;
    let mut count = 0;
    let mut requested = Vec::new();
    for (i, e) in elements.iter().enumerate() {
        if asks_for_a_mac(e) {
            count += 1;
            continue;
        }
        match e.get("mac") {
            Some(Value::String(s)) => requested.push(
                patch::parse_unicast(s)
                    .map_err(|why| Denial(format!("{NETWORKS}[{i}]: mac {s:?} {why}")))?,
            ),
            _ => return Err(Denial(format!("{NETWORKS}[{i}]: mac is not a string"))),
        }
    }
    if count == 0 && requested.is_empty() {
        return Ok(PodNeeds::Skip);
    }
    Ok(PodNeeds::Macs {
        elements,
        count,
        requested,
    })
}

/// An element without a `mac`, or with an empty or null one, asks for one from the pool.
fn asks_for_a_mac(e: &Map<String, Value>) -> bool {
    match e.get("mac") {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(_) => false,
    }
}

fn parse_list(text: &str) -> Result<Vec<Map<String, Value>>, Denial> {
    let list: Vec<Value> = serde_json::from_str(text).map_err(|e| {
        // Valid JSON of another kind is worded as Go's decoder words it upstream.
        let kind = match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(_)) => "object",
            Ok(Value::String(_)) => "string",
            Ok(Value::Number(_)) => "number",
            Ok(Value::Bool(_)) => "bool",
            _ => return Denial(format!("{NOT_A_LIST}{e}")),
        };
        Denial(format!(
            "{NOT_A_LIST}json: cannot unmarshal {kind} into Go value of type \
             []*types.NetworkSelectionElement"
        ))
    })?;
    if list.len() > MAX_NETWORKS {
        return Err(Denial(format!(
            "annotation {NETWORKS} lists {} networks, more than {MAX_NETWORKS}",
            list.len()
        )));
    }
    list.into_iter()
        .enumerate()
        .map(|(i, v)| {
            let Value::Object(e) = v else {
                return Err(Denial(format!("{NETWORKS}[{i}] is not an object")));
            };
            match e.get("name") {
                Some(Value::String(n)) if !n.is_empty() => {}
                _ => {
                    return Err(Denial(format!(
                        "{NETWORKS}[{i}] has no name (a non-empty string)"
                    )))
                }
            }
            for key in ["namespace", "interface"] {
                if e.get(key).is_some_and(|v| !v.is_string()) {
                    return Err(Denial(format!("{NETWORKS}[{i}]: {key} is not a string")));
                }
            }
            Ok(e)
        })
        .collect()
}

/// The JSON Patch that writes the annotation back with `macs` (one per element that asks for a
/// MAC, in order) added. Only that annotation changes.
pub fn patch(elements: &[Map<String, Value>], macs: &[MacAddr]) -> Value {
    let mut macs = macs.iter();
    let list: Vec<Value> = elements
        .iter()
        .map(|e| {
            let mut e = e.clone();
            if asks_for_a_mac(&e) {
                if let Some(mac) = macs.next() {
                    e.insert("mac".to_string(), Value::String(mac.to_string()));
                }
            }
            Value::Object(e)
        })
        .collect();
    let text = Value::Array(list).to_string();
    serde_json::json!([{
        "op": "replace",
        "path": format!("/metadata/annotations/{}", patch::escape_pointer(NETWORKS)),
        "value": text,
    }])
}

/// The VMI a pod belongs to, as upstream tells a VM's launcher pod: the name of its first owner
/// of kind VirtualMachineInstance (a VM's VMI has the VM's name).
pub fn owning_vmi(pod: &Value) -> Option<&str> {
    let owners = pod
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?;
    let vmi = owners
        .iter()
        .find(|o| o.get("kind").and_then(Value::as_str) == Some("VirtualMachineInstance"))?;
    vmi.get("name").and_then(Value::as_str)
}

/// The MACs a stored pod holds: every parseable `mac` of its JSON list annotation.
pub fn held_macs(networks: &str) -> Vec<MacAddr> {
    if !networks.trim_start().starts_with('[') || networks.len() > MAX_ANNOTATION_BYTES {
        return Vec::new();
    }
    let Ok(list) = serde_json::from_str::<Vec<Value>>(networks) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|e| e.get("mac")?.as_str())
        .filter_map(|s| MacAddr::parse(s).ok())
        .collect()
}

#[cfg(test)]
mod tests;
