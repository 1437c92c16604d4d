//! The process: logging, the command line, the exit code. The `kubemacpool` binary is this
//! function, and so is the image's one binary when it runs as `/kubemacpool`.

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::error::{Context, Result};
use crate::manager;

/// Parses the arguments and runs the command on a two-thread runtime; a failure is logged with
/// its causes on one line.
pub fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    match execute(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{}", error_context::report(&e));
            ExitCode::FAILURE
        }
    }
}

fn execute(cli: Cli) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(async move {
        match cli.command {
            Command::Manager(args) => manager::run(args).await,
            Command::CertManager(_) => manager::run_cert_manager().await,
        }
    })
}
