//! nftables through nf_tables netlink, without the `nft` command or its libraries.
//!
//! A typed model of what a ruleset holds ([`Table`], [`Chain`], [`Set`] and its [`Element`]s,
//! [`Rule`]s made of [`Expr`]essions), changed in atomic transactions ([`Batch`], the
//! counterpart of `nft -f`) and read back ([`Nftables::list_chains`], `list_rules`,
//! `list_elements`). [`matches`] builds the expressions nft compiles its match syntax into, so
//! that what is made here is what `nft add rule` would make from the same text, and `nft list
//! ruleset` shows it as such. A change planned from a listing (delete what is no longer
//! wanted) is bound to the ruleset's [`Generation`] it listed, so that it never acts on a
//! ruleset that changed in between ([`Nftables::apply_planned`]).
//!
//! Why not the `rustables` crate: it generates its kernel bindings with bindgen at build time,
//! which needs libclang and the kernel headers on every build machine, and it is far larger
//! than the handful of objects and expressions needed here. The nf_tables messages for those
//! are short and stable (they are kernel ABI), so they are written here directly, on the
//! workspace's `netlink-sys` socket.

mod attr;
mod batch;
mod error;
pub mod expr;
mod generation;
pub mod matches;
mod model;
mod socket;
mod sockopt;
mod sys;
mod verdict;

pub use batch::Batch;
pub use error::{Context, Error, Result};
pub use expr::{CmpOp, Expr, MetaKey, PayloadBase};
pub use generation::Generation;
pub use model::{
    ifname_from_key, ifname_key, BaseChain, Chain, ChainType, Element, Family, Hook, KeyType, Rule,
    Set, Table,
};
pub use socket::Nftables;
pub use verdict::Verdict;
