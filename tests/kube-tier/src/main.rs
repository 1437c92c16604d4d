//! `kube-tier up|kubectl|exec|down`: see [`kube_tier::cli`].

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    kube_tier::cli::main(&args)
}
