//! The image's daemons in one binary: `/node-agent` (and `/cni-installer`, its old name),
//! `/network-addons-operator` and `/kubemacpool` are hard links to it, and the name it runs under
//! says which daemon it is. One binary rather than three because the three share most of their
//! code (the Kubernetes client, tokio, rustls, serde): one link optimises it once, in a third of
//! the time, and the image carries it once.

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let argv0 = std::env::args_os().next().unwrap_or_default();
    let name = Path::new(&argv0)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    match Daemon::named(name) {
        Some(daemon) => daemon.main(),
        None => {
            eprintln!(
                "daemons: run as one of {} (a link to this file), not as {name:?}",
                NAMES.join(", ")
            );
            ExitCode::from(2)
        }
    }
}

/// The names the image gives this file.
const NAMES: [&str; 4] = [
    "node-agent",
    "cni-installer",
    "network-addons-operator",
    "kubemacpool",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Daemon {
    NodeAgent,
    Operator,
    KubeMacPool,
}

impl Daemon {
    /// The daemon a file name runs.
    fn named(name: &str) -> Option<Daemon> {
        match name {
            "node-agent" | "cni-installer" => Some(Daemon::NodeAgent),
            "network-addons-operator" => Some(Daemon::Operator),
            "kubemacpool" => Some(Daemon::KubeMacPool),
            _ => None,
        }
    }

    fn main(self) -> ExitCode {
        match self {
            Daemon::NodeAgent => node_agent::entry::main(),
            Daemon::Operator => network_addons_operator::entry::main(),
            Daemon::KubeMacPool => kubemacpool::entry::main(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_name_the_image_gives_runs_its_daemon() {
        let daemons = NAMES.map(Daemon::named);
        assert_eq!(
            daemons,
            [
                Some(Daemon::NodeAgent),
                Some(Daemon::NodeAgent),
                Some(Daemon::Operator),
                Some(Daemon::KubeMacPool)
            ]
        );
    }

    #[test]
    fn another_name_runs_nothing() {
        for name in ["daemons", "", "node-agent.old", "bridge"] {
            assert_eq!(Daemon::named(name), None, "{name}");
        }
    }
}
