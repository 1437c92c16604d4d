//! CNI_ARGS: `K=V;K=V` pairs from the runtime (containerd, CRI-O, Multus).
//!
//! Values may contain `=` (Multus passes pairs like `BLAHBLAH=foo=bar`), so a pair is split at its
//! first `=`. Keys may repeat (Multus in thin mode repeats the runtime's pairs): the last one wins,
//! as in Go's LoadArgs. Unknown keys are refused unless `IgnoreUnknown` is true.

use crate::error::{Error, Result};

/// Keys every runtime sends; always known.
pub const K8S_KEYS: [&str; 4] = [
    "K8S_POD_NAMESPACE",
    "K8S_POD_NAME",
    "K8S_POD_INFRA_CONTAINER_ID",
    "K8S_POD_UID",
];

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CniArgs {
    pairs: Vec<(String, String)>,
}

impl CniArgs {
    pub fn parse(raw: &str) -> Result<CniArgs> {
        let mut pairs = Vec::new();
        // Empty segments (a trailing ';') carry nothing; tolerating them costs nothing.
        for segment in raw.split(';').filter(|s| !s.is_empty()) {
            let (k, v) = segment.split_once('=').ok_or_else(|| {
                Error::invalid_env(format!(
                    "CNI_ARGS: invalid pair {segment:?} (want KEY=VALUE)"
                ))
            })?;
            if k.is_empty() {
                return Err(Error::invalid_env(format!(
                    "CNI_ARGS: pair {segment:?} has an empty key"
                )));
            }
            pairs.push((k.to_string(), v.to_string()));
        }
        let args = CniArgs { pairs };
        // Validate IgnoreUnknown now so a bad value is reported even when every key is known.
        args.ignore_unknown()?;
        Ok(args)
    }

    /// The value of `key`; the last occurrence wins.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }

    /// `IgnoreUnknown` takes 1/true/0/false in any case, like Go's UnmarshallableBool.
    pub fn ignore_unknown(&self) -> Result<bool> {
        match self.get("IgnoreUnknown") {
            None => Ok(false),
            Some(v) => match v.to_ascii_lowercase().as_str() {
                "1" | "true" => Ok(true),
                "0" | "false" => Ok(false),
                _ => Err(Error::invalid_env(format!(
                    "CNI_ARGS: IgnoreUnknown={v:?} is not a boolean"
                ))),
            },
        }
    }

    /// Refuses keys that are neither the Kubernetes ones nor in `known`, unless IgnoreUnknown.
    pub fn check_known(&self, known: &[&str]) -> Result<()> {
        if self.ignore_unknown()? {
            return Ok(());
        }
        let unknown: Vec<&str> = self
            .pairs
            .iter()
            .map(|(k, _)| k.as_str())
            .filter(|k| *k != "IgnoreUnknown" && !K8S_KEYS.contains(k) && !known.contains(k))
            .collect();
        if unknown.is_empty() {
            Ok(())
        } else {
            Err(Error::invalid_env(format!(
                "CNI_ARGS: unknown args {unknown:?} (set IgnoreUnknown=1 to allow them)"
            )))
        }
    }

    pub fn pod_uid(&self) -> Option<&str> {
        self.get("K8S_POD_UID")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;

    #[test]
    fn splits_at_the_first_equals_sign() {
        let a = CniArgs::parse("IgnoreUnknown=1;BLAHBLAH=foo=bar").expect("ok");
        assert_eq!(a.get("BLAHBLAH"), Some("foo=bar"));
    }

    #[test]
    fn last_duplicate_wins() {
        let a = CniArgs::parse("K8S_POD_NAME=a;IgnoreUnknown=true;K8S_POD_NAME=b").expect("ok");
        assert_eq!(a.get("K8S_POD_NAME"), Some("b"));
    }

    #[test]
    fn empty_string_and_trailing_semicolon_are_fine() {
        assert!(CniArgs::parse("").expect("ok").pairs().is_empty());
        assert_eq!(CniArgs::parse("MAC=x;").expect("ok").pairs().len(), 1);
    }

    #[test]
    fn pair_without_equals_is_code_4() {
        let e = CniArgs::parse("IgnoreUnknown=1;garbage").expect_err("bad");
        assert_eq!(e.code(), Code::InvalidEnvironment);
        let e = CniArgs::parse("=value").expect_err("bad");
        assert_eq!(e.code(), Code::InvalidEnvironment);
    }

    #[test]
    fn ignore_unknown_accepts_go_booleans_in_any_case() {
        for v in ["1", "true", "TRUE", "True"] {
            assert!(CniArgs::parse(&format!("IgnoreUnknown={v}"))
                .expect("ok")
                .ignore_unknown()
                .expect("bool"));
        }
        assert!(CniArgs::parse("IgnoreUnknown=yes").is_err());
    }

    #[test]
    fn unknown_keys_are_refused_unless_ignore_unknown() {
        let a = CniArgs::parse("K8S_POD_NAME=p;FOO=bar").expect("ok");
        assert_eq!(
            a.check_known(&["MAC"]).expect_err("unknown").code(),
            Code::InvalidEnvironment
        );
        let a = CniArgs::parse("IgnoreUnknown=1;K8S_POD_NAME=p;FOO=bar").expect("ok");
        assert!(a.check_known(&["MAC"]).is_ok());
        let a = CniArgs::parse("K8S_POD_NAME=p;MAC=00:11:22:33:44:55").expect("ok");
        assert!(a.check_known(&["MAC"]).is_ok());
    }
}
