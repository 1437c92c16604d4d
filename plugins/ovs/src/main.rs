use std::process::ExitCode;

fn main() -> ExitCode {
    cni_common::skel::run(&ovs::Ovs, ovs::ABOUT)
}
