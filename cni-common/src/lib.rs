//! The CNI specification library every plugin binary shares.
//!
//! Spec side: [`version`], [`config`], [`result`], [`args`], [`env`], [`error`], [`skel`], [`ipam`].
//! Host side: [`netns`], [`netlink`], [`sysctl`], [`state`], [`mac`].

pub mod error;
pub mod mac;
pub mod netlink;
pub mod netns;
pub mod state;
pub mod sysctl;

pub use error::{Code, Context, Error, Result};
