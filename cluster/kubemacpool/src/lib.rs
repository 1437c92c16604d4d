//! A KubeMacPool compatible MAC allocator: the pod and VirtualMachine mutating webhooks
//! (`manager`), and the webhook's self-signed certificates (`cert-manager`).
//!
//! - `pod`, `vm`: what each webhook reads and writes (pure, on JSON);
//! - `admission`: the AdmissionReview envelope; `patch`: what the two share;
//! - `range`, `pool`: the range and the taken MACs; `claims`: the blocks each replica may
//!   allocate from, arbitrated by the API server;
//! - `watch`: pods, VMs (`held_pod`, `held_vm`, `held_meta`: what of them is read; `reflector`: their list
//!   and watch) and the range ConfigMap feeding the pool; `state`: what the tasks share;
//! - `collisions`: MACs used by more than one running VMI or pod, reported; `opt_mode`: which
//!   namespaces count, from the live webhook configuration; `events`: the Warning events;
//! - `webhook`, `server`, `metrics`: the HTTPS side; `certs`: certificates and their rotation;
//! - `manager`: the manager's start and clean stop; `error`: what both commands fail with, and
//!   what they were doing; `cli`, `entry`: the command line and the process around it.

pub mod admission;
pub mod certs;
pub mod claims;
pub mod cli;
pub mod collisions;
pub mod entry;
pub mod error;
pub mod events;
pub mod held_meta;
pub mod held_pod;
pub mod held_vm;
pub mod manager;
pub mod metrics;
pub mod opt_mode;
pub mod patch;
pub mod pod;
pub mod pool;
pub mod range;
pub mod reflector;
pub mod server;
pub mod state;
pub mod vm;
pub mod watch;
pub mod webhook;

use std::io::Read;

/// Eight random bytes from the kernel; zero if it cannot give them (the caller only uses them
/// to spread starting points).
pub fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    match std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b)) {
        Ok(()) => u64::from_le_bytes(b),
        Err(_) => 0,
    }
}
