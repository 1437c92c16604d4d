//! The flags' values, checked as clap reads them: paths, endpoints, plugin lists and
//! durations. Each parser's error is the reason the usage message gives after the flag.

use std::path::PathBuf;
use std::time::Duration;

use cni_common::node_policy;

use crate::error::{Error, Result};
use crate::install;

/// `--plugins`, parsed: one value holding the whole list.
#[derive(Debug, Clone)]
pub(super) struct PluginList(pub(super) Vec<install::Plugin>);

/// An absolute path without `.` or `..` components, as the plugins accept in the policy.
pub(super) fn absolute_path(s: &str) -> cni_common::Result<PathBuf> {
    node_policy::check_plain_path("the directory", s).map(|()| PathBuf::from(s))
}

pub(super) fn non_empty(s: &str) -> std::result::Result<String, &'static str> {
    if s.is_empty() {
        Err("an empty value")
    } else {
        Ok(s.to_string())
    }
}

pub(super) fn non_empty_path(s: &str) -> std::result::Result<PathBuf, &'static str> {
    non_empty(s).map(PathBuf::from)
}

/// `a,b,c=a`: each a name or `NAME=SOURCE`; no empty entries, no name twice (a source may
/// serve several names).
pub(super) fn parse_plugins(s: &str) -> Result<PluginList> {
    let mut plugins: Vec<install::Plugin> = Vec::new();
    for entry in s.split(',').map(str::trim) {
        if entry.is_empty() {
            return Err(Error::msg("an empty name"));
        }
        let plugin = install::Plugin::parse(entry)?;
        if plugins.iter().any(|p| p.name == plugin.name) {
            return Err(Error::msg(format!("{} twice", plugin.name)));
        }
        plugins.push(plugin);
    }
    Ok(PluginList(plugins))
}

/// Why a duration is refused.
#[derive(Debug, thiserror::Error)]
pub enum DurationError {
    /// Zero, or more seconds than a duration holds.
    #[error("expected e.g. 500ms, 30s, 5m, 1h")]
    OutOfRange,
    #[error(transparent)]
    NotADuration(#[from] net_types::GoDurationError),
}

/// A Go duration (`500ms`, `30s`, `5m`, `1h30m`, as the operator writes them), or a number of
/// seconds; more than zero.
pub fn parse_duration(s: &str) -> std::result::Result<Duration, DurationError> {
    let d = if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        // Digits only: they fail to parse only when there are too many.
        let Ok(secs) = s.parse() else {
            return Err(DurationError::OutOfRange);
        };
        Duration::from_secs(secs)
    } else {
        net_types::parse_go_duration(s)?
    };
    if d.is_zero() {
        return Err(DurationError::OutOfRange);
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::parse;
    use crate::cli::testing::args;

    #[test]
    fn durations() {
        assert_eq!(
            parse_duration("500ms").ok(),
            Some(Duration::from_millis(500))
        );
        assert_eq!(parse_duration("30s").ok(), Some(Duration::from_secs(30)));
        assert_eq!(parse_duration("30").ok(), Some(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m").ok(), Some(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h").ok(), Some(Duration::from_secs(3600)));
        assert_eq!(
            parse_duration("1.5s").ok(),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_duration("1h30m").ok(),
            Some(Duration::from_secs(5400))
        );
        for bad in ["", "s", "-1s", "10d", "0", "0ms", "-0"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_allowed_directory_must_be_absolute_and_plain() {
        for dir in ["relative", "/a/../etc", "/a/./b"] {
            let line = format!("install --allow-state-dir {dir}");
            assert!(parse(&args(&line), None).is_err(), "{dir}");
        }
    }
}
