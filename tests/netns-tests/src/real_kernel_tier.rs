//! The real-kernel test tier from the tests: Debian's 6.1 kernel booted under QEMU by
//! [`crate::real_kernel`], for what the host kernel cannot do (bridge VLAN filtering, 802.1Q, the
//! openvswitch datapath). The guest shares the host's files, so binaries built on the host
//! (`scripts/build-plugins` -> `target/cni-bin/`, and the test binaries themselves) run inside.
//!
//! A boot costs about 10 s, so run many tests per boot. The intended pattern, in one test file:
//! - the guest-only tests sit in a module `in_guest`, each `#[ignore = "..."]` (so the host's
//!   `cargo test` lists them as ignored, never as passed) and starting with [`require_guest`];
//! - one ordinary test calls [`run_ignored_tests_in_guest`]`("in_guest::")`, which boots once and
//!   runs this very test binary inside the guest with `--ignored in_guest::`, and fails unless they
//!   all pass and at least one ran.

use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Output};
use std::sync::{Mutex, OnceLock};

use crate::real_kernel::{self, run::RunOptions};

pub use crate::real_kernel::GUEST_ENV;

/// Host variables handed on to the guest when set. CARGO_TARGET_DIR, so that the guest finds what
/// the host built there (the libcni driver) instead of building it again under emulation.
const FORWARDED_ENV: &[&str] = &[
    "RUST_BACKTRACE",
    "RUST_LOG",
    "CNI_TEST_PLUGIN_DIR",
    "CARGO_TARGET_DIR",
    crate::GO_PLUGINS_DIR_ENV,
];

/// Forwarded variables naming a directory of binaries the guest must see: where it lies under a
/// tmpfs of the guest's (the Go plugins' cache under /var/cache), its tree is shared read-only.
const SHARED_DIR_ENV: &[&str] = &[crate::GO_PLUGINS_DIR_ENV];

/// Whether this process runs inside the real-kernel guest.
pub fn in_guest() -> bool {
    std::env::var(GUEST_ENV).as_deref() == Ok("1")
}

/// Fails the test unless it runs inside the real-kernel guest: guest-only tests start with it, so
/// that `cargo test -- --ignored` on the host fails loudly instead of testing the host's kernel.
///
/// # Panics
/// Outside the guest.
pub fn require_guest() {
    if !in_guest() {
        panic!(
            "this test runs inside the real-kernel guest ({GUEST_ENV}=1 is not set): it is driven \
             by a host test through run_ignored_tests_in_guest, or by hand with \
             `real-kernel run -- <test binary> --ignored <name>`"
        );
    }
}

/// Sets the tier up ([`real_kernel::setup::setup`]) once per process: installs QEMU, virtme-ng
/// and the kernel when missing (needs root and, the first time, the package registries); about
/// 1 s when all is there. Setups in several processes at once take turns.
///
/// # Panics
/// If the tier cannot be set up, with the reason.
pub fn setup() {
    static SETUP: OnceLock<Result<(), String>> = OnceLock::new();
    let result = SETUP.get_or_init(|| {
        real_kernel::setup::setup().map(drop).map_err(|e| {
            format!(
                "the real-kernel test tier cannot be set up on this machine (`real-kernel \
                 setup` failed); tests that need bridge VLAN filtering, 802.1Q or the \
                 openvswitch datapath cannot run: {e}"
            )
        })
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// Sets the tier up ([`setup`]), boots the guest and runs `command` (a program and its arguments,
/// no shell) as root, with the repository as working directory; returns its output once the
/// guest has powered off. `options` are `real-kernel run` options (`--timeout`, `--memory`,
/// `--env NAME`, ...). The exit status is the command's, or 125 when the guest never reported
/// one (boot failure, crash, timeout); the kernel console is then on stderr.
///
/// # Panics
/// If the options are invalid, the tier cannot be set up or the guest cannot be started.
pub fn run(options: &[&str], command: &[&str]) -> Output {
    assert!(!command.is_empty(), "run: empty command");
    let options = run_options(options, command, |name| {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    })
    .unwrap_or_else(|e| panic!("{e}"));
    setup();
    // One guest at a time per process: two software-emulated guests on our 2 cores take longer
    // together than one after the other.
    static ONE_GUEST: Mutex<()> = Mutex::new(());
    let _guard = ONE_GUEST
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let status = real_kernel::run::run(&options, &mut stdout, &mut stderr).unwrap_or_else(|e| {
        panic!(
            "`real-kernel run -- {}` could not run: {e}\n{}",
            command.join(" "),
            String::from_utf8_lossy(&stderr)
        )
    });
    Output {
        status: ExitStatus::from_raw((status & 0xff) << 8),
        stdout,
        stderr,
    }
}

/// `options`, plus `--env NAME` for each of [`FORWARDED_ENV`] set on the `host`, and `--rodir`
/// for the hidden tree of each of [`SHARED_DIR_ENV`]; then `command`.
fn run_options(
    options: &[&str],
    command: &[&str],
    host: impl Fn(&str) -> Option<String>,
) -> real_kernel::Result<RunOptions> {
    let mut args: Vec<String> = options.iter().map(|o| o.to_string()).collect();
    for name in FORWARDED_ENV.iter().copied() {
        let Some(value) = host(name) else { continue };
        args.extend(["--env".to_string(), name.to_string()]);
        let tree = SHARED_DIR_ENV
            .contains(&name)
            .then(|| real_kernel::hidden_tree(std::path::Path::new(&value)))
            .flatten();
        if let Some(tree) = tree {
            args.extend(["--rodir".to_string(), tree.display().to_string()]);
        }
    }
    args.push("--".to_string());
    args.extend(command.iter().map(|c| c.to_string()));
    RunOptions::parse(args)
}

/// [`run`], and panics with the whole output unless the command exits 0; returns its stdout.
///
/// # Panics
/// As [`run`], and if the command fails in the guest.
pub fn run_ok(options: &[&str], command: &[&str]) -> String {
    let out = run(options, command);
    if !out.status.success() {
        panic!(
            "`real-kernel run -- {}` failed:\n{}",
            command.join(" "),
            crate::describe_output(&out)
        );
    }
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Boots the guest once and runs, inside, the `#[ignore]`d tests of the current test binary whose
/// names contain `filter` (`<this binary> --ignored <filter>`). Returns the harness's stdout.
///
/// # Panics
/// If any of them fails, if none ran (a filter that matches nothing must not pass), or if called
/// inside the guest.
pub fn run_ignored_tests_in_guest(filter: &str) -> String {
    assert!(
        !in_guest(),
        "run_ignored_tests_in_guest is for the host side"
    );
    let exe = std::env::current_exe().expect("the path of the running test binary");
    let exe = exe.to_str().expect("the test binary's path is UTF-8");
    let stdout = run_ok(&[], &[exe, "--ignored", filter]);
    let ran: usize = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("test result: ok. "))
        .filter_map(|rest| rest.split(" passed").next()?.trim().parse::<usize>().ok())
        .sum();
    if ran == 0 {
        panic!("no test matching `{filter}` ran inside the guest:\n{stdout}");
    }
    stdout
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwarded_variables_that_are_set_go_to_the_guest() {
        let host = |n: &str| (n == "RUST_LOG").then(|| "debug".to_owned());
        let options =
            run_options(&["--timeout", "60"], &["true"], host).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(options.env, vec!["RUST_LOG".to_owned()]);
        assert_eq!(options.timeout_secs, 60);
        assert_eq!(options.command, vec!["true".to_owned()]);
        assert!(options.rodirs.is_empty());
    }

    #[test]
    fn the_go_plugins_go_to_the_guest_with_their_hidden_tree_shared_read_only() {
        let cached = |n: &str| {
            (n == crate::GO_PLUGINS_DIR_ENV)
                .then(|| "/var/cache/cni-go-plugins-1.9.1/root/usr/lib/cni".to_owned())
        };
        let options = run_options(&[], &["true"], cached).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(options.env, vec![crate::GO_PLUGINS_DIR_ENV.to_owned()]);
        assert_eq!(
            options.rodirs,
            vec![std::path::PathBuf::from("/var/cache/cni-go-plugins-1.9.1")]
        );
        let visible = |n: &str| (n == crate::GO_PLUGINS_DIR_ENV).then(|| "/opt/go".to_owned());
        let options = run_options(&[], &["true"], visible).unwrap_or_else(|e| panic!("{e}"));
        assert!(options.rodirs.is_empty());
    }

    #[test]
    fn the_command_keeps_its_own_dashed_arguments() {
        let options = run_options(&[], &["prog", "--ignored", "in_guest::"], |_| None)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(options.command, vec!["prog", "--ignored", "in_guest::"]);
        assert!(options.env.is_empty());
    }
}
