//! Today's Kubernetes API for custom resources, on 127.0.0.1 alone: etcd and the apiextensions
//! server that scripts/apiextensions-server builds (Kubernetes 1.36.4's CustomResourceDefinitions,
//! structural schemas, CEL rules, server-side apply and subresources; no core kinds, no
//! controllers, no admission webhooks), with that script's kubectl of the same release. For
//! checking the operator's CRD on a current API server without a cluster.
//!
//! [`ApiExtensions::start`] starts both on free ports under a temporary directory; dropping it
//! stops the two processes by pid and removes the directory.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::daemon::{run, run_with_stdin, tail, wait_for, Daemon};
use crate::pki;

/// The release scripts/apiextensions-server builds.
pub const VERSION: &str = "v1.36.4";

pub struct ApiExtensions {
    base: PathBuf,
    kubeconfig: PathBuf,
    kubectl: PathBuf,
    /// The server, then etcd: stopped in this order.
    daemons: Vec<Daemon>,
    ready_after: Duration,
}

/// The server binary scripts/apiextensions-server built for the current main.go (and beside it
/// etcd and kubectl), or an error that says to run the script.
pub fn server_bin() -> Result<PathBuf> {
    let script = crate::repo().join("scripts/apiextensions-server");
    let out = run(Command::new("bash").arg(&script).arg("--print")).map_err(|e| {
        anyhow::anyhow!(
            "the apiextensions server {VERSION} is not built: run scripts/apiextensions-server \
             (as root; it fetches Debian's packages and builds once, then caches the result)\n{e:#}"
        )
    })?;
    Ok(PathBuf::from(out.trim()))
}

impl ApiExtensions {
    /// Starts etcd and the server and waits until the server is ready.
    pub fn start() -> Result<ApiExtensions> {
        let server = server_bin()?;
        let bin = server.parent().context("the server's directory")?;
        let base = tempdir()?;
        let mut api = ApiExtensions {
            kubeconfig: base.join("admin.kubeconfig"),
            kubectl: bin.join("kubectl"),
            base,
            daemons: Vec::new(),
            ready_after: Duration::ZERO,
        };
        // From here on a failure drops `api`, which stops what was started.
        api.boot(&server, &bin.join("etcd"))?;
        Ok(api)
    }

    fn boot(&mut self, server: &Path, etcd_bin: &Path) -> Result<()> {
        let logs = self.base.join("logs");
        std::fs::create_dir_all(&logs)?;
        let pki = pki::create(&self.base.join("pki"))?;
        let (cert, key) = client_cert(&pki, &self.base.join("pki"))?;
        let [etcd_client, etcd_peer, port] = free_ports()?;

        let etcd_url = format!("http://127.0.0.1:{etcd_client}");
        let peer_url = format!("http://127.0.0.1:{etcd_peer}");
        let mut etcd = Command::new(etcd_bin);
        etcd.arg("--data-dir")
            .arg(self.base.join("etcd"))
            .args(["--listen-client-urls", &etcd_url])
            .args(["--advertise-client-urls", &etcd_url])
            .args(["--listen-peer-urls", &peer_url])
            .args(["--initial-advertise-peer-urls", &peer_url])
            .args(["--initial-cluster", &format!("default={peer_url}")])
            .args(["--log-level", "warn"]);
        self.daemons.push(Daemon::spawn("etcd", etcd, &logs)?);
        wait_for("etcd to listen", Duration::from_secs(30), || {
            self.check_running()?;
            Ok(std::net::TcpStream::connect(("127.0.0.1", etcd_client))
                .ok()
                .map(drop))
        })?;

        let server_url = format!("https://127.0.0.1:{port}");
        std::fs::write(&self.kubeconfig, kubeconfig(&pki, &cert, &key, &server_url))?;
        let started = Instant::now();
        let mut cmd = Command::new(server);
        // Whatever it writes relative to its working directory stays under `base`.
        cmd.current_dir(&self.base)
            .args(["--etcd-servers", &etcd_url])
            .args(["--bind-address", "127.0.0.1"])
            .arg(format!("--secure-port={port}"))
            .arg("--tls-cert-file")
            .arg(&pki.apiserver_cert)
            .arg("--tls-private-key-file")
            .arg(&pki.apiserver_key)
            .arg("--client-ca-file")
            .arg(&pki.ca_cert)
            // Read for the core API's informers, which the server drops (see its main.go).
            .arg("--kubeconfig")
            .arg(&self.kubeconfig);
        self.daemons
            .insert(0, Daemon::spawn("apiextensions-server", cmd, &logs)?);
        wait_for(
            "the apiextensions server to be ready",
            Duration::from_secs(60),
            || {
                self.check_running()?;
                Ok(self.kubectl(&["get", "--raw", "/readyz"]).ok().map(drop))
            },
        )?;
        self.ready_after = started.elapsed();
        Ok(())
    }

    /// How long the server took from its start to ready (`/readyz`).
    pub fn ready_after(&self) -> Duration {
        self.ready_after
    }

    /// Fails, with the end of its log, when etcd or the server has exited.
    pub fn check_running(&mut self) -> Result<()> {
        for d in &mut self.daemons {
            d.check_running()?;
        }
        Ok(())
    }

    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    pub fn kubectl_path(&self) -> &Path {
        &self.kubectl
    }

    fn kubectl_command(&self) -> Command {
        let mut cmd = Command::new(&self.kubectl);
        // The discovery and HTTP caches, by default under ~/.kube/cache.
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.base.join("kubectl-cache"));
        cmd
    }

    /// `kubectl ARGS`: its stdout, or an error with its stderr.
    pub fn kubectl(&self, args: &[&str]) -> Result<String> {
        run(self.kubectl_command().args(args))
    }

    /// `kubectl ARGS` with `input` on stdin (`apply -f -`).
    pub fn kubectl_stdin(&self, args: &[&str], input: &str) -> Result<String> {
        run_with_stdin(self.kubectl_command().args(args), input.as_bytes())
    }

    /// The end of the server's log.
    pub fn server_log_tail(&self, lines: usize) -> String {
        tail(&self.base.join("logs/apiextensions-server.log"), lines)
    }

    /// Stops the server, then etcd, and removes the temporary directory. Idempotent.
    pub fn stop(&mut self) -> Result<()> {
        for mut d in self.daemons.drain(..) {
            d.stop(Duration::from_secs(10));
        }
        match std::fs::remove_dir_all(&self.base) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("remove {}", self.base.display()))
            }
            _ => Ok(()),
        }
    }
}

impl Drop for ApiExtensions {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            eprintln!("apiextensions: teardown: {e:#}");
        }
    }
}

/// A new private directory under the system's temporary directory.
fn tempdir() -> Result<PathBuf> {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("apiextensions-{}-{n}", std::process::id()));
    std::fs::create_dir(&dir).with_context(|| format!("create {}", dir.display()))?;
    Ok(dir)
}

/// Ports nothing listens on now, on 127.0.0.1 (all held until all are chosen, so they differ).
fn free_ports<const N: usize>() -> Result<[u16; N]> {
    let listeners = (0..N)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()?;
    let mut ports = [0; N];
    for (port, l) in ports.iter_mut().zip(&listeners) {
        *port = l.local_addr()?.port();
    }
    Ok(ports)
}

/// A client certificate in `system:masters`, signed by the cluster CA: the server delegates
/// nothing, so only certificates authenticate, and only that group may do everything.
fn client_cert(pki: &pki::Pki, dir: &Path) -> Result<(PathBuf, PathBuf)> {
    let (cert, key, csr, ext) = (
        dir.join("admin.crt"),
        dir.join("admin.key"),
        dir.join("admin.csr"),
        dir.join("admin.ext"),
    );
    let mut req = Command::new("openssl");
    req.args(["req", "-newkey", "rsa:2048", "-nodes"])
        .args(["-subj", "/O=system:masters/CN=admin", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&csr);
    run(&mut req)?;
    std::fs::write(&ext, "extendedKeyUsage=clientAuth\n")?;
    let mut sign = Command::new("openssl");
    sign.args(["x509", "-req", "-in"])
        .arg(&csr)
        .arg("-CA")
        .arg(&pki.ca_cert)
        .arg("-CAkey")
        .arg(&pki.ca_key)
        .args(["-CAcreateserial", "-days", "2", "-extfile"])
        .arg(&ext)
        .arg("-out")
        .arg(&cert);
    run(&mut sign)?;
    Ok((cert, key))
}

fn kubeconfig(pki: &pki::Pki, cert: &Path, key: &Path, server: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: apiextensions\n  cluster:\n    server: {server}\n    \
         certificate-authority: {ca}\nusers:\n- name: admin\n  user:\n    client-certificate: {cert}\n    \
         client-key: {key}\ncontexts:\n- name: apiextensions\n  context:\n    cluster: apiextensions\n    \
         user: admin\ncurrent-context: apiextensions\n",
        ca = pki.ca_cert.display(),
        cert = cert.display(),
        key = key.display(),
    )
}
