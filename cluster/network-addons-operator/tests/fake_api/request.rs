//! What a request points at: its path split as the real server routes it, and its query.

use std::collections::BTreeMap;

use super::store::Key;

/// Where a request points.
#[derive(Debug)]
pub(super) struct Target {
    pub(super) group_version: String,
    pub(super) namespace: Option<String>,
    pub(super) plural: String,
    pub(super) name: Option<String>,
    pub(super) subresource: Option<String>,
}

impl Target {
    /// The store's key of the object `name` of this kind, in this namespace.
    pub(super) fn key(&self, name: &str) -> Key {
        Key {
            group_version: self.group_version.clone(),
            plural: self.plural.clone(),
            namespace: self.namespace.clone().unwrap_or_default(),
            name: name.to_string(),
        }
    }
}

pub(super) fn parse_path(path: &str) -> Option<Target> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group_version, rest) = match segments.first().copied() {
        Some("api") if segments.len() >= 3 => (segments[1].to_string(), &segments[2..]),
        Some("apis") if segments.len() >= 4 => {
            (format!("{}/{}", segments[1], segments[2]), &segments[3..])
        }
        _ => return None,
    };
    let (namespace, rest) = if rest.len() >= 3 && rest[0] == "namespaces" {
        (Some(rest[1].to_string()), &rest[2..])
    } else {
        (None, rest)
    };
    Some(Target {
        group_version,
        namespace,
        plural: rest.first()?.to_string(),
        name: rest.get(1).map(|s| s.to_string()),
        subresource: rest.get(2).map(|s| s.to_string()),
    })
}

pub(super) fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 3;
                    }
                    Err(_) => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub(super) fn parse_query(query: Option<&str>) -> BTreeMap<String, String> {
    query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (percent_decode(k), percent_decode(v)),
            None => (percent_decode(p), String::new()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_like_the_real_server() {
        let t = parse_path("/apis/apps/v1/namespaces/ns/daemonsets/a/status").expect("path");
        assert_eq!(t.group_version, "apps/v1");
        assert_eq!(t.namespace.as_deref(), Some("ns"));
        assert_eq!(t.plural, "daemonsets");
        assert_eq!(t.name.as_deref(), Some("a"));
        assert_eq!(t.subresource.as_deref(), Some("status"));
        let t = parse_path("/api/v1/namespaces/ns").expect("path");
        assert_eq!((t.namespace, t.plural.as_str()), (None, "namespaces"));
        let t = parse_path("/api/v1/namespaces/ns/configmaps").expect("path");
        assert_eq!(t.namespace.as_deref(), Some("ns"));
        assert_eq!(t.name, None);
    }
}
