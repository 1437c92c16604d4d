//! Calling a plugin binary the way a runtime does, and private plugin directories.

use std::path::Path;
use std::process::{Command, Output};

use crate::netns::{HostSandbox, Netns};
use crate::paths::{go_plugin, go_plugin_dir, is_executable_file, our_plugin, our_plugin_dir};
use crate::process::{run_command, PLUGIN_ENV_PATH};
use crate::temp_dir::TempDir;

/// A private plugin directory of symlinks, so one test can pick exactly which implementation
/// serves each plugin type (e.g. Go `bridge` + `host-local`, OUR `tuning`) whatever else lives
/// in the source directories. libcni follows symlinks when it searches CNI_PATH.
#[derive(Debug)]
pub struct PluginDir {
    dir: TempDir,
}

impl PluginDir {
    /// An empty plugin directory.
    pub fn new(tag: &str) -> PluginDir {
        PluginDir {
            dir: TempDir::new(&format!("{tag}-bin")),
        }
    }

    /// Adds Debian's Go reference plugins `names`.
    ///
    /// # Panics
    /// If one is not installed.
    pub fn with_go(self, names: &[&str]) -> PluginDir {
        for name in names {
            self.link(name, &go_plugin(name));
        }
        self
    }

    /// Adds OUR plugins `names` (from [`our_plugin_dir`]).
    ///
    /// # Panics
    /// If one has not been built.
    pub fn with_ours(self, names: &[&str]) -> PluginDir {
        for name in names {
            self.link(name, &our_plugin(name));
        }
        self
    }

    /// Adds `target` under the name `name`.
    ///
    /// # Panics
    /// If the symlink cannot be created.
    pub fn with(self, name: &str, target: &Path) -> PluginDir {
        self.link(name, target);
        self
    }

    fn link(&self, name: &str, target: &Path) {
        let path = self.dir.join(name);
        std::os::unix::fs::symlink(target, &path).unwrap_or_else(|e| {
            panic!(
                "cannot link {} -> {}: {e}",
                path.display(),
                target.display()
            )
        });
    }

    /// The directory (use it as CNI_PATH).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Builds the command that execs `<dir>/<name>` the way a runtime does: an empty environment
/// except `PATH` and `env` (the CNI_* variables), optionally inside `sandbox`.
fn plugin_command(
    sandbox: Option<&Netns>,
    dir: &Path,
    name: &str,
    env: &[(&str, &str)],
) -> Command {
    let binary = dir.join(name);
    if !is_executable_file(&binary) {
        if dir == go_plugin_dir() {
            go_plugin(name);
        } else if dir == our_plugin_dir() {
            our_plugin(name);
        }
        panic!("plugin binary {} does not exist", binary.display());
    }
    let mut cmd = match sandbox {
        Some(ns) => ns.command(&binary),
        None => Command::new(&binary),
    };
    cmd.env_clear()
        .env("PATH", PLUGIN_ENV_PATH)
        .env(crate::NODE_POLICY_ENV, crate::test_node_policy());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Calls the plugin `<dir>/<name>` exactly as a runtime does: `env` holds the CNI_* variables
/// (CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME, CNI_ARGS, CNI_PATH), `stdin` the
/// request config. Runs in the caller's namespace: only use it for verbs or plugins that do not
/// change the host side (VERSION, plugins that only touch the container netns); otherwise use
/// [`run_plugin_in`].
///
/// # Panics
/// If the binary is missing (with build instructions) or cannot be run.
pub fn run_plugin(dir: &Path, name: &str, env: &[(&str, &str)], stdin: &str) -> Output {
    run_command(plugin_command(None, dir, name, env), stdin.as_bytes())
}

/// Like [`run_plugin`], but the plugin runs inside `sandbox` (its "host" namespace).
///
/// # Panics
/// If the binary is missing (with build instructions) or cannot be run.
pub fn run_plugin_in(
    sandbox: &HostSandbox,
    dir: &Path,
    name: &str,
    env: &[(&str, &str)],
    stdin: &str,
) -> Output {
    run_command(
        plugin_command(Some(sandbox.netns()), dir, name, env),
        stdin.as_bytes(),
    )
}
