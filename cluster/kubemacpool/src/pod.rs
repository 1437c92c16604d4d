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
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(networks: &str) -> Value {
        json!({"metadata": {"name": "p", "namespace": "ns", "annotations": {NETWORKS: networks}}})
    }

    fn mac(s: &str) -> MacAddr {
        MacAddr::parse(s).expect("mac")
    }

    fn written(networks: &str, macs: &[MacAddr]) -> Value {
        let PodNeeds::Macs { elements, .. } = needs(&pod(networks)).expect("accepted") else {
            panic!("skipped");
        };
        let ops = patch(&elements, macs);
        let text = ops[0]["value"].as_str().expect("string").to_string();
        serde_json::from_str(&text).expect("json")
    }

    #[test]
    fn a_pod_without_the_annotation_is_passed_through() {
        assert_eq!(needs(&json!({"metadata": {}})), Ok(PodNeeds::Skip));
    }

    #[test]
    fn the_comma_form_is_passed_through() {
        assert_eq!(needs(&pod("net1,other/net2@eth2")), Ok(PodNeeds::Skip));
    }

    #[test]
    fn a_pod_with_network_status_is_passed_through() {
        let p = json!({"metadata": {"annotations": {
            NETWORKS: r#"[{"name":"a"}]"#, NETWORK_STATUS: "[]"}}});
        assert_eq!(needs(&p), Ok(PodNeeds::Skip));
    }

    #[test]
    fn an_element_without_a_mac_gets_one() {
        let list = written(r#"[{"name":"br1"}]"#, &[mac("02:00:00:00:00:01")]);
        assert_eq!(list, json!([{"name": "br1", "mac": "02:00:00:00:00:01"}]));
    }

    #[test]
    fn a_requested_mac_is_kept_and_recorded() {
        let p = pod(r#"[{"name":"a","mac":"02:AA:00:00:00:01"},{"name":"b"}]"#);
        let PodNeeds::Macs {
            count, requested, ..
        } = needs(&p).expect("accepted")
        else {
            panic!("skipped");
        };
        assert_eq!((count, requested), (1, vec![mac("02:aa:00:00:00:01")]));
        let list = written(
            r#"[{"name":"a","mac":"02:AA:00:00:00:01"},{"name":"b"}]"#,
            &[mac("02:00:00:00:00:07")],
        );
        assert_eq!(list[0]["mac"], "02:AA:00:00:00:01");
        assert_eq!(list[1]["mac"], "02:00:00:00:00:07");
    }

    #[test]
    fn unknown_keys_and_another_namespace_are_kept() {
        let list = written(
            r#"[{"name":"a","namespace":"other","x-extra":{"deep":[1,2]}}]"#,
            &[mac("02:00:00:00:00:01")],
        );
        assert_eq!(list[0]["namespace"], "other");
        assert_eq!(list[0]["x-extra"], json!({"deep": [1, 2]}));
    }

    #[test]
    fn malformed_json_is_refused() {
        assert!(needs(&pod(r#"[{"name":"a""#)).is_err());
    }

    #[test]
    fn a_non_string_mac_is_refused() {
        assert!(needs(&pod(r#"[{"name":"a","mac":12}]"#)).is_err());
    }

    #[test]
    fn a_non_string_name_is_refused() {
        assert!(needs(&pod(r#"[{"name":["a"]}]"#)).is_err());
    }

    #[test]
    fn a_multicast_or_broadcast_mac_is_refused() {
        for m in ["01:00:5e:00:00:01", "ff:ff:ff:ff:ff:ff"] {
            let text = format!(r#"[{{"name":"a","mac":"{m}"}}]"#);
            let denial = needs(&pod(&text)).expect_err("refused");
            assert!(denial.0.contains("multicast"), "{}", denial.0);
        }
    }

    #[test]
    fn a_list_past_the_limit_is_refused() {
        let list: Vec<Value> = (0..10_000)
            .map(|i| json!({"name": format!("n{i}")}))
            .collect();
        assert!(needs(&pod(&Value::Array(list).to_string())).is_err());
    }

    #[test]
    fn an_annotation_past_256_kib_is_refused() {
        let big = format!(r#"[{{"name":"{}"}}]"#, "a".repeat(1 << 20));
        let denial = needs(&pod(&big)).expect_err("refused");
        assert!(denial.0.contains("bytes"), "{}", denial.0);
    }

    #[test]
    fn a_list_of_non_objects_is_refused() {
        assert!(needs(&pod(r#"["a","b"]"#)).is_err());
    }

    #[test]
    fn an_empty_mac_is_no_request_and_gets_one_from_the_pool() {
        let PodNeeds::Macs {
            count, requested, ..
        } = needs(&pod(r#"[{"name":"a","mac":""}]"#)).expect("accepted")
        else {
            panic!("skipped");
        };
        assert_eq!((count, requested), (1, vec![]));
        let list = written(r#"[{"name":"a","mac":""}]"#, &[mac("02:00:00:00:00:01")]);
        assert_eq!(list[0]["mac"], "02:00:00:00:00:01");
    }

    #[test]
    fn a_null_mac_is_no_request_either() {
        let list = written(r#"[{"name":"a","mac":null}]"#, &[mac("02:00:00:00:00:01")]);
        assert_eq!(list[0]["mac"], "02:00:00:00:00:01");
    }

    #[test]
    fn a_single_object_is_refused_with_upstreams_words() {
        let denial = needs(&pod(r#"{"name":"br1"}"#)).expect_err("refused");
        assert_eq!(
            denial.0,
            "parsePodNetworkAnnotation: failed to parse pod Network Attachment Selection \
             Annotation JSON format: json: cannot unmarshal object into Go value of type \
             []*types.NetworkSelectionElement"
        );
    }

    #[test]
    fn an_empty_annotation_is_refused_with_upstreams_words() {
        let denial = needs(&pod("")).expect_err("refused");
        assert_eq!(
            denial.0,
            "parsePodNetworkAnnotation: pod annotation not having \"network\" as key, \
             refer Multus README.md for the usage guide"
        );
    }

    #[test]
    fn json_anywhere_in_the_annotation_must_be_a_list() {
        assert!(needs(&pod(r#"net1,{"name":"net2"}"#)).is_err());
    }

    #[test]
    fn a_pod_owned_by_a_vmi_belongs_to_the_vm_of_that_name() {
        let p = json!({"metadata": {"ownerReferences": [
            {"kind": "ReplicaSet", "name": "rs"},
            {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance", "name": "vm1"}]}});
        assert_eq!(owning_vmi(&p), Some("vm1"));
    }

    #[test]
    fn a_pod_owned_by_no_vmi_belongs_to_no_vm() {
        let labelled = json!({"metadata": {"labels": {"kubevirt.io": "virt-launcher"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": "vm1"}]}});
        assert_eq!(owning_vmi(&labelled), None);
    }

    #[test]
    fn a_stored_pods_macs_are_read_from_its_list() {
        let held = held_macs(r#"[{"name":"a","mac":"02:00:00:00:00:01"},{"name":"b"}]"#);
        assert_eq!(held, [mac("02:00:00:00:00:01")]);
        assert!(held_macs("a,b").is_empty());
    }
}
