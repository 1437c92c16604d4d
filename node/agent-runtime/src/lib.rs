//! What the node agent's long-running commands share: `node-agent run` (the bridge
//! marker) and kubernetes-nmstate's handler (`nmstate-handler`) both follow the API server and
//! the kernel's link notifications until a signal stops them, and both hold a lock on their
//! directory. They live here so that the handler is a crate of its own that does not depend on
//! the node agent.
//!
//! What fails here fails with this crate's small `Error` (files, system calls, API requests,
//! netlink, messages, each with what was being done); the node agent's error and the handler's
//! hold it as one transparent variant, so that a message reads the same whichever crate it
//! passed through.

pub mod error;
pub mod link_events;
pub mod lock;
pub mod runtime;

pub use error::{Context, Error, Result};
