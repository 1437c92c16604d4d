//! cni-conformance: a black-box conformance suite for CNI plugin binaries.
//!
//! It calls a plugin exactly as a runtime does (CNI_* environment, JSON on
//! stdin, stdout and exit status read back), always inside throwaway network
//! namespaces it creates and deletes itself, and prints one PASS/FAIL/SKIP
//! line per check followed by the totals. See README.md.

mod checks;
mod cli;
mod error;
mod host_local;
mod invoke;
mod netns;
mod reply;
mod report;
mod request;
mod sandbox;
mod suite;
mod validate;

use clap::Parser;
use cli::Cli;
use std::process::ExitCode;
use suite::{Options, Suite};

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose);
    let options = cli.into_options().unwrap_or_else(|e| e.exit());
    match run(options) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("cni-conformance: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Runs the suite; whether every check passed. An error means it could not run at all.
fn run(options: Options) -> anyhow::Result<bool> {
    suite::preflight(&options)?;
    sandbox::remove_stale();
    let (summary, ok) = Suite::new(options).run();
    println!("{summary}");
    Ok(ok)
}

/// Logs go to stderr; stdout is the report. `--verbose` adds every invocation.
fn init_logging(verbose: bool) {
    let level = if verbose {
        tracing::Level::DEBUG
    } else {
        tracing::Level::INFO
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .with_target(false)
        .without_time()
        .init();
}
