//! `network-addons-operator run | render | crd | deploy`: see [`cli`].

use std::process::ExitCode;

use clap::Parser;
use network_addons_operator::cli::{self, Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let running = matches!(cli.command, Command::Run { .. });
    if running {
        cli::init_logging();
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
