//! Root privileges. Tests that create namespaces need them; a run without them skips those tests,
//! saying so on stderr, unless [`REQUIRE_ROOT_ENV`] demands that they run (CI sets it, so a CI run
//! can never skip silently).

use std::ffi::OsStr;
use std::io::Write;

/// Set to `1` to make a test that needs root fail, instead of skipping, when not root.
pub const REQUIRE_ROOT_ENV: &str = "CNI_TESTS_REQUIRE_ROOT";

/// Whether the effective uid is 0.
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Fails unless the process runs as root (network namespaces need CAP_SYS_ADMIN/CAP_NET_ADMIN).
/// Tests start with [`skip_unless_root!`](crate::skip_unless_root) instead, so that a non-root
/// run skips them; this is the last line of defence in the helpers that create namespaces.
///
/// # Panics
/// If the effective uid is not 0.
pub fn require_root() {
    if !is_root() {
        panic!(
            "this needs root (it creates network namespaces; effective uid is {}): run it as \
             root, and start the test with `netns_tests::skip_unless_root!()` so that a non-root \
             run skips it",
            nix::unistd::geteuid()
        );
    }
}

/// What a test that needs root should do in this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootVerdict {
    Run,
    Skip,
    Fail,
}

/// The decision behind [`skip_unless_root!`](crate::skip_unless_root): as root always run; else
/// fail when `require_root_env` is `1`, skip otherwise.
pub fn root_verdict(is_root: bool, require_root_env: Option<&OsStr>) -> RootVerdict {
    if is_root {
        RootVerdict::Run
    } else if require_root_env == Some(OsStr::new("1")) {
        RootVerdict::Fail
    } else {
        RootVerdict::Skip
    }
}

/// Whether the calling test may go on: true as root. Otherwise prints
/// `skipped: <test> needs root (CAP_NET_ADMIN)` on stderr and returns false, or, when
/// [`REQUIRE_ROOT_ENV`]`=1`, fails the test.
///
/// # Panics
/// When not root and [`REQUIRE_ROOT_ENV`] is `1`.
pub fn root_or_skip() -> bool {
    let current = std::thread::current();
    // libtest names each test's thread after the test.
    let test = current.name().unwrap_or("this test");
    match root_verdict(is_root(), std::env::var_os(REQUIRE_ROOT_ENV).as_deref()) {
        RootVerdict::Run => true,
        RootVerdict::Skip => {
            // Straight to stderr, not through eprintln!, which the test harness captures and
            // shows only for failures: a skip must be seen.
            let _ = writeln!(
                std::io::stderr(),
                "skipped: {test} needs root (CAP_NET_ADMIN: it creates network namespaces); \
                 set {REQUIRE_ROOT_ENV}=1 to make this a failure"
            );
            false
        }
        RootVerdict::Fail => panic!(
            "{test} needs root (CAP_NET_ADMIN: it creates network namespaces) and \
             {REQUIRE_ROOT_ENV}=1 forbids skipping it; effective uid is {}",
            nix::unistd::geteuid()
        ),
    }
}

/// Returns from the calling test, after saying why on stderr, unless it runs as root (see
/// [`root_or_skip`]). The first line of every test that needs root.
#[macro_export]
macro_rules! skip_unless_root {
    () => {
        if !$crate::root_or_skip() {
            return;
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_always_runs_whatever_the_environment() {
        assert_eq!(root_verdict(true, None), RootVerdict::Run);
        assert_eq!(root_verdict(true, Some(OsStr::new("1"))), RootVerdict::Run);
    }

    #[test]
    fn non_root_skips_by_default() {
        assert_eq!(root_verdict(false, None), RootVerdict::Skip);
        assert_eq!(
            root_verdict(false, Some(OsStr::new("0"))),
            RootVerdict::Skip
        );
    }

    #[test]
    fn non_root_fails_when_root_is_required() {
        assert_eq!(
            root_verdict(false, Some(OsStr::new("1"))),
            RootVerdict::Fail
        );
    }
}
