//! Reading the VM's JSON: leniently where it is already stored, strictly where a shape
//! KubeVirt's schema cannot hold is to be refused.

use serde_json::{Map, Value};

use super::Denial;

/// The value at a JSON pointer; `None` if it or anything on the way is absent, null or not
/// an object.
pub(super) fn at<'a>(v: &'a Value, pointer: &str) -> Option<&'a Value> {
    v.pointer(pointer).filter(|v| !v.is_null())
}

/// The object at `pointer`; a non-object on the way is refused.
pub(super) fn object_at<'a>(
    v: &'a Value,
    pointer: &str,
) -> Result<Option<&'a Map<String, Value>>, Denial> {
    let keys: Vec<&str> = pointer.split('/').skip(1).collect();
    let not_an_object = |depth: usize| match depth {
        0 => Denial("the virtual machine is not an object".into()),
        _ => Denial(format!("{} is not an object", keys[..depth].join("."))),
    };
    let mut cur = v;
    for (depth, key) in keys.iter().enumerate() {
        match cur
            .as_object()
            .ok_or_else(|| not_an_object(depth))?
            .get(*key)
        {
            None | Some(Value::Null) => return Ok(None),
            Some(next) => cur = next,
        }
    }
    cur.as_object()
        .map(Some)
        .ok_or_else(|| not_an_object(keys.len()))
}

/// The list of objects at `pointer` (objects on the way); anything else present is refused.
pub(super) type Objects<'a> = Vec<&'a Map<String, Value>>;
pub(super) fn objects_at<'a>(
    v: &'a Value,
    pointer: &str,
    what: &str,
) -> Result<Option<Objects<'a>>, Denial> {
    let (parent, last) = pointer.rsplit_once('/').unwrap_or_default();
    let list = match object_at(v, parent)?.and_then(|p| p.get(last)) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(Denial(format!("{what} is not a list"))),
    };
    let object = |(i, item): (usize, &'a Value)| {
        item.as_object()
            .ok_or_else(|| Denial(format!("{what}[{i}] is not an object")))
    };
    list.iter()
        .enumerate()
        .map(object)
        .collect::<Result<_, _>>()
        .map(Some)
}

pub(super) fn string_field<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    what: &str,
) -> Result<Option<&'a str>, Denial> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(Denial(format!("{what}: {key} is not a string"))),
    }
}
