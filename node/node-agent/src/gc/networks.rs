//! The networks our plugins serve, read the way the runtime and Multus read them, with the
//! config each plugin of ours gets when it is called: the node's conf dir (`conf_dir`), the
//! NetworkAttachmentDefinitions (`nad`) and the configs either holds (`config`).
//!
//! Whatever cannot be read is reported ([`Unreadable`]) and never collected: a config is never
//! guessed. A config that names none of our plugins is left alone, broken or not, and so is
//! one with `disableGC`, which the spec asks runtimes to honour.

mod conf_dir;
mod config;
mod files;
mod nad;
#[cfg(test)]
mod testing;

use std::fmt;
use std::path::PathBuf;

use serde_json::Value;

pub use conf_dir::node_networks;
pub use nad::nad_network;

/// A network our plugins serve, with what GC needs to call them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Network {
    /// The config's `name`: what the plugins key their state by.
    pub name: String,
    pub source: Source,
    /// The config as libcni would pass each plugin: for a conflist, one entry per plugin of
    /// ours (the plugin's own object plus `name` and `cniVersion`); for a single-plugin config,
    /// that config. Each entry is (type, the binary name; config).
    pub plugins: Vec<(String, Value)>,
}

/// Where a network's config comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A file of the node's conf dir; `index` is its place in the order the runtime loads
    /// them, counting every conf file, ours or not (containerd loads only the first
    /// `max_conf_num`).
    NodeConflist {
        file: PathBuf,
        index: usize,
    },
    Nad {
        namespace: String,
        name: String,
    },
}

/// A config that could not be read: never collected, reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// The file, or `namespace/name` of the NAD.
    pub source: String,
    pub why: String,
}

impl fmt::Display for Unreadable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.source, self.why)
    }
}
