use clap::Parser;
use kubemacpool::cli::{Cli, Command};

/// On a failure, anyhow's `Debug` prints the error and then each of its causes on a line.
fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        match cli.command {
            Command::Manager(args) => kubemacpool::manager::run(args).await,
            Command::CertManager(_) => kubemacpool::manager::run_cert_manager().await,
        }
    })?;
    Ok(())
}
