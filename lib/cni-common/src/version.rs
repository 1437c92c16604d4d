//! CNI specification versions, which verbs each allows, and `cniVersions` negotiation.

use std::fmt;

use crate::error::{Error, Result};

/// Every spec version this library speaks, oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SpecVersion {
    V0_1_0,
    V0_2_0,
    V0_3_0,
    V0_3_1,
    V0_4_0,
    V1_0_0,
    V1_1_0,
}

/// The verbs a plugin answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Add,
    Del,
    Check,
    Status,
    Gc,
    Version,
}

/// The three result layouts the versions share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultFormat {
    /// 0.1.0 and 0.2.0: `ip4` / `ip6` objects.
    Legacy,
    /// 0.3.0, 0.3.1 and 0.4.0: `interfaces`, `ips` with `version`.
    V04,
    /// 1.0.0 and 1.1.0: `ips` without `version`.
    V1,
}

impl SpecVersion {
    pub const ALL: [SpecVersion; 7] = [
        SpecVersion::V0_1_0,
        SpecVersion::V0_2_0,
        SpecVersion::V0_3_0,
        SpecVersion::V0_3_1,
        SpecVersion::V0_4_0,
        SpecVersion::V1_0_0,
        SpecVersion::V1_1_0,
    ];

    pub const CURRENT: SpecVersion = SpecVersion::V1_1_0;

    pub fn as_str(self) -> &'static str {
        match self {
            SpecVersion::V0_1_0 => "0.1.0",
            SpecVersion::V0_2_0 => "0.2.0",
            SpecVersion::V0_3_0 => "0.3.0",
            SpecVersion::V0_3_1 => "0.3.1",
            SpecVersion::V0_4_0 => "0.4.0",
            SpecVersion::V1_0_0 => "1.0.0",
            SpecVersion::V1_1_0 => "1.1.0",
        }
    }

    /// Exact lookup; an empty string is 0.1.0, as libcni reads a config without `cniVersion`.
    pub fn lookup(s: &str) -> Option<SpecVersion> {
        if s.is_empty() {
            return Some(SpecVersion::V0_1_0);
        }
        SpecVersion::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// Like [`lookup`](Self::lookup), but an unknown version is the spec's error code 1.
    pub fn parse(s: &str) -> Result<SpecVersion> {
        SpecVersion::lookup(s).ok_or_else(|| {
            Error::incompatible_version("incompatible CNI versions").with_details(format!(
                "config is {s:?}, plugin supports [{}]",
                supported_list()
            ))
        })
    }

    pub fn result_format(self) -> ResultFormat {
        match self {
            SpecVersion::V0_1_0 | SpecVersion::V0_2_0 => ResultFormat::Legacy,
            SpecVersion::V0_3_0 | SpecVersion::V0_3_1 | SpecVersion::V0_4_0 => ResultFormat::V04,
            SpecVersion::V1_0_0 | SpecVersion::V1_1_0 => ResultFormat::V1,
        }
    }

    /// CHECK arrived in 0.4.0, STATUS and GC in 1.1.0.
    pub fn allows(self, cmd: Command) -> bool {
        match cmd {
            Command::Add | Command::Del | Command::Version => true,
            Command::Check => self >= SpecVersion::V0_4_0,
            Command::Status | Command::Gc => self >= SpecVersion::V1_1_0,
        }
    }

    /// The version-gate error skel reports, e.g. "config version does not allow CHECK".
    pub fn require(self, cmd: Command) -> Result<()> {
        if self.allows(cmd) {
            Ok(())
        } else {
            Err(Error::incompatible_version(format!(
                "config version {:?} does not allow {}",
                self.as_str(),
                cmd.as_str()
            )))
        }
    }
}

impl fmt::Display for SpecVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Command {
    pub fn parse(s: &str) -> Option<Command> {
        match s {
            "ADD" => Some(Command::Add),
            "DEL" => Some(Command::Del),
            "CHECK" => Some(Command::Check),
            "STATUS" => Some(Command::Status),
            "GC" => Some(Command::Gc),
            "VERSION" => Some(Command::Version),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Command::Add => "ADD",
            Command::Del => "DEL",
            Command::Check => "CHECK",
            Command::Status => "STATUS",
            Command::Gc => "GC",
            Command::Version => "VERSION",
        }
    }
}

fn supported_list() -> String {
    SpecVersion::ALL
        .iter()
        .map(|v| format!("{:?}", v.as_str()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Picks the version a request speaks: `cniVersion` when set; otherwise the highest entry of
/// `cniVersions` we support (spec 1.1: entries we do not know are skipped, as libcni skips
/// versions above its own); otherwise 0.1.0.
pub fn negotiate(cni_version: &str, cni_versions: &[String]) -> Result<SpecVersion> {
    if !cni_version.is_empty() {
        return SpecVersion::parse(cni_version);
    }
    if cni_versions.is_empty() {
        return Ok(SpecVersion::V0_1_0);
    }
    cni_versions
        .iter()
        .filter_map(|v| SpecVersion::lookup(v).filter(|_| !v.is_empty()))
        .max()
        .ok_or_else(|| {
            Error::incompatible_version("incompatible CNI versions").with_details(format!(
                "config lists {cni_versions:?}, plugin supports [{}]",
                supported_list()
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;

    #[test]
    fn empty_version_is_0_1_0() {
        assert_eq!(SpecVersion::parse("").expect("ok"), SpecVersion::V0_1_0);
    }

    #[test]
    fn unknown_version_is_code_1() {
        for v in ["9.9.9", "0.5.0", "1.0", "v1.0.0", " 1.0.0"] {
            let e = SpecVersion::parse(v).expect_err("unknown");
            assert_eq!(e.code(), Code::IncompatibleVersion, "{v}");
        }
    }

    #[test]
    fn check_needs_0_4_0_and_status_gc_need_1_1_0() {
        assert!(!SpecVersion::V0_3_1.allows(Command::Check));
        assert!(SpecVersion::V0_4_0.allows(Command::Check));
        assert!(!SpecVersion::V1_0_0.allows(Command::Status));
        assert!(!SpecVersion::V1_0_0.allows(Command::Gc));
        assert!(SpecVersion::V1_1_0.allows(Command::Gc));
        let e = SpecVersion::V0_3_0
            .require(Command::Check)
            .expect_err("gated");
        assert_eq!(e.code(), Code::IncompatibleVersion);
    }

    #[test]
    fn negotiation_prefers_cni_version_then_highest_known_of_cni_versions() {
        let list = vec![
            "0.4.0".to_string(),
            "1.1.0".to_string(),
            "2.0.0".to_string(),
        ];
        assert_eq!(negotiate("1.0.0", &list).expect("ok"), SpecVersion::V1_0_0);
        assert_eq!(negotiate("", &list).expect("ok"), SpecVersion::V1_1_0);
        assert_eq!(negotiate("", &[]).expect("ok"), SpecVersion::V0_1_0);
        let unknown = vec!["3.0.0".to_string()];
        assert_eq!(
            negotiate("", &unknown).expect_err("none known").code(),
            Code::IncompatibleVersion
        );
    }

    #[test]
    fn versions_are_ordered_oldest_first() {
        let mut sorted = SpecVersion::ALL;
        sorted.sort();
        assert_eq!(sorted, SpecVersion::ALL);
    }
}
