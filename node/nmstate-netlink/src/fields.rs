//! A strict reader of the policy's JSON: every key must be consumed, so that a field we do not
//! know, or know and do not support, is refused by name instead of silently ignored (nmstate
//! would apply it; ignoring it would report success for something not done).

use serde_json::{Map, Value};

use crate::Error;

/// One JSON object being read, with where it sits (`interface br0: field "bridge.options"`).
pub(crate) struct Obj<'a> {
    /// Who the fields belong to: "interface br0", "route 0", "desired state".
    owner: &'a str,
    /// The dotted path of this object below its owner ("" at the owner's level).
    path: String,
    map: Map<String, Value>,
}

impl<'a> Obj<'a> {
    pub(crate) fn new(owner: &'a str, path: &str, value: &Value) -> Result<Obj<'a>, Error> {
        match value {
            Value::Object(map) => Ok(Obj {
                owner,
                path: path.to_string(),
                map: map.clone(),
            }),
            other => Err(refused(
                owner,
                path,
                &format!("must be an object, not {other}"),
            )),
        }
    }

    fn field(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    /// Takes the first of `keys` present (nmstate's spelling aliases: `port`/`ports`).
    pub(crate) fn take(&mut self, keys: &[&str]) -> Option<(String, Value)> {
        keys.iter()
            .find_map(|k| self.map.remove(*k).map(|v| (self.field(k), v)))
    }

    /// A field's value, Null counting as absent.
    pub(crate) fn value(&mut self, keys: &[&str]) -> Option<(String, Value)> {
        self.take(keys).filter(|(_, v)| !v.is_null())
    }

    pub(crate) fn object(&mut self, keys: &[&str]) -> Result<Option<Obj<'a>>, Error> {
        match self.value(keys) {
            Some((path, v)) => Obj::new(self.owner, &path, &v).map(Some),
            None => Ok(None),
        }
    }

    pub(crate) fn array(&mut self, keys: &[&str]) -> Result<Option<(String, Vec<Value>)>, Error> {
        match self.value(keys) {
            Some((path, Value::Array(items))) => Ok(Some((path, items))),
            Some((path, other)) => Err(refused(
                self.owner,
                &path,
                &format!("must be a list, not {other}"),
            )),
            None => Ok(None),
        }
    }

    pub(crate) fn string(&mut self, keys: &[&str]) -> Result<Option<String>, Error> {
        match self.value(keys) {
            Some((_, Value::String(s))) => Ok(Some(s)),
            Some((path, other)) => Err(refused(
                self.owner,
                &path,
                &format!("must be a string, not {other}"),
            )),
            None => Ok(None),
        }
    }

    /// A boolean; nmstate also takes "true"/"false" (and "yes"/"no") as strings.
    pub(crate) fn bool(&mut self, keys: &[&str]) -> Result<Option<bool>, Error> {
        match self.value(keys) {
            Some((_, Value::Bool(b))) => Ok(Some(b)),
            Some((path, Value::String(s))) => match s.to_ascii_lowercase().as_str() {
                "true" | "yes" | "on" | "1" => Ok(Some(true)),
                "false" | "no" | "off" | "0" => Ok(Some(false)),
                _ => Err(refused(
                    self.owner,
                    &path,
                    &format!("must be a boolean, not {s:?}"),
                )),
            },
            Some((path, other)) => Err(refused(
                self.owner,
                &path,
                &format!("must be a boolean, not {other}"),
            )),
            None => Ok(None),
        }
    }

    /// An unsigned number no larger than `max`; nmstate also takes numbers as strings.
    pub(crate) fn number(&mut self, keys: &[&str], max: u64) -> Result<Option<u64>, Error> {
        self.number_in(keys, 0, max)
    }

    /// A number from `min` to `max`, as [`Obj::number`].
    pub(crate) fn number_in(
        &mut self,
        keys: &[&str],
        min: u64,
        max: u64,
    ) -> Result<Option<u64>, Error> {
        let Some((path, v)) = self.value(keys) else {
            return Ok(None);
        };
        let n = match &v {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        };
        match n {
            Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
            _ => Err(refused(
                self.owner,
                &path,
                &format!("must be a number from {min} to {max}, not {v}"),
            )),
        }
    }

    /// Drops fields that are accepted and ignored (read-only ones a current state carries).
    pub(crate) fn ignore(&mut self, keys: &[&str]) {
        for k in keys {
            self.map.remove(*k);
        }
    }

    /// Refuses a field that is present: we know it and cannot honour it.
    pub(crate) fn refuse(&mut self, keys: &[&str], why: &str) -> Result<(), Error> {
        match self.take(keys) {
            Some((path, _)) => Err(Error::Refused(format!(
                "{}: field {path:?} is not supported ({why})",
                self.owner
            ))),
            None => Ok(()),
        }
    }

    /// Ends the read: any key left over is a field we do not support.
    pub(crate) fn finish(self) -> Result<(), Error> {
        match self.map.keys().next() {
            Some(key) => Err(Error::Refused(format!(
                "{}: field {:?} is not supported",
                self.owner,
                self.field(key)
            ))),
            None => Ok(()),
        }
    }

    pub(crate) fn owner(&self) -> &str {
        self.owner
    }

    pub(crate) fn path_of(&self, key: &str) -> String {
        self.field(key)
    }
}

/// A refusal of one field's value. A value's parse error becomes one through `map_err`: the
/// refusal is the message the user reads, naming the field, not a cause to chain.
pub(crate) fn refused(owner: &str, path: &str, why: &str) -> Error {
    Error::Refused(format!("{owner}: field {path:?} {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_leftover_key_is_refused_with_its_full_path() {
        let v = json!({"stp": {}, "vlan-protocol": "802.1q"});
        let mut obj = Obj::new("interface br0", "bridge.options", &v).expect("object");
        obj.take(&["stp"]);
        let err = obj.finish().expect_err("leftover");
        assert_eq!(
            err.to_string(),
            r#"interface br0: field "bridge.options.vlan-protocol" is not supported"#
        );
    }

    #[test]
    fn numbers_and_booleans_may_be_strings() {
        let v = json!({"mtu": "1400", "enabled": "false"});
        let mut obj = Obj::new("interface eth1", "", &v).expect("object");
        assert_eq!(
            obj.number(&["mtu"], u32::MAX.into()).expect("mtu"),
            Some(1400)
        );
        assert_eq!(obj.bool(&["enabled"]).expect("bool"), Some(false));
        obj.finish().expect("all consumed");
    }

    #[test]
    fn a_number_out_of_range_is_refused() {
        let v = json!({"id": 5000});
        let mut obj = Obj::new("interface eth1.5000", "vlan", &v).expect("object");
        let err = obj.number(&["id"], 4094).expect_err("too large");
        assert!(
            err.to_string()
                .contains(r#"field "vlan.id" must be a number from 0 to 4094"#),
            "{err}"
        );
    }

    #[test]
    fn the_first_alias_present_is_taken() {
        let v = json!({"ports": ["eth1"]});
        let mut obj = Obj::new("interface bond0", "link-aggregation", &v).expect("object");
        let (path, _) = obj
            .array(&["port", "ports"])
            .expect("list")
            .expect("present");
        assert_eq!(path, "link-aggregation.ports");
    }
}
