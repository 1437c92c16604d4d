//! The cluster tier's scenarios, by area.

pub mod changes;
pub mod cnao;
pub mod control_loop;
pub mod diff;
pub mod gc;
pub mod image;
pub mod kubemacpool;
pub mod multus;
pub mod nmstate;
pub mod nodes;
pub mod operator;
pub mod pods;
pub mod reboot;
pub mod upgrade;
pub mod walkthrough;
