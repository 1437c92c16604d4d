use std::process::ExitCode;

fn main() -> ExitCode {
    cni_common::skel::run(&bridge::Bridge, bridge::ABOUT)
}
