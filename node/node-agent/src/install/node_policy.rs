//! The node's policy, written beside the plugins when any `--allow-*` flag was given.

use std::path::Path;

use cni_common::node_policy::{PolicyFile, POLICY_FILE_NAME};
use tracing::info;

use crate::atomic;
use crate::error::{Context, Result};

/// `node-policy.json`, which the plugins read beside themselves: written whole or not at all,
/// readable by all (it holds no secret), writable by root only.
pub(super) fn write_node_policy(to: &Path, policy: &PolicyFile) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(policy).context("encoding the node policy")?;
    bytes.push(b'\n');
    atomic::write_atomically(to, POLICY_FILE_NAME, &bytes, 0o644)?;
    info!(path = %to.join(POLICY_FILE_NAME).display(), "node policy written");
    Ok(())
}
