//! Harness for integration tests that run CNI plugins in real network namespaces.
//!
//! Everything here is test support code: the helpers panic with a descriptive message instead of
//! returning errors, so that a test fails loudly when the environment is not what it needs. The
//! one exception is root: without it, the tests that need it skip themselves and say so on
//! stderr ([`skip_unless_root!`]), unless `CNI_TESTS_REQUIRE_ROOT=1` makes that a failure.
//! Resources are owned by guards ([`Netns`], [`HostSandbox`], [`TempDir`]) that clean up in
//! `Drop`, so a failing test leaves nothing behind.
//!
//! The host network is never touched: plugins that create bridges or veths in the "host"
//! namespace are run inside a throwaway [`HostSandbox`] (a named netns of its own), with the
//! container namespaces created beside it. All names include the test's tag and the process id,
//! so tests run in parallel safely.
//!
//! Two ways to call a plugin are provided:
//! - [`run_plugin`] / [`run_plugin_in`]: exec the binary exactly as a runtime does (CNI_* env,
//!   config on stdin), for spec-level checks;
//! - [`LibcniAttachment`]: go through the libcni driver (`libcni-driver/main.go`, built by
//!   [`build_libcni_driver`]), the code path containerd, CRI-O and Multus use.
//!
//! The real-kernel tier ([`real_kernel`], driven from tests by [`real_kernel_tier`]) runs tests
//! under Debian's 6.1 kernel in QEMU, for what the host kernel cannot do.

pub mod bench;
mod go_reference;
mod leftovers;
mod libcni;
mod link;
mod names;
mod netns;
mod node_policy;
pub mod openvswitch;
mod paths;
mod plugin;
mod process;
pub mod real_kernel;
pub mod real_kernel_tier;
mod root;
mod temp_dir;

pub use go_reference::{
    cni_versions, go_reference, go_reference_dir, go_release, go_release_label,
    newest_common_cni_version, Release, GO_PLUGINS_DIR_ENV,
};
pub use leftovers::{files_under, host_local_leases};
pub use libcni::{build_libcni_driver, LibcniAttachment, PodIdentity};
pub use link::{parse_addresses, parse_links, parse_port_vlans, Link, LinkInfo};
pub use names::{unique_name, NAME_PREFIX};
pub use netns::{leftover_netns, netns_exists, HostSandbox, Netns};
pub use node_policy::{test_node_policy, NODE_POLICY_ENV};
pub use paths::{
    go_plugin, go_plugin_dir, our_plugin, our_plugin_dir, target_dir, workspace_root,
    GO_PLUGIN_DIR, PLUGIN_DIR_ENV,
};
pub use plugin::{run_plugin, run_plugin_in, PluginDir};
pub use process::{
    describe_output, expect_failure, expect_success, run_command, wait_for, COMMAND_TIMEOUT,
};
pub use root::{is_root, require_root, root_or_skip, REQUIRE_ROOT_ENV};
pub use temp_dir::TempDir;
