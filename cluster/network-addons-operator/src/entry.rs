//! The process: logging for `run`, the command line, the exit code. The
//! `network-addons-operator` binary is this function, and so is the image's one binary when it
//! runs as `/network-addons-operator`.

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

/// Parses the arguments and carries out the command: `run` logs (and logs how it stopped), the
/// others print their output, or their error on stderr.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let running = matches!(cli.command, Command::Run { .. });
    if running {
        init_logging();
    }
    match cli.execute() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if running => {
            tracing::error!(error = ?e.to_string(), "stopped");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("network-addons-operator: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Structured logs on stderr, at the level `RUST_LOG` sets (`info` when unset or invalid).
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
}
