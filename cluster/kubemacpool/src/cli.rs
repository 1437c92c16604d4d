//! The command line: `kubemacpool manager` and `kubemacpool cert-manager`, with upstream's flag
//! names where they exist.

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "kubemacpool",
    version,
    about = "KubeMacPool compatible MAC allocator"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serves the mutating webhooks that hand out MACs (POD_NAMESPACE, POD_NAME, and the range
    /// in RANGE_START and RANGE_END until the ConfigMap kubemacpool-mac-range-config says).
    Manager(ManagerArgs),
    /// Keeps the webhook's CA and serving certificate and the caBundle (CA_ROTATE_INTERVAL,
    /// CA_OVERLAP_INTERVAL, CERT_ROTATE_INTERVAL, CERT_OVERLAP_INTERVAL).
    CertManager(CommonArgs),
}

#[derive(Debug, clap::Args)]
pub struct CommonArgs {
    /// Upstream's log level flag, accepted and ignored: RUST_LOG sets the level.
    #[arg(long = "v", default_value = "production")]
    pub verbosity: String,
}

#[derive(Debug, clap::Args)]
pub struct ManagerArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Seconds a MAC handed out stays held when its object is never stored (a failed create).
    #[arg(long, default_value_t = 30)]
    pub wait_time: u64,
    /// The lowest TLS version served: VersionTLS12 or VersionTLS13.
    #[arg(long)]
    pub tls_min_version: Option<String>,
    /// TLS 1.2 cipher suites, by their IANA names, comma separated.
    #[arg(long)]
    pub tls_cipher_suites: Option<String>,
    /// The webhook's port (HTTPS).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// The metrics port (HTTPS): /metrics, to a bearer token allowed to `get` the non-resource
    /// URL /metrics.
    #[arg(long, default_value_t = 8443)]
    pub metrics_port: u16,
}
