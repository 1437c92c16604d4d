//! Label and field selectors, as a LIST filters with them.

use serde_json::Value;

/// Whether `labels` match a selector of `k=v`, `k==v`, `k!=v`, `k in (v,w)`, `k notin (v,w)`
/// and `k` terms.
pub fn selector_matches(selector: &str, labels: &Value) -> bool {
    selector_terms(selector).iter().all(|term| {
        if let Some((k, values)) = set_term(term, " notin ") {
            labels[k].as_str().is_none_or(|v| !values.contains(&v))
        } else if let Some((k, values)) = set_term(term, " in ") {
            labels[k].as_str().is_some_and(|v| values.contains(&v))
        } else if let Some((k, v)) = term.split_once("!=") {
            labels[k.trim()].as_str() != Some(v.trim())
        } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
            labels[k.trim()].as_str() == Some(v.trim())
        } else {
            labels.get(term.as_str()).is_some()
        }
    })
}

/// The terms of a selector: split on the commas outside parentheses.
fn selector_terms(selector: &str) -> Vec<String> {
    let mut terms = vec![String::new()];
    let mut depth = 0;
    for c in selector.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                terms.push(String::new());
                continue;
            }
            _ => {}
        }
        if let Some(t) = terms.last_mut() {
            t.push(c);
        }
    }
    terms
        .into_iter()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect()
}

/// `key` and the values of a `key in (a,b)` term (`op` is `" in "` or `" notin "`).
fn set_term<'a>(term: &'a str, op: &str) -> Option<(&'a str, Vec<&'a str>)> {
    let (key, values) = term.split_once(op)?;
    let values = values.trim().strip_prefix('(')?.strip_suffix(')')?;
    Some((key.trim(), values.split(',').map(str::trim).collect()))
}

pub(super) fn field_selector_matches(selector: &str, object: &Value) -> bool {
    selector.split(',').filter(|t| !t.is_empty()).all(|term| {
        let Some((k, v)) = term.split_once('=') else {
            return false;
        };
        match k {
            "metadata.name" => object["metadata"]["name"].as_str() == Some(v),
            "metadata.namespace" => object["metadata"]["namespace"].as_str() == Some(v),
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::fake_api::request::percent_decode;

    #[test]
    fn selectors() {
        let labels = json!({"a": "b", "c": "d"});
        assert!(selector_matches("a=b,c=d", &labels));
        assert!(selector_matches("a==b", &labels));
        assert!(!selector_matches("a=x", &labels));
        assert!(selector_matches("a!=x,c", &labels));
        assert!(!selector_matches("e", &labels));
        assert!(selector_matches("a in (x, b),c", &labels));
        assert!(!selector_matches("a in (x,y)", &labels));
        assert!(selector_matches("a notin (x,y)", &labels));
        assert!(!selector_matches("c notin (d)", &labels));
        assert_eq!(
            percent_decode("app.kubernetes.io%2Fmanaged-by%3Dx"),
            "app.kubernetes.io/managed-by=x"
        );
    }
}
