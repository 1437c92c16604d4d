//! The sysctl allowlist: without it, anyone who can write a NetworkAttachmentDefinition can set
//! any network sysctl of a pod, bypassing the cluster's pod sysctl policy.
//!
//! When the file exists, each non-empty line is a regular expression; a sysctl key (as written in
//! the config, before IFNAME substitution) must match at least one, anywhere in the key, as the
//! reference plugin matches. No file means no restriction.

use std::path::Path;

use cni_common::{Code, Context, ContextAs, Error, Result};
use regex_lite::Regex;

pub const ALLOWLIST_PATH: &str = "/etc/cni/tuning/allowlist.conf";

#[derive(Debug)]
pub struct Allowlist {
    patterns: Option<Vec<Regex>>,
}

impl Allowlist {
    /// No restriction.
    pub fn none() -> Allowlist {
        Allowlist { patterns: None }
    }

    /// Reads the node's allowlist; only read when the config has sysctls.
    pub fn load(path: &Path) -> Result<Allowlist> {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                Allowlist::parse(&text).with_context(|| format!("allowlist {}", path.display()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Allowlist::none()),
            Err(e) => Err(Error::wrap(format!("reading {}", path.display()), e)),
        }
    }

    pub fn parse(text: &str) -> Result<Allowlist> {
        let patterns = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            // A broken allowlist refuses the config it was to check: code 7, as its refusals.
            .map(|l| {
                Regex::new(l).with_context_as(Code::InvalidConfig, || format!("pattern {l:?}"))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Allowlist {
            patterns: Some(patterns),
        })
    }

    pub fn check(&self, key: &str) -> Result<()> {
        match &self.patterns {
            None => Ok(()),
            Some(p) if p.iter().any(|re| re.is_match(key)) => Ok(()),
            Some(_) => Err(Error::invalid_config(format!(
                "sysctl {key:?} is not allowed by {ALLOWLIST_PATH}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_file_allows_everything() {
        let a = Allowlist::load(Path::new("/nonexistent/allowlist.conf")).expect("no file");
        assert!(a.check("net.ipv4.ip_forward").is_ok());
    }

    #[test]
    fn keys_must_match_one_pattern() {
        let a = Allowlist::parse(
            "^net\\.ipv4\\.conf\\.IFNAME\\.[a-z_]*$\n\n^net\\.ipv6\\.conf\\.IFNAME\\.accept_ra$\n",
        )
        .expect("valid");
        assert!(a.check("net.ipv4.conf.IFNAME.forwarding").is_ok());
        assert!(a.check("net.ipv6.conf.IFNAME.accept_ra").is_ok());
        let e = a.check("net.ipv4.ip_forward").expect_err("not allowed");
        assert_eq!(e.code(), cni_common::Code::InvalidConfig);
    }

    #[test]
    fn an_empty_file_allows_nothing() {
        let a = Allowlist::parse("\n").expect("valid");
        assert!(a.check("net.ipv4.ip_forward").is_err());
    }

    #[test]
    fn a_broken_pattern_is_an_error() {
        assert!(Allowlist::parse("net.(ipv4").is_err());
    }
}
