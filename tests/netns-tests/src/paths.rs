//! Where things are: the workspace, the Cargo target directory, our plugin binaries and Debian's
//! Go reference plugins.

use std::path::{Path, PathBuf};

/// Where Debian's `containernetworking-plugins` installs the Go reference plugins.
pub const GO_PLUGIN_DIR: &str = "/usr/lib/cni";

/// Env variable that overrides [`our_plugin_dir`].
pub const PLUGIN_DIR_ENV: &str = "CNI_TEST_PLUGIN_DIR";

/// The Cargo workspace root (this crate is `tests/netns-tests` in it).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("netns-tests lives inside the workspace directory")
        .to_path_buf()
}

/// The Cargo target directory: `$CARGO_TARGET_DIR` if set, else `<workspace>/target`.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                workspace_root().join(dir)
            }
        }
        _ => workspace_root().join("target"),
    }
}

/// Directory holding OUR plugin binaries: `$CNI_TEST_PLUGIN_DIR` if set, else
/// `<workspace>/target/cni-bin` (where the build script copies the static release binaries).
pub fn our_plugin_dir() -> PathBuf {
    match std::env::var_os(PLUGIN_DIR_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => workspace_root().join("target").join("cni-bin"),
    }
}

/// Directory holding Debian's Go reference plugins (`/usr/lib/cni`).
pub fn go_plugin_dir() -> PathBuf {
    PathBuf::from(GO_PLUGIN_DIR)
}

/// Path of one of OUR plugin binaries.
///
/// # Panics
/// If the binary is missing, with instructions on how to build it.
pub fn our_plugin(name: &str) -> PathBuf {
    let dir = our_plugin_dir();
    let path = dir.join(name);
    if !is_executable_file(&path) {
        panic!(
            "our plugin binary `{name}` is missing: {} does not exist or is not executable.\n\
             Build the project's static release binaries and copy them into {} \
             (the project's build script does this; by hand: `cargo build --release` in {} and \
             copy target/release/{name} to target/cni-bin/), or point {PLUGIN_DIR_ENV} at a \
             directory holding a `{name}` binary.",
            path.display(),
            dir.display(),
            workspace_root().display(),
        );
    }
    path
}

/// Path of one of Debian's Go reference plugins.
///
/// # Panics
/// If the binary is missing, naming the Debian package to install.
pub fn go_plugin(name: &str) -> PathBuf {
    let path = go_plugin_dir().join(name);
    if !is_executable_file(&path) {
        panic!(
            "Go reference plugin `{name}` is missing: {} does not exist. \
             Install it with `apt-get install -y containernetworking-plugins`.",
            path.display()
        );
    }
    path
}

pub(crate) fn is_executable_file(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}
