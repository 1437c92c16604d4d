//! The network addons operator: one NetworkAddonsConfig turns on the secondary-network
//! components (our bridge, tuning, macvtap and ovs plugins, plus upstream multus and kubemacpool)
//! on every node.
//!
//! A reconcile validates the spec, fills defaults from the previously applied one, refuses
//! unsafe changes, renders every object, applies them with server-side apply, deletes what the
//! render no longer has (found by label), and reports conditions from DaemonSet and Deployment
//! readiness.

pub mod apply;
pub mod cli;
pub mod cluster;
mod context;
mod converge;
pub mod crd;
pub mod defaults;
pub mod desired;
mod diff;
pub mod entry;
pub mod error;
pub mod events;
pub mod images;
pub mod labels;
mod leader;
pub mod manifests;
pub mod metrics;
pub mod nmstate_names;
mod progress;
mod publish;
pub mod reconcile;
pub mod render;
pub mod settings;
pub mod spec;
mod status;
pub mod validate;
mod yaml;
