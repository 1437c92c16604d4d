//! `kubemacpool manager | cert-manager`: see [`cli`](kubemacpool::cli).

fn main() -> std::process::ExitCode {
    kubemacpool::entry::main()
}
