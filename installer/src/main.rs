//! `cni-installer`: see `cni-installer help` and installer/README.md.

use std::process::ExitCode;

use cni_installer::cli::{self, Command, NODE_NAME_ENV};
use cni_installer::uninstall::Action;
use cni_installer::{install, print_install_report, probe, run, uninstall, Result};

fn log(line: &str) {
    eprintln!("cni-installer: {line}");
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let node_name = std::env::var(NODE_NAME_ENV).ok();
    match cli::parse(&args, node_name.as_deref()).and_then(execute) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            log(&format!("error: {e}"));
            ExitCode::FAILURE
        }
    }
}

fn execute(command: Command) -> Result<()> {
    match command {
        Command::Help => print!("{}", cli::USAGE),
        Command::Install(opts) => print_install_report(&install::install(&opts)?, &log),
        Command::Uninstall(opts) => {
            let report = uninstall::uninstall(&opts)?;
            for name in &report.swept {
                log(&format!("removed {name}, left by an interrupted install"));
            }
            for (name, action) in &report.plugins {
                log(&match action {
                    Action::Removed => format!("{name}: removed"),
                    Action::Restored { original } => format!("{name}: {original} put back"),
                    Action::KeptChanged { now, original_left } => format!(
                        "{name}: kept, changed since it was installed ({now}){}",
                        original_left
                            .as_ref()
                            .map(|o| format!("; {o} left in place"))
                            .unwrap_or_default()
                    ),
                    Action::Missing => format!("{name}: already gone"),
                    Action::NotOurs => {
                        format!("{name}: not installed by cni-installer, left alone")
                    }
                });
            }
        }
        Command::Probe(opts) => {
            probe::probe(&opts)?;
        }
        Command::Run(opts) => run::run(&opts, &log)?,
    }
    Ok(())
}
