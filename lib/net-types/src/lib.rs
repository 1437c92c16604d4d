//! Value types both sides of the project speak: the plugins on the node and the operator in
//! the cluster. Kept free of netlink, nix and Kubernetes so either side can depend on it
//! without building the other's world.

pub mod go_duration;
pub mod mac;

pub use go_duration::{format_go_duration, parse_go_duration, GoDurationError};
pub use mac::{MacAddr, MacAddrError};
