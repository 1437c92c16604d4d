//! The CNI specification library every plugin binary shares.
//!
//! Spec side: [`version`], [`config`], [`result`], [`args`], [`env`], [`error`], [`skel`], [`ipam`], [`vlan`].
//! Host side: [`netns`], [`netlink`], [`sysctl`], [`state`], [`mac`], [`naming`].

pub mod args;
pub mod config;
pub mod env;
pub mod error;
pub mod ipam;
pub mod mac;
pub mod naming;
pub mod netlink;
pub mod netns;
pub mod result;
pub mod skel;
pub mod state;
pub mod sysctl;
pub mod version;
pub mod vlan;

pub use error::{Code, Context, Error, Result};
