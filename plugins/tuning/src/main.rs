use std::process::ExitCode;

fn main() -> ExitCode {
    cni_common::skel::run(&tuning::Tuning, tuning::ABOUT)
}
