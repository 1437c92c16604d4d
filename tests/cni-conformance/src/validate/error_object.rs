//! The error object a failing plugin prints.

use crate::report::excerpt;
use serde_json::Value;

/// A CNI error object as printed by a failing plugin.
#[derive(Clone, Debug, PartialEq)]
pub struct CniError {
    pub code: u64,
    pub msg: String,
    pub details: Option<String>,
}

impl std::fmt::Display for CniError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "code {} \"{}\"", self.code, self.msg)?;
        if let Some(d) = &self.details {
            if !d.is_empty() {
                write!(f, " ({})", excerpt(d))?;
            }
        }
        Ok(())
    }
}

/// Parse an error object: `code` an unsigned integer, `msg` a string,
/// `details` and `cniVersion` strings when present.
pub fn parse_error(value: &Value) -> Result<CniError, String> {
    let obj = value.as_object().ok_or_else(|| {
        format!(
            "error output is not a JSON object: {}",
            excerpt(&value.to_string())
        )
    })?;
    let code = match obj.get("code") {
        Some(c) => c
            .as_u64()
            .ok_or_else(|| format!("error `code` is not an unsigned integer: {c}"))?,
        None => {
            return Err(format!(
                "error object has no `code`: {}",
                excerpt(&value.to_string())
            ))
        }
    };
    let msg = match obj.get("msg") {
        Some(Value::String(m)) => m.clone(),
        Some(other) => return Err(format!("error `msg` is not a string: {other}")),
        None => {
            return Err(format!(
                "error object has no `msg`: {}",
                excerpt(&value.to_string())
            ))
        }
    };
    let details = match obj.get("details") {
        None | Some(Value::Null) => None,
        Some(Value::String(d)) => Some(d.clone()),
        Some(other) => return Err(format!("error `details` is not a string: {other}")),
    };
    if let Some(v) = obj.get("cniVersion") {
        if !v.is_string() {
            return Err(format!("error `cniVersion` is not a string: {v}"));
        }
    }
    Ok(CniError { code, msg, details })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_error_object_has_an_unsigned_code_a_string_msg_and_string_details() {
        let e =
            parse_error(&json!({"code": 1, "msg": "incompatible CNI versions", "details": "x"}));
        assert_eq!(
            e,
            Ok(CniError {
                code: 1,
                msg: "incompatible CNI versions".into(),
                details: Some("x".into())
            })
        );
        assert!(parse_error(&json!({"cniVersion": "1.0.0", "code": 999, "msg": "m"})).is_ok());
        assert!(parse_error(&json!({"code": -1, "msg": "m"})).is_err());
        assert!(parse_error(&json!({"code": 1.5, "msg": "m"})).is_err());
        assert!(parse_error(&json!({"code": 1})).is_err());
        assert!(parse_error(&json!({"msg": "m"})).is_err());
        assert!(parse_error(&json!({"code": 1, "msg": 5})).is_err());
        assert!(parse_error(&json!({"code": 1, "msg": "m", "details": {}})).is_err());
        assert!(parse_error(&json!("error")).is_err());
    }
}
