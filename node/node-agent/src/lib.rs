//! The node agent, every DaemonSet's entry point: `node-agent` puts the plugin binaries on the
//! node without ever exposing a half-written or missing file, never overwrites files it did not
//! install, reports readiness, (optionally) publishes the node's bridges as extended resources,
//! collects what lost DELs left, and runs kubernetes-nmstate's handler.

pub mod atomic;
pub mod bridges;
pub mod cli;
pub mod cri;
pub mod digest;
pub mod entry;
pub mod error;
pub mod gc;
pub mod install;
pub mod marker;
pub mod metrics;
pub mod node;
pub mod probe;
pub mod record;
pub mod run;
pub mod uninstall;
pub mod verify;

pub use error::{Context, Error, Result};

#[cfg(test)]
mod tests {
    use std::io;

    #[test]
    fn a_shared_error_reads_as_it_did_in_the_shared_crate() {
        let locking = agent_runtime::Error::wrap(
            "locking /run/kubernetes-nmstate",
            io::Error::from_raw_os_error(libc::EBADF),
        );
        let shared = agent_runtime::Error::wrap("starting", locking);
        let text = shared.report();
        assert_eq!(crate::Error::from(shared).report(), text);
    }
}
