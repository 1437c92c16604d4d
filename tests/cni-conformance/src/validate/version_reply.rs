//! The reply to VERSION.

use super::versions::is_known;
use serde_json::Value;

/// A VERSION reply.
#[derive(Clone, Debug, PartialEq)]
pub struct VersionReply {
    pub cni_version: String,
    pub supported: Vec<String>,
}

/// Parse a VERSION reply: `cniVersion` a non-empty string and
/// `supportedVersions` a non-empty list of known versions.
pub fn parse_version_reply(value: &Value) -> Result<VersionReply, String> {
    let obj = value
        .as_object()
        .ok_or("VERSION reply is not a JSON object")?;
    let cni_version = match obj.get("cniVersion") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(other) => return Err(format!("`cniVersion` is not a non-empty string: {other}")),
        None => return Err("VERSION reply has no `cniVersion`".into()),
    };
    let list = match obj.get("supportedVersions") {
        Some(Value::Array(a)) => a,
        Some(other) => return Err(format!("`supportedVersions` is not a list: {other}")),
        None => return Err("VERSION reply has no `supportedVersions`".into()),
    };
    if list.is_empty() {
        return Err("`supportedVersions` is empty".into());
    }
    let mut supported = Vec::new();
    for item in list {
        match item.as_str() {
            Some(s) if is_known(s) => supported.push(s.to_string()),
            Some(s) => return Err(format!("`supportedVersions` lists unknown version {s:?}")),
            None => return Err(format!("`supportedVersions` holds a non-string: {item}")),
        }
    }
    Ok(VersionReply {
        cni_version,
        supported,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_version_reply_names_a_version_and_lists_only_known_ones() {
        let r = parse_version_reply(
            &json!({"cniVersion": "1.0.0", "supportedVersions": ["0.1.0", "1.0.0"]}),
        );
        assert_eq!(
            r.map(|r| r.supported),
            Ok(vec!["0.1.0".to_string(), "1.0.0".to_string()])
        );
        assert!(
            parse_version_reply(&json!({"cniVersion": "1.0.0", "supportedVersions": []})).is_err()
        );
        assert!(parse_version_reply(&json!({"cniVersion": "1.0.0"})).is_err());
        assert!(parse_version_reply(&json!({"supportedVersions": ["1.0.0"]})).is_err());
        assert!(
            parse_version_reply(&json!({"cniVersion": "", "supportedVersions": ["1.0.0"]}))
                .is_err()
        );
        assert!(parse_version_reply(
            &json!({"cniVersion": "1.0.0", "supportedVersions": ["1.0.0", "2.5.0"]})
        )
        .is_err());
        assert!(
            parse_version_reply(&json!({"cniVersion": "1.0.0", "supportedVersions": [1]})).is_err()
        );
    }
}
