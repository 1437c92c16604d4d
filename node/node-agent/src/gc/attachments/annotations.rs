//! The pod annotations Multus reads and writes, read for the interface names they give: the
//! `networks` a pod asks for, and the `network-status` of what it was given.

use cni_common::env::validate_ifname;
use serde_json::Value;

use super::ifnames::Ifnames;
use super::PodInfo;
use crate::error::{Context, Error, Result};

/// The pod annotation listing the networks Multus attaches.
pub const NETWORKS_ANNOTATION: &str = "k8s.v1.cni.cncf.io/networks";
/// The pod annotation where Multus reports the attachments it made.
pub const NETWORK_STATUS_ANNOTATION: &str = "k8s.v1.cni.cncf.io/network-status";

pub(super) fn pod_ifnames(pod: &PodInfo) -> Result<Ifnames> {
    let mut ifnames = Ifnames::default();
    if let Some(text) = &pod.networks {
        let selections = selections(text)
            .with_context(|| format!("annotation {NETWORKS_ANNOTATION} does not parse"))?;
        ifnames.networks = selections.len();
        ifnames.named.extend(selections.into_iter().flatten());
    }
    if let Some(text) = &pod.network_status {
        let named = status_interfaces(text)
            .with_context(|| format!("annotation {NETWORK_STATUS_ANNOTATION} does not parse"))?;
        ifnames.named.extend(named);
    }
    // No attachment can have a name the kernel refuses, and the list stays bounded by them.
    ifnames.named.retain(|name| validate_ifname(name).is_ok());
    Ok(ifnames)
}

/// The `networks` annotation read as Multus reads it: one entry per network, each with the
/// interface names it asks for (none: Multus numbers it). JSON when the text holds `[`, `{`
/// or `"`: a list of objects whose keys match case-insensitively as Go's decoder matches
/// them, `interface` or its older spelling `interfaceRequest`; otherwise comma-separated
/// `[namespace/]name[@interface]`. Only the structure is required: the values Multus would
/// refuse (a malformed name, MAC or IP) would have failed the pod's ADD, leaving nothing to
/// lose, and their interface names are kept all the same.
fn selections(text: &str) -> Result<Vec<Vec<String>>> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    if text.contains(['[', '{', '"']) {
        let Value::Array(entries) = serde_json::from_str(text)? else {
            return Err(Error::msg("not a JSON list"));
        };
        return entries
            .iter()
            .map(|entry| interfaces_of(entry, &["interface", "interfacerequest"]))
            .collect();
    }
    text.split(',')
        .map(|item| {
            let item = item.trim();
            let after_namespace = match item.split('/').collect::<Vec<_>>()[..] {
                [name] | [_, name] => name,
                _ => return Err(Error::msg(format!("{item:?} has more than one '/'"))),
            };
            match after_namespace.split('@').collect::<Vec<_>>()[..] {
                [_] => Ok(Vec::new()),
                [_, interface] => Ok(Some(interface.trim())
                    .filter(|i| !i.is_empty())
                    .map(str::to_string)
                    .into_iter()
                    .collect()),
                _ => Err(Error::msg(format!("{item:?} has more than one '@'"))),
            }
        })
        .collect()
}

/// The interfaces of Multus's `network-status`: a JSON list of objects (empty text: none).
fn status_interfaces(text: &str) -> Result<Vec<String>> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let Value::Array(entries) = serde_json::from_str(text)? else {
        return Err(Error::msg("not a JSON list"));
    };
    let mut interfaces = Vec::new();
    for entry in &entries {
        interfaces.extend(interfaces_of(entry, &["interface"])?);
    }
    Ok(interfaces)
}

/// The string values, in an object, of every key that folds to one of `keys` (lowercase).
fn interfaces_of(entry: &Value, keys: &[&str]) -> Result<Vec<String>> {
    let Value::Object(entry) = entry else {
        return Err(Error::msg("an entry is not a JSON object"));
    };
    let mut found = Vec::new();
    for (key, value) in entry {
        if !keys.contains(&go_fold(key).as_str()) {
            continue;
        }
        match value {
            Value::String(name) if !name.is_empty() => found.push(name.clone()),
            Value::String(_) | Value::Null => {}
            _ => return Err(Error::msg(format!("{key:?} is not a string"))),
        }
    }
    Ok(found)
}

/// A key as Go's JSON decoder compares field names: ASCII case ignored, and the Kelvin sign
/// and the long s taken for `k` and `s`.
fn go_fold(key: &str) -> String {
    key.chars()
        .map(|c| match c {
            '\u{212A}' => 'k',
            '\u{17F}' => 's',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gc::attachments::plan;
    use crate::gc::attachments::testing::{
        collected, deferred, keeps, nad, one_pod, pod, sandbox, with_networks,
    };
    use serde_json::json;

    #[test]
    fn interfaces_named_in_the_comma_separated_networks_annotation_are_kept() {
        let keep = one_pod("ns/blue-nad@blue0, red-nad@ red1 ,other/green-nad,plain");
        for ifname in ["blue0", "red1", "net1", "net4"] {
            assert!(keeps(&keep, "blue", "s1", ifname), "{ifname}");
        }
    }

    #[test]
    fn interfaces_named_in_the_json_networks_annotation_are_kept_whatever_the_key_case() {
        let keep = one_pod(
            r#"[{"name":"blue-nad","namespace":"ns","interface":"blue0"},
                {"name":"red-nad","Interface":"red1","interfaceRequest":"red2"},
                {"name":"x","INTERFACEREQUEST":"red3","interface":null},
                {"name":"green-nad","mac":"02:00:00:00:00:01"}]"#,
        );
        for ifname in ["blue0", "red1", "red2", "red3", "net4"] {
            assert!(keeps(&keep, "blue", "s1", ifname), "{ifname}");
        }
    }

    #[test]
    fn interfaces_in_the_network_status_annotation_are_kept() {
        let mut web = pod("u1", "ns", "web");
        web.network_status = Some(
            json!([
                {"name": "ovn-kubernetes", "interface": "eth0", "default": true},
                {"name": "ns/blue-nad", "interface": "pod1a2b3c", "mac": "02:00:00:00:00:01"},
                {"name": "ns/red-nad"}
            ])
            .to_string(),
        );
        let keep = collected(plan(
            &[sandbox("s1", "u1", "ns", "web")],
            &[web],
            &[nad("blue", "blue-nad")],
        ));
        assert!(keeps(&keep, "blue", "s1", "pod1a2b3c"));
    }

    #[test]
    fn names_the_kernel_refuses_are_not_kept() {
        let keep = one_pod(
            r#"[{"name":"a","interface":"much-too-long-name"},{"name":"b","interface":"a:b"}]"#,
        );
        assert!(!keep["blue"]
            .iter()
            .any(|(_, ifname)| ifname.contains(['-', ':'])));
    }

    #[test]
    fn a_pod_whose_networks_annotation_does_not_parse_defers_naming_it() {
        for annotation in [
            "[{\"name\":",
            "a/b/c",
            "a@b@c",
            "{\"name\":\"a\"}",
            "[\"a\"]",
            r#"[{"name":"a","interface":7}]"#,
        ] {
            let why = deferred(plan(
                &[sandbox("s1", "u1", "ns", "web")],
                &[with_networks(pod("u1", "ns", "web"), annotation)],
                &[nad("blue", "blue-nad")],
            ));
            assert!(
                why.contains("ns/web") && why.contains(NETWORKS_ANNOTATION),
                "{annotation}: {why}"
            );
        }
    }

    #[test]
    fn a_pod_whose_network_status_does_not_parse_defers_naming_it() {
        let mut web = pod("u1", "ns", "web");
        web.network_status = Some("[{\"interface\":".to_string());
        let why = deferred(plan(
            &[sandbox("s1", "u1", "ns", "web")],
            &[web],
            &[nad("blue", "blue-nad")],
        ));
        assert!(
            why.contains("ns/web") && why.contains(NETWORK_STATUS_ANNOTATION),
            "{why}"
        );
    }

    #[test]
    fn an_empty_networks_annotation_lists_no_network() {
        let keep = one_pod("");
        assert!(keeps(&keep, "blue", "s1", "net32"));
        assert!(!keeps(&keep, "blue", "s1", "net33"));
    }
}
