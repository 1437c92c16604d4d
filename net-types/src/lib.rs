//! Value types both sides of the project speak: the plugins on the node and the operator in
//! the cluster. Kept free of netlink, nix and Kubernetes so either side can depend on it
//! without building the other's world.

pub mod mac;

pub use mac::{MacAddr, MacAddrError};
