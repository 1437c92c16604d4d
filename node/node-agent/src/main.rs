//! `node-agent`: see `node-agent help` and node/node-agent/README.md.

fn main() -> std::process::ExitCode {
    node_agent::entry::main()
}
