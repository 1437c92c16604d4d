//! The protocol's encodings of column values (RFC 7047 section 5.1): building them for
//! operations and reading them out of `select` results.

use std::collections::BTreeMap;

use serde_json::{json, Value};

/// `["set", [...]]`.
pub fn set<I: IntoIterator<Item = Value>>(items: I) -> Value {
    json!(["set", items.into_iter().collect::<Vec<_>>()])
}

/// `["map", [[k, v], ...]]`.
pub fn map<'a, I: IntoIterator<Item = (&'a String, &'a String)>>(pairs: I) -> Value {
    let pairs: Vec<Value> = pairs.into_iter().map(|(k, v)| json!([k, v])).collect();
    json!(["map", pairs])
}

/// `["uuid", "..."]`: a row already in the database.
pub fn uuid(id: &str) -> Value {
    json!(["uuid", id])
}

/// `["named-uuid", "..."]`: a row inserted earlier in the same transaction.
pub fn named_uuid(name: &str) -> Value {
    json!(["named-uuid", name])
}

/// The members of a set column: a set is written as `["set", [...]]`, except a one-member set
/// which may be the bare atom.
pub fn set_items(v: &Value) -> Vec<&Value> {
    match v.as_array().map(Vec::as_slice) {
        Some([tag, Value::Array(items)]) if tag == "set" => items.iter().collect(),
        _ => vec![v],
    }
}

/// A string-to-string map column; other pairs are skipped.
pub fn map_items(v: &Value) -> BTreeMap<String, String> {
    let Some([tag, Value::Array(pairs)]) = v.as_array().map(Vec::as_slice) else {
        return BTreeMap::new();
    };
    if tag != "map" {
        return BTreeMap::new();
    }
    pairs
        .iter()
        .filter_map(|p| match p.as_array().map(Vec::as_slice) {
            Some([Value::String(k), Value::String(v)]) => Some((k.clone(), v.clone())),
            _ => None,
        })
        .collect()
}

/// The id of a `["uuid", "..."]` atom.
pub fn uuid_of(v: &Value) -> Option<&str> {
    match v.as_array().map(Vec::as_slice) {
        Some([tag, Value::String(id)]) if tag == "uuid" => Some(id),
        _ => None,
    }
}

/// The rows of a `select` result.
pub fn rows(result: &Value) -> &[Value] {
    result
        .get("rows")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_read_back_their_members_and_a_bare_atom_is_a_set_of_one() {
        let s = set([json!(1), json!(2)]);
        assert_eq!(s, json!(["set", [1, 2]]));
        assert_eq!(set_items(&s), vec![&json!(1), &json!(2)]);
        assert_eq!(set_items(&json!(5)), vec![&json!(5)]);
    }

    #[test]
    fn string_maps_round_trip_and_other_pairs_are_skipped() {
        let m: BTreeMap<String, String> = [("a".to_string(), "b".to_string())].into();
        assert_eq!(map_items(&map(&m)), m);
        let mixed = json!(["map", [["a", "b"], ["n", 1]]]);
        assert_eq!(map_items(&mixed), m);
        assert!(map_items(&json!(["set", []])).is_empty());
    }

    #[test]
    fn only_uuid_atoms_have_a_uuid() {
        assert_eq!(uuid_of(&uuid("1-2")), Some("1-2"));
        assert_eq!(uuid_of(&named_uuid("x")), None);
    }

    #[test]
    fn rows_of_a_result_without_rows_are_none() {
        assert_eq!(rows(&json!({"rows": [{"name": "br0"}]})).len(), 1);
        assert!(rows(&json!({"count": 1})).is_empty());
    }
}
