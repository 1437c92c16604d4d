//! `network-addons-operator run | render | crd | deploy`: see [`cli`](network_addons_operator::cli).

fn main() -> std::process::ExitCode {
    network_addons_operator::entry::main()
}
