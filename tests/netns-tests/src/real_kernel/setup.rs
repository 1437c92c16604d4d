//! `real-kernel setup`: installs, as root and idempotently, the Debian packages, virtme-ng in a
//! venv with our guest init in front of its own, and Debian's current 6.1 kernel, extracted under
//! the tier's directory. Needs the network only for what is missing; offline it keeps what it has.

use std::fs::{self, File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use nix::fcntl::{Flock, FlockArg};
use tracing::{info, warn};

use super::exec::{is_executable, output_ok, succeeds};
use super::{cache_dir, require_root, Context, Error, Result, PACKAGE_ENV};

/// virtme-ng from PyPI, pinned: the version the tier was written and measured against.
pub const VIRTME_NG_VERSION: &str = "1.42";

/// Debian packages: the emulator, the guest's initramfs busybox, modprobe/depmod, `file`
/// (virtme-ng reads the kernel's version with it), Python's venv for virtme-ng, and what `check`
/// uses.
pub const APT_PACKAGES: &[&str] = &[
    "qemu-system-x86",
    "busybox-static",
    "kmod",
    "file",
    "python3",
    "python3-venv",
    "iproute2",
    "iputils-ping",
    "nftables",
];

/// Our guest init (see the file for why), installed in front of virtme-ng's.
pub const GUEST_INIT: &[u8] = include_bytes!("../../../../scripts/real-kernel.d/guest-init");

/// The line that marks our guest init, so setup and run can tell it from virtme-ng's own.
pub const GUEST_INIT_MARKER: &str = "cni-real-kernel guest-init";

/// What is installed, once setup is done.
#[derive(Debug, Clone)]
pub struct Ready {
    pub kernel_package: String,
    pub kernel_version: String,
    pub qemu_version: String,
}

impl std::fmt::Display for Ready {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}, virtme-ng {VIRTME_NG_VERSION}, {}",
            self.kernel_package, self.kernel_version, self.qemu_version
        )
    }
}

/// Installs whatever is missing. Setups in several processes at once take turns.
///
/// # Errors
/// When not root, or when something missing cannot be installed.
pub fn setup() -> Result<Ready> {
    require_root("it installs packages, boots a VM and runs the command as root")?;
    let dir = cache_dir()?;
    fs::create_dir_all(&dir).map_err(|e| Error::io("cannot create", &dir, e))?;
    let lock_path = dir.join(".lock");
    let lock_file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| Error::io("cannot open", &lock_path, e))?;
    // One setup at a time (cargo runs test binaries in parallel); released on drop.
    let _lock = Flock::lock(lock_file, FlockArg::LockExclusive)
        .map_err(|(_, e)| Error::io("cannot lock", &lock_path, e.into()))?;

    let mut apt = Apt::default();
    install_apt_packages(&mut apt)?;
    install_virtme_ng(&dir)?;
    install_kernel(&dir, &mut apt)?;

    let kdir = fs::canonicalize(dir.join("current"))
        .map_err(|e| Error::io("cannot resolve", &dir.join("current"), e))?;
    let read = |name: &str| {
        fs::read_to_string(kdir.join(name))
            .map(|s| s.trim().to_owned())
            .map_err(|e| Error::io("cannot read", &kdir.join(name), e))
    };
    let qemu = output_ok(Command::new("qemu-system-x86_64").arg("--version"))?;
    let ready = Ready {
        kernel_package: read(".deb-package")?,
        kernel_version: read(".deb-version")?,
        qemu_version: qemu.lines().next().unwrap_or_default().to_owned(),
    };
    info!("ready: {ready}");
    Ok(ready)
}

/// `apt-get update`, at most once per setup, and only when something is missing.
#[derive(Default)]
struct Apt {
    updated: bool,
}

impl Apt {
    fn update(&mut self) -> Result<()> {
        if !self.updated {
            info!("apt-get update");
            output_ok(Command::new("apt-get").args(["update", "-qq"]))?;
            self.updated = true;
        }
        Ok(())
    }
}

/// The packages of `wanted` that `dpkg-query -W -f='${Package} ${Status}\n'` does not report
/// as installed.
pub fn missing_packages<'a>(wanted: &[&'a str], dpkg_query: &str) -> Vec<&'a str> {
    wanted
        .iter()
        .copied()
        .filter(|p| {
            !dpkg_query.lines().any(|line| {
                let mut words = line.split_whitespace();
                words.next().and_then(|n| n.split(':').next()) == Some(p)
                    && line.ends_with("ok installed")
            })
        })
        .collect()
}

fn install_apt_packages(apt: &mut Apt) -> Result<()> {
    // dpkg-query exits 1 when one package is unknown, but still lists the others.
    let out = Command::new("dpkg-query")
        .args(["-W", "-f=${Package} ${Status}\\n"])
        .args(APT_PACKAGES)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .context("cannot run dpkg-query")?;
    let missing = missing_packages(APT_PACKAGES, &String::from_utf8_lossy(&out.stdout));
    if missing.is_empty() {
        return Ok(());
    }
    info!("installing Debian packages: {}", missing.join(" "));
    apt.update()?;
    output_ok(
        Command::new("apt-get")
            .env("DEBIAN_FRONTEND", "noninteractive")
            .args(["install", "-y", "-qq", "--no-install-recommends"])
            .args(&missing),
    )?;
    Ok(())
}

/// The venv's virtme-ng version, if it has one.
fn venv_virtme_ng_version(venv: &Path) -> Option<String> {
    let out = output_ok(Command::new(venv.join("bin/python")).args([
        "-c",
        "import importlib.metadata; print(importlib.metadata.version('virtme-ng'))",
    ]))
    .ok()?;
    Some(out.trim().to_owned())
}

/// virtme-ng's guest `bin` directory, where it looks for `virtme-ng-init`.
pub fn virtme_guest_bin(venv: &Path) -> Result<PathBuf> {
    let out = output_ok(Command::new(venv.join("bin/python")).args([
        "-c",
        "import os, virtme; print(os.path.join(os.path.dirname(virtme.__file__), 'guest', 'bin'))",
    ]))?;
    Ok(PathBuf::from(out.trim()))
}

/// Whether `path` is our guest init rather than virtme-ng's.
pub fn is_our_guest_init(path: &Path) -> bool {
    fs::read(path).is_ok_and(|text| {
        text.windows(GUEST_INIT_MARKER.len())
            .any(|w| w == GUEST_INIT_MARKER.as_bytes())
    })
}

fn install_virtme_ng(dir: &Path) -> Result<()> {
    let venv = dir.join("venv");
    let mut have = venv_virtme_ng_version(&venv);
    if have.as_deref() == Some(VIRTME_NG_VERSION) {
        let guest_bin = virtme_guest_bin(&venv)?;
        // Our wrapper without the init it wraps: a half-done earlier setup. Start over.
        if !is_executable(&guest_bin.join("virtme-ng-init.real"))
            && is_our_guest_init(&guest_bin.join("virtme-ng-init"))
        {
            have = None;
        }
    }
    if have.as_deref() != Some(VIRTME_NG_VERSION) {
        info!(
            "installing virtme-ng {VIRTME_NG_VERSION} into {}",
            venv.display()
        );
        remove_all(&venv)?;
        // Debian's Python, whatever else is first on PATH (pyenv, ...).
        output_ok(
            Command::new("/usr/bin/python3")
                .arg("-m")
                .arg("venv")
                .arg(&venv),
        )?;
        output_ok(
            Command::new(venv.join("bin/pip"))
                .args(["install", "--disable-pip-version-check", "--no-input", "-q"])
                .arg(format!("virtme-ng=={VIRTME_NG_VERSION}")),
        )?;
        if venv_virtme_ng_version(&venv).as_deref() != Some(VIRTME_NG_VERSION) {
            return Err(Error::msg(format!(
                "virtme-ng {VIRTME_NG_VERSION} did not install into {}",
                venv.display()
            )));
        }
    }
    let guest_bin = virtme_guest_bin(&venv)?;
    let init = guest_bin.join("virtme-ng-init");
    if !is_executable(&init) {
        return Err(Error::msg(format!(
            "virtme-ng {VIRTME_NG_VERSION} has no {}",
            init.display()
        )));
    }
    // Ours goes in front of virtme-ng-init, which virtme-ng finds by that path.
    if !is_our_guest_init(&init) {
        let real = guest_bin.join("virtme-ng-init.real");
        fs::rename(&init, &real).map_err(|e| Error::io("cannot rename", &init, e))?;
    }
    if fs::read(&init).ok().as_deref() != Some(GUEST_INIT) {
        write_executable(&init, GUEST_INIT)?;
    }
    Ok(())
}

/// Writes `content` to `path` (mode 0755) through a temporary file and a rename.
fn write_executable(path: &Path, content: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    fs::write(&tmp, content).map_err(|e| Error::io("cannot write", &tmp, e))?;
    fs::set_permissions(&tmp, fs::Permissions::from_mode(0o755))
        .map_err(|e| Error::io("cannot chmod", &tmp, e))?;
    fs::rename(&tmp, path).map_err(|e| Error::io("cannot install", path, e))
}

fn remove_all(path: &Path) -> Result<()> {
    match fs::remove_dir_all(path) {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(Error::io("cannot remove", path, e)),
        _ => Ok(()),
    }
}

/// The kernel package that `apt-cache depends linux-image-amd64` (Debian's "current kernel"
/// metapackage) names.
pub fn kernel_package_from_depends(apt_cache_depends: &str) -> Option<String> {
    apt_cache_depends.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        if words.next() != Some("Depends:") {
            return None;
        }
        let pkg = words.next()?;
        let abi = pkg.strip_prefix("linux-image-")?;
        abi.starts_with(|c: char| c.is_ascii_digit())
            .then(|| pkg.to_owned())
    })
}

/// The kernel ABI (`6.1.0-NN-amd64`) of a kernel package, which must be Debian 12's 6.1 kernel.
///
/// # Errors
/// For any other package.
pub fn kernel_abi(package: &str) -> Result<String> {
    match package.strip_prefix("linux-image-") {
        Some(abi) if abi.starts_with("6.1.") && abi.ends_with("-amd64") => Ok(abi.to_owned()),
        _ => Err(Error::msg(format!(
            "expected Debian 12's 6.1 kernel, but the package is {package} \
             (set {PACKAGE_ENV}=linux-image-6.1.0-NN-amd64)"
        ))),
    }
}

fn kernel_package_from_apt() -> Option<String> {
    let out = output_ok(Command::new("apt-cache").args(["depends", "linux-image-amd64"])).ok()?;
    kernel_package_from_depends(&out)
}

fn current_kernel(dir: &Path) -> Option<String> {
    let link = fs::read_link(dir.join("current")).ok()?;
    dir.join(&link)
        .join(".complete")
        .exists()
        .then(|| link.display().to_string())
}

fn install_kernel(dir: &Path, apt: &mut Apt) -> Result<()> {
    let pinned = std::env::var(PACKAGE_ENV).ok().filter(|p| !p.is_empty());
    let package = match &pinned {
        Some(p) => Some(p.clone()),
        None => kernel_package_from_apt().or_else(|| {
            let _ = apt.update();
            kernel_package_from_apt()
        }),
    };
    let Some(package) = package else {
        if let Some(kept) = current_kernel(dir) {
            warn!("apt names no kernel package for linux-image-amd64 (offline?); keeping {kept}");
            return Ok(());
        }
        return Err(Error::msg(
            "cannot tell Debian's current kernel: `apt-cache depends linux-image-amd64` names no \
             linux-image-* package (run apt-get update?)",
        ));
    };
    let abi = kernel_abi(&package)?;
    let name = format!("kernel-{abi}");
    let kdir = dir.join(&name);
    if !kdir.join(".complete").exists() {
        info!("downloading {package}");
        if let Err(e) = fetch_kernel(dir, &package, &abi, apt) {
            if pinned.is_some() {
                return Err(Error::wrap(
                    format!("cannot download {package} ({PACKAGE_ENV}) with apt-get download"),
                    e,
                ));
            }
            if let Some(kept) = current_kernel(dir) {
                warn!("cannot download {package} (offline?): {e}; keeping {kept}");
                return Ok(());
            }
            return Err(Error::wrap(
                format!("cannot download {package} with apt-get download"),
                e,
            ));
        }
    }
    let current = dir.join("current");
    if fs::read_link(&current).ok().as_deref() != Some(Path::new(&name)) {
        // A new link renamed over the old one: `current` is never missing.
        let tmp = dir.join("current.tmp");
        remove_file_if_any(&tmp)?;
        std::os::unix::fs::symlink(&name, &tmp).map_err(|e| Error::io("cannot link", &tmp, e))?;
        fs::rename(&tmp, &current).map_err(|e| Error::io("cannot replace", &current, e))?;
    }
    // Older kernels and interrupted downloads (about 400 MB each).
    let entries = fs::read_dir(dir).map_err(|e| Error::io("cannot list", dir, e))?;
    for entry in entries.filter_map(std::result::Result::ok) {
        let file_name = entry.file_name().to_string_lossy().into_owned();
        if (file_name.starts_with("kernel-") || file_name.starts_with(".fetch."))
            && file_name != name
        {
            remove_all(&entry.path())?;
        }
    }
    Ok(())
}

fn remove_file_if_any(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(Error::io("cannot remove", path, e)),
        _ => Ok(()),
    }
}

/// `apt-get download`, extract, `depmod`, into `<dir>/kernel-<abi>`. The download directory is
/// removed whatever happens.
fn fetch_kernel(dir: &Path, package: &str, abi: &str, apt: &mut Apt) -> Result<()> {
    let tmp = tempfile::Builder::new()
        .prefix(".fetch.")
        .tempdir_in(dir)
        .map_err(|e| Error::io("cannot create a download directory in", dir, e))?;
    // apt-get download drops privileges to _apt and warns when _apt cannot write the directory.
    if let Ok(Some(user)) = nix::unistd::User::from_name("_apt") {
        let _ = nix::unistd::chown(tmp.path(), Some(user.uid), None);
    }
    let download = || {
        let mut cmd = Command::new("apt-get");
        cmd.current_dir(tmp.path())
            .args(["download", "-q", package]);
        cmd
    };
    if !succeeds(&mut download()) {
        let _ = apt.update();
        output_ok(&mut download())?;
    }
    let deb = fs::read_dir(tmp.path())
        .map_err(|e| Error::io("cannot list", tmp.path(), e))?
        .filter_map(std::result::Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .ok_or_else(|| Error::msg(format!("apt-get download {package} left no .deb")))?;
    let deb_name = deb.file_name().unwrap_or_default().to_string_lossy();
    info!("extracting {deb_name}");
    let root = tmp.path().join("root");
    fs::create_dir(&root).map_err(|e| Error::io("cannot create", &root, e))?;
    output_ok(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&root))
        .with_context(|| format!("cannot extract {}", deb.display()))?;
    if !root.join(format!("boot/vmlinuz-{abi}")).is_file()
        || !root.join(format!("lib/modules/{abi}")).is_dir()
    {
        return Err(Error::msg(format!(
            "{deb_name} has no boot/vmlinuz-{abi} or lib/modules/{abi}"
        )));
    }
    let install = || -> Result<()> {
        // Debian's packages leave modules.dep to the postinst: make it (virtme-ng and modprobe
        // need it).
        output_ok(Command::new("depmod").arg("-b").arg(&root).arg(abi))?;
        let mut version_cmd = Command::new("dpkg-deb");
        version_cmd.arg("-f").arg(&deb).arg("Version");
        let version = output_ok(&mut version_cmd)?;
        write(&root.join(".deb-version"), version.as_bytes())?;
        write(
            &root.join(".deb-package"),
            format!("{package}\n").as_bytes(),
        )?;
        let kdir = dir.join(format!("kernel-{abi}"));
        remove_all(&kdir)?;
        fs::rename(&root, &kdir).map_err(|e| Error::io("cannot move the kernel to", &kdir, e))?;
        File::create(kdir.join(".complete"))
            .map_err(|e| Error::io("cannot mark complete", &kdir, e))?;
        Ok(())
    };
    install().with_context(|| {
        format!(
            "cannot install the kernel from {deb_name} under {}",
            dir.display()
        )
    })?;
    Ok(())
}

fn write(path: &Path, content: &[u8]) -> Result<()> {
    fs::write(path, content).map_err(|e| Error::io("cannot write", path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_package_is_the_one_the_metapackage_depends_on() {
        let text = "linux-image-amd64\n  Depends: linux-image-6.1.0-56-amd64\n  \
                    Depends: linux-base\n";
        assert_eq!(
            kernel_package_from_depends(text).as_deref(),
            Some("linux-image-6.1.0-56-amd64")
        );
    }

    #[test]
    fn no_kernel_package_when_apt_names_none() {
        let text = "linux-image-amd64\n  Depends: linux-image-amd64-signed-template\n";
        assert_eq!(kernel_package_from_depends(text), None);
        assert_eq!(kernel_package_from_depends(""), None);
    }

    #[test]
    fn only_debian_12s_61_kernel_is_accepted() {
        assert_eq!(
            kernel_abi("linux-image-6.1.0-56-amd64").ok().as_deref(),
            Some("6.1.0-56-amd64")
        );
        for other in [
            "linux-image-6.12.0-1-amd64",
            "linux-image-6.1.0-56-arm64",
            "6.1.0-56-amd64",
        ] {
            assert!(kernel_abi(other).is_err(), "{other}");
        }
    }

    #[test]
    fn missing_packages_are_those_not_installed() {
        let query = "qemu-system-x86 install ok installed\nkmod deinstall ok config-files\n\
                     busybox-static:amd64 install ok installed\n";
        assert_eq!(
            missing_packages(
                &["qemu-system-x86", "kmod", "busybox-static", "file"],
                query
            ),
            vec!["kmod", "file"]
        );
    }

    #[test]
    fn the_guest_init_carries_its_marker() {
        let text = String::from_utf8_lossy(GUEST_INIT);
        assert!(text.starts_with("#!/bin/busybox sh"));
        assert!(text.contains(GUEST_INIT_MARKER));
    }
}
