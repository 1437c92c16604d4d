//! The CNI specification library every plugin binary shares.
//!
//! Spec side: [`version`], [`config`], [`result`], [`args`], [`env`], [`error`], [`skel`], [`ipam`], [`vlan`].
//! Host side: [`netns`], [`netlink`], [`sysctl`], [`state`], [`mac`], [`naming`];
//! what configs may name on the node: [`node_policy`]. Logs: [`log`].
//! Undo and teardown: [`rollback`] (ADD), [`teardown`] (DEL, GC); ADD against the node agent's
//! GC: [`gc_lock`].

pub mod args;
pub mod config;
pub mod env;
pub mod error;
pub mod gc_lock;
pub mod ipam;
pub mod log;
pub mod mac;
pub mod naming;
pub mod netlink;
pub mod netns;
pub mod node_policy;
pub mod result;
pub mod rollback;
pub mod skel;
pub mod state;
pub mod sysctl;
pub mod teardown;
pub mod version;
pub mod vlan;

pub use error::{report, Code, Context, ContextAs, Error, Result};
pub use rollback::Rollback;
pub use teardown::Teardown;
