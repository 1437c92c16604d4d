//! Images: a real registry (Debian's docker-registry) on the control plane's address, which
//! containerd knows as the registry `localhost`, so the image names in deploy/
//! (`localhost/secondary-cni/plugins:v…`) resolve unchanged and `imagePullPolicy: Always` works.
//! Images are built with buildah from a Containerfile (ours, unchanged, for the project's image)
//! and pushed with skopeo.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::daemon::{run, wait_for, Daemon};

pub const REGISTRY_ADDR: &str = "172.31.255.1:5000";
/// The registry's name in image references.
pub const REGISTRY_NAME: &str = "localhost";
/// A static busybox: the sandbox ("pause") image and the test pods' image.
pub const BUSYBOX_IMAGE: &str = "localhost/kube-tier/busybox:1";
/// Multus v4.3.0's thick image, built from its source (scripts/multus): what the operator
/// deploys when `MULTUS_IMAGE` names it.
pub const MULTUS_IMAGE: &str = "localhost/k8snetworkplumbingwg/multus-cni:v4.3.0-thick";
/// Where upstream's thick image keeps the binaries (images/Dockerfile.thick), the paths the
/// operator's DaemonSet runs.
const MULTUS_IMAGE_DIR: &str = "usr/src/multus-cni";

pub fn start_registry(dir: &Path, logs: &Path) -> Result<Daemon> {
    std::fs::create_dir_all(dir.join("storage"))?;
    let config = dir.join("config.yml");
    std::fs::write(
        &config,
        format!(
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\n\
             http:\n  addr: {REGISTRY_ADDR}\n",
            dir.join("storage").display()
        ),
    )?;
    let mut cmd = Command::new("docker-registry");
    cmd.arg("serve").arg(&config);
    let daemon = Daemon::spawn("registry", cmd, logs)?;
    wait_for("the registry to listen", Duration::from_secs(20), || {
        Ok(std::net::TcpStream::connect(REGISTRY_ADDR).ok().map(drop))
    })?;
    Ok(daemon)
}

/// Builds images with buildah in a private store (vfs: no mounts to clean up).
pub struct Builder {
    root: PathBuf,
}

impl Builder {
    pub fn new(dir: &Path) -> Result<Builder> {
        let builder = Builder {
            root: dir.to_path_buf(),
        };
        builder.write_containers_conf()?;
        Ok(builder)
    }

    fn buildah(&self) -> Command {
        let mut cmd = Command::new("buildah");
        // buildah sets up its CNI network even for a build without RUN steps, and would make
        // /etc/cni/net.d/cni.lock on the host: its network config lives here instead.
        cmd.env("CONTAINERS_CONF", self.containers_conf());
        cmd.arg("--root")
            .arg(self.root.join("root"))
            .arg("--runroot")
            .arg(self.root.join("run"))
            .args(["--storage-driver", "vfs"]);
        cmd
    }

    /// A containers.conf of the builder's own, naming a CNI config directory inside it.
    fn containers_conf(&self) -> PathBuf {
        self.root.join("containers.conf")
    }

    /// Writes [`Builder::containers_conf`]: before the first build, so that no buildah run
    /// falls back to the host's `/etc/cni`.
    fn write_containers_conf(&self) -> Result<()> {
        let cni = self.root.join("cni");
        std::fs::create_dir_all(&cni)?;
        std::fs::write(
            self.containers_conf(),
            format!("[network]\nnetwork_config_dir = \"{}\"\n", cni.display()),
        )
        .with_context(|| format!("write {}", self.containers_conf().display()))
    }

    /// `buildah bud -f <containerfile> -t <tag> <context>`, then pushed to the registry.
    pub fn build_and_push(&self, containerfile: &Path, context: &Path, tag: &str) -> Result<()> {
        run(self
            .buildah()
            .args(["bud", "--quiet", "--layers=false", "-f"])
            .arg(containerfile)
            .args(["-t", tag])
            .arg(context))
        .with_context(|| format!("build {tag} from {}", containerfile.display()))?;
        let archive = self
            .root
            .join(format!("{}.tar", tag.replace(['/', ':'], "_")));
        let _ = std::fs::remove_file(&archive);
        run(self
            .buildah()
            .args(["push", "--quiet", tag])
            .arg(format!("oci-archive:{}", archive.display())))?;
        push(&archive, tag)?;
        std::fs::remove_file(&archive)?;
        Ok(())
    }

    /// One image per platform of `platforms` (`linux/amd64`, ...) from the Containerfile, put
    /// together under `tag` as a multi-architecture index (an OCI image index), and pushed to
    /// the registry with every image it lists.
    pub fn build_index_and_push(
        &self,
        containerfile: &Path,
        context: &Path,
        tag: &str,
        platforms: &[&str],
    ) -> Result<()> {
        // a list of that name from an earlier build would gather this build's images too
        let _ = run(self.buildah().args(["manifest", "rm", tag]));
        run(self
            .buildah()
            .args(["bud", "--quiet", "--layers=false", "--platform"])
            .arg(platforms.join(","))
            .args(["--manifest", tag, "-f"])
            .arg(containerfile)
            .arg(context))
        .with_context(|| {
            format!(
                "build {tag} for {} from {}",
                platforms.join(", "),
                containerfile.display()
            )
        })?;
        run(self
            .buildah()
            .args([
                "manifest",
                "push",
                "--quiet",
                "--all",
                "--tls-verify=false",
                tag,
            ])
            .arg(format!("docker://{REGISTRY_ADDR}/{}", registry_path(tag))))
        .with_context(|| format!("push the index {tag}"))?;
        Ok(())
    }

    /// The busybox image: `/bin/busybox` with its applets linked, running `sleep` by default.
    pub fn busybox(&self, work: &Path) -> Result<()> {
        let ctx = work.join("busybox-context");
        let bin = ctx.join("root/bin");
        std::fs::create_dir_all(&bin)?;
        std::fs::copy("/bin/busybox", bin.join("busybox")).context("copy /bin/busybox")?;
        for applet in [
            "sh", "sleep", "ping", "ip", "cat", "ls", "wget", "nc", "true",
        ] {
            let link = bin.join(applet);
            if !link.exists() {
                std::os::unix::fs::symlink("busybox", link)?;
            }
        }
        let containerfile = ctx.join("Containerfile");
        std::fs::write(
            &containerfile,
            "FROM scratch\nCOPY root/ /\nENTRYPOINT [\"/bin/sleep\", \"2147483647\"]\n",
        )?;
        self.build_and_push(&containerfile, &ctx, BUSYBOX_IMAGE)
    }

    /// Multus' thick image from the binaries in `bin` (scripts/multus), laid out as upstream's:
    /// the binaries in `/usr/src/multus-cni/bin`, its license beside them, `cert-approver` also
    /// at `/`, `multus-daemon` the entrypoint. The binaries are static: of upstream's Debian
    /// base they need only `/etc/passwd`, `/etc/group` and `/var/run` (a link to `/run`).
    pub fn multus(&self, work: &Path, bin: &Path) -> Result<()> {
        let ctx = work.join("multus-context");
        let dir = ctx.join("root").join(MULTUS_IMAGE_DIR);
        std::fs::create_dir_all(dir.join("bin"))?;
        for name in MULTUS_BINARIES {
            std::fs::copy(bin.join(name), dir.join("bin").join(name))
                .with_context(|| format!("copy {} (scripts/multus)", bin.join(name).display()))?;
        }
        std::fs::copy(bin.join("LICENSE"), dir.join("LICENSE"))
            .with_context(|| format!("copy {}", bin.join("LICENSE").display()))?;
        std::fs::copy(bin.join("cert-approver"), ctx.join("root/cert-approver"))?;
        // What the binaries need of upstream's Debian base: multus-daemon asks os/user who runs
        // it, which (built without cgo) reads /etc/passwd, and dies on a nil user without one;
        // it finds the sandboxes' namespaces under /var/run/netns, where the DaemonSet mounts
        // the host's /run/netns at /run/netns: Debian's /var/run is a link to /run.
        std::fs::create_dir_all(ctx.join("root/etc"))?;
        std::fs::write(
            ctx.join("root/etc/passwd"),
            "root:x:0:0:root:/root:/sbin/nologin\n",
        )?;
        std::fs::write(ctx.join("root/etc/group"), "root:x:0:\n")?;
        std::fs::create_dir_all(ctx.join("root/var"))?;
        let var_run = ctx.join("root/var/run");
        if std::fs::symlink_metadata(&var_run).is_err() {
            std::os::unix::fs::symlink("../run", &var_run)?;
        }
        let containerfile = ctx.join("Containerfile");
        std::fs::write(
            &containerfile,
            format!(
                "FROM scratch\nCOPY root/ /\nENTRYPOINT [\"/{MULTUS_IMAGE_DIR}/bin/multus-daemon\"]\n"
            ),
        )?;
        self.build_and_push(&containerfile, &ctx, MULTUS_IMAGE)
    }
}

/// What scripts/multus builds, as the thick image carries it.
const MULTUS_BINARIES: &[&str] = &[
    "multus",
    "multus-daemon",
    "multus-shim",
    "install_multus",
    "thin_entrypoint",
    "kubeconfig_generator",
    "cert-approver",
    "passthru",
];

/// The directory of Multus' binaries: `MULTUS_BIN_DIR` (scripts/test sets it), or the cached
/// build that `scripts/multus --print` names.
pub fn multus_bin_dir(repo: &Path) -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("MULTUS_BIN_DIR") {
        return Ok(PathBuf::from(dir));
    }
    let out = Command::new(repo.join("scripts/multus"))
        .arg("--print")
        .output()
        .context("run scripts/multus --print")?;
    if !out.status.success() {
        anyhow::bail!(
            "no Multus build for the cluster's Multus image: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// `skopeo copy` of an OCI archive to the registry, under the image's name without `localhost/`.
fn push(archive: &Path, tag: &str) -> Result<()> {
    let path = registry_path(tag);
    run(Command::new("skopeo")
        .args(["copy", "--quiet", "--dest-tls-verify=false"])
        .arg(format!("oci-archive:{}", archive.display()))
        .arg(format!("docker://{REGISTRY_ADDR}/{path}")))
    .with_context(|| format!("push {tag}"))?;
    Ok(())
}

/// The image's name in the registry: without `localhost/`.
fn registry_path(tag: &str) -> &str {
    tag.strip_prefix(&format!("{REGISTRY_NAME}/"))
        .unwrap_or(tag)
}
