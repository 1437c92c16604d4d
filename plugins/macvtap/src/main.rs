use std::process::ExitCode;

fn main() -> ExitCode {
    cni_common::skel::run(&macvtap::Macvtap, macvtap::ABOUT)
}
