//! Command lines for the tests, written as one string the way the operator renders them.

use crate::install;

/// The words of `line`, as the program receives them after its name.
pub(super) fn args(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_string).collect()
}

/// A `--plugins` list as the commands that look at what is installed take it.
pub(super) fn plugins(names: &[&str]) -> Option<Vec<String>> {
    Some(names.iter().map(|s| s.to_string()).collect())
}

/// A `--plugins` list as install takes it, each plugin under its own name.
pub(super) fn sources(names: &[&str]) -> Option<Vec<install::Plugin>> {
    Some(names.iter().map(|s| install::Plugin::named(s)).collect())
}
