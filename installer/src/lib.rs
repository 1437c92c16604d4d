//! The DaemonSet side of the plugins: `cni-installer` puts the binaries on the node without
//! ever exposing a half-written or missing file, never overwrites files it did not install,
//! reports readiness, and (optionally) publishes the node's bridges as extended resources.

pub mod atomic;
pub mod bridges;
pub mod cli;
pub mod cri;
pub mod digest;
pub mod error;
pub mod gc;
pub mod install;
pub mod link_events;
pub mod lock;
pub mod marker;
pub mod metrics;
pub mod nmstate;
pub mod node;
pub mod probe;
pub mod record;
pub mod run;
pub mod runtime;
pub mod uninstall;
pub mod verify;

pub use error::{Error, Result};
