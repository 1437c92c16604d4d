//! The bridge plugin's behaviour on this machine's kernel (no VLAN filtering here: the VLAN
//! behaviour is specified in vlan_real_kernel.rs, on the real-kernel tier).

#[path = "../common/mod.rs"]
mod common;

mod attach;
mod lifecycle;
mod refusals;

use common::*;
use serde_json::json;
