//! The reconcile loop against an in-memory API server (`fake_api`): what it creates, updates,
//! deletes and reports, one behaviour per test, in a module per subject.

#![allow(clippy::unwrap_used)]

#[path = "../fake_api/mod.rs"]
mod fake_api;
#[path = "../k8s_1_20/mod.rs"]
mod k8s_1_20;

mod harness;

mod applied_spec;
mod controller;
mod convergence;
mod events;
mod failures;
mod minimal_writes;
mod new_leader;
mod nmstate;
mod status;
mod takeover;
