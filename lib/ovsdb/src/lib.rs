//! A small synchronous OVSDB client (RFC 7047): JSON-RPC over a unix or TCP socket.
//!
//! Its users are short-lived: a CNI call doing one or two transactions, a node agent listing
//! bridges once a minute. So the client is blocking std I/O with deadlines and no runtime, and
//! speaks only what they need: `transact`, answering the server's `echo`, and the protocol's
//! encodings of sets, maps and UUIDs.
//!
//! - [`endpoint`]: where the server listens (`unix:PATH`, `tcp:IP[:PORT]`), and connecting.
//! - [`jsonrpc`]: messages, and cutting them out of the byte stream.
//! - [`client`]: one connection, one request at a time.
//! - [`transact`]: a transaction's reply and the operation it failed at.
//! - [`datum`]: sets, maps and UUIDs as the protocol writes them.

pub mod client;
pub mod datum;
pub mod endpoint;
pub mod error;
pub mod jsonrpc;
pub mod transact;

pub use client::Client;
pub use datum::{map, map_items, named_uuid, rows, set, set_items, uuid, uuid_of};
pub use endpoint::Endpoint;
pub use error::{Context, Error, OpFailure, Result};
pub use transact::Reply;

/// The database every Open vSwitch table lives in.
pub const DATABASE: &str = "Open_vSwitch";
