//! `node-agent`: see `node-agent help` and node/node-agent/README.md.

use std::io::Write;
use std::process::ExitCode;

use nmstate_handler as nmstate;
use node_agent::cli::{self, Command, NODE_NAME_ENV};
use node_agent::{gc, install, probe, run, uninstall};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

fn main() -> ExitCode {
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
    match execute() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{}", error_context::report(e.as_ref()));
            ExitCode::FAILURE
        }
    }
}

fn execute() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let node_name = std::env::var(NODE_NAME_ENV).ok();
    match cli::parse(&args, node_name.as_deref())? {
        Command::Help(text) => std::io::stdout().write_all(text.as_bytes())?,
        // Each logs what it did.
        Command::Install(opts) => {
            install::install(&opts)?;
        }
        Command::Uninstall(opts) => {
            uninstall::uninstall(&opts)?;
        }
        Command::Probe(opts) => {
            probe::probe(&opts)?;
        }
        Command::Run(opts) => run::run(&opts)?,
        Command::Gc(opts) => {
            let report = gc::round::collect_once(&opts)?;
            if !report.failures.is_empty() {
                anyhow::bail!("{} GC(s) failed", report.failures.len());
            }
        }
        Command::Nmstate(opts) => nmstate::run(&opts)?,
        Command::NmstateReady(dir) => nmstate::ready(&dir)?,
    }
    Ok(())
}
