//! The cluster's credentials, made with openssl: a CA, the API server's serving certificate (for
//! 127.0.0.1, the control plane's address on the cluster bridge, which the kubelets reach, and
//! the `kubernetes` Service, which pods reach), the service-account signing key
//! pair and a static admin token.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Result;

use crate::daemon::run;

pub struct Pki {
    pub ca_cert: PathBuf,
    pub ca_key: PathBuf,
    pub apiserver_cert: PathBuf,
    pub apiserver_key: PathBuf,
    pub sa_key: PathBuf,
    pub sa_pub: PathBuf,
    pub token_file: PathBuf,
    pub admin_token: String,
}

/// Subject alternative names of the API server's certificate.
const APISERVER_SANS: &str =
    "IP:127.0.0.1,IP:172.31.255.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,\
DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local";

pub fn create(dir: &Path) -> Result<Pki> {
    std::fs::create_dir_all(dir)?;
    let p = |name: &str| dir.join(name);
    let pki = Pki {
        ca_cert: p("ca.crt"),
        ca_key: p("ca.key"),
        apiserver_cert: p("apiserver.crt"),
        apiserver_key: p("apiserver.key"),
        sa_key: p("sa.key"),
        sa_pub: p("sa.pub"),
        token_file: p("tokens.csv"),
        admin_token: random_token()?,
    };
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=kube-tier-ca",
        "-keyout",
        s(&pki.ca_key),
        "-out",
        s(&pki.ca_cert),
    ])?;
    let csr = p("apiserver.csr");
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=kube-apiserver",
        "-keyout",
        s(&pki.apiserver_key),
        "-out",
        s(&csr),
    ])?;
    let ext = p("apiserver.ext");
    std::fs::write(
        &ext,
        format!("subjectAltName={APISERVER_SANS}\nextendedKeyUsage=serverAuth\n"),
    )?;
    openssl(&[
        "x509",
        "-req",
        "-in",
        s(&csr),
        "-CA",
        s(&pki.ca_cert),
        "-CAkey",
        s(&pki.ca_key),
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        s(&ext),
        "-out",
        s(&pki.apiserver_cert),
    ])?;
    openssl(&["genrsa", "-out", s(&pki.sa_key), "2048"])?;
    openssl(&[
        "rsa",
        "-in",
        s(&pki.sa_key),
        "-pubout",
        "-out",
        s(&pki.sa_pub),
    ])?;
    std::fs::write(
        &pki.token_file,
        format!("{},admin,admin,system:masters\n", pki.admin_token),
    )?;
    Ok(pki)
}

/// A kubeconfig for the admin token against `server`.
pub fn kubeconfig(pki: &Pki, server: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kube-tier\n  cluster:\n    server: {server}\n    \
         certificate-authority: {ca}\nusers:\n- name: admin\n  user:\n    token: {token}\n\
         contexts:\n- name: kube-tier\n  context:\n    cluster: kube-tier\n    user: admin\n\
         current-context: kube-tier\n",
        ca = pki.ca_cert.display(),
        token = pki.admin_token,
    )
}

fn openssl(args: &[&str]) -> Result<()> {
    run(Command::new("openssl").args(args))?;
    Ok(())
}

fn random_token() -> Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap_or_default()
}
