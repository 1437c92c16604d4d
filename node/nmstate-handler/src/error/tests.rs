//! The handler's error on one line, one behaviour each.

use super::*;
use error_context::report;

#[test]
fn a_failure_reads_outermost_first_on_one_line() {
    let missing: std::result::Result<(), std::io::Error> =
        Err(std::io::Error::from_raw_os_error(libc::ENOENT));
    let err = missing
        .context("creating /run/kubernetes-nmstate")
        .expect_err("an error");
    assert_eq!(
        report(&err),
        "creating /run/kubernetes-nmstate: No such file or directory (os error 2)"
    );
}

#[test]
fn the_node_agents_shared_error_keeps_its_text() {
    let locking: std::result::Result<(), std::io::Error> =
        Err(std::io::Error::from_raw_os_error(libc::EWOULDBLOCK));
    let shared = agent_runtime::Context::context(locking, "locked by another handler")
        .expect_err("an error");
    assert_eq!(
        report(&Error::from(shared)),
        "locked by another handler: Resource temporarily unavailable (os error 11)"
    );
}
