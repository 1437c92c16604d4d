//! CNI specification versions: which the suite knows, how they compare, and which result
//! format each one uses.

/// Every CNI specification version the suite knows, oldest first.
pub const KNOWN_VERSIONS: [&str; 7] = [
    "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0",
];

/// The three result formats that the CNI versions use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// 0.1.0 and 0.2.0: `ip4` / `ip6` objects.
    V02,
    /// 0.3.0, 0.3.1 and 0.4.0: `interfaces` / `ips` with `ips[].version`.
    V04,
    /// 1.0.0 and 1.1.0: `interfaces` / `ips` without `ips[].version`.
    V1,
}

pub fn family(version: &str) -> Option<Family> {
    match version {
        "0.1.0" | "0.2.0" => Some(Family::V02),
        "0.3.0" | "0.3.1" | "0.4.0" => Some(Family::V04),
        "1.0.0" | "1.1.0" => Some(Family::V1),
        _ => None,
    }
}

pub fn is_known(version: &str) -> bool {
    KNOWN_VERSIONS.contains(&version)
}

fn version_triple(version: &str) -> Option<(u64, u64, u64)> {
    let mut parts = version.split('.').map(|p| p.parse::<u64>().ok());
    let triple = (parts.next()??, parts.next()??, parts.next()??);
    if parts.next().is_some() {
        return None;
    }
    Some(triple)
}

/// `version >= minimum`, comparing numerically; unparsable versions are never "at least".
pub fn version_at_least(version: &str, minimum: &str) -> bool {
    match (version_triple(version), version_triple(minimum)) {
        (Some(v), Some(m)) => v >= m,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_numerically_and_junk_is_never_at_least() {
        assert!(version_at_least("1.0.0", "0.4.0"));
        assert!(version_at_least("0.4.0", "0.4.0"));
        assert!(!version_at_least("0.3.1", "0.4.0"));
        assert!(!version_at_least("1.0.0", "1.1.0"));
        assert!(version_at_least("1.10.0", "1.2.0"));
        assert!(!version_at_least("junk", "0.1.0"));
    }

    #[test]
    fn each_known_version_has_its_result_format() {
        assert_eq!(family("0.3.1"), Some(Family::V04));
        assert_eq!(family("1.1.0"), Some(Family::V1));
        assert_eq!(family("0.1.0"), Some(Family::V02));
        assert_eq!(family("9.9.9"), None);
    }
}
