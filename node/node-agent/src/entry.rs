//! The process: logging, the command line, the exit code. The `node-agent` binary is this
//! function, and so is the image's one binary when it runs as `/node-agent`.

use std::error::Error as StdError;
use std::io::Write;
use std::process::ExitCode;

use nmstate_handler as nmstate;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::cli::{self, Command, NODE_NAME_ENV};
use crate::{gc, install, probe, run, uninstall};

/// Runs the command the arguments name; a failure is logged with its causes on one line.
pub fn main() -> ExitCode {
    // Plain lines on stderr: the kubelet keeps them, with its own timestamps. The libraries
    // (the Kubernetes client, TLS) only speak up about what went wrong.
    let only_ours = Targets::new()
        .with_target("node_agent", LevelFilter::INFO)
        .with_target("agent_runtime", LevelFilter::INFO)
        .with_target("nmstate_handler", LevelFilter::INFO)
        .with_default(LevelFilter::WARN);
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .without_time()
        .with_target(false)
        .finish()
        .with(only_ours)
        .init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let node_name = std::env::var(NODE_NAME_ENV).ok();
    let command = match cli::parse(&args, node_name.as_deref()) {
        Ok(command) => command,
        Err(e) => return failed(&e),
    };
    // Each logs what it did.
    match command {
        Command::Help(text) => exited(std::io::stdout().write_all(text.as_bytes())),
        Command::Install(opts) => exited(install::install(&opts)),
        Command::Uninstall(opts) => exited(uninstall::uninstall(&opts)),
        Command::Probe(opts) => exited(probe::probe(&opts)),
        Command::Run(opts) => exited(run::run(&opts)),
        Command::Gc(opts) => match gc::round::collect_once(&opts) {
            Ok(report) if !report.failures.is_empty() => {
                tracing::error!("{} GC(s) failed", report.failures.len());
                ExitCode::FAILURE
            }
            outcome => exited(outcome),
        },
        Command::Nmstate(opts) => exited(nmstate::run(&opts)),
        Command::NmstateReady(dir) => exited(nmstate::ready(&dir)),
    }
}

fn exited<T, E: StdError + 'static>(outcome: Result<T, E>) -> ExitCode {
    match outcome {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => failed(&e),
    }
}

fn failed(e: &(dyn StdError + 'static)) -> ExitCode {
    tracing::error!("{}", error_context::report(e));
    ExitCode::FAILURE
}
