//! The status write: one server-side apply of the NetworkAddonsConfig's status with our field
//! manager, skipped when only the heartbeats changed.

use kube::api::{Patch, PatchParams};
use kube::{Api, Client, Resource, ResourceExt};
use serde_json::json;

use super::same_ignoring_heartbeat;
use crate::apply::takeover::{take_over, take_over_fields};
use crate::apply::FIELD_MANAGER;
use crate::error::{Context, Result};
use crate::spec::{NetworkAddonsConfig, NetworkAddonsConfigStatus};

/// Writes `after` as the status of `nac`, unless it is its status now but for heartbeats: one
/// server-side apply of the status with our field manager. Status fields another manager wrote
/// (an earlier release, the upstream operator) become ours first, so the apply removes those
/// `after` lacks. Returns whether it wrote.
pub async fn write(
    client: &Client,
    nac: &NetworkAddonsConfig,
    after: &NetworkAddonsConfigStatus,
) -> Result<bool> {
    let before = nac.status.clone().unwrap_or_default();
    if same_ignoring_heartbeat(&before, after) {
        return Ok(false);
    }
    let name = nac.name_any();
    let api: Api<NetworkAddonsConfig> = Api::all(client.clone());
    let body = json!({
        "apiVersion": NetworkAddonsConfig::api_version(&()),
        "kind": NetworkAddonsConfig::kind(&()),
        "metadata": {"name": name},
        "status": after,
    });
    let managed = nac.metadata.managed_fields.as_deref().unwrap_or_default();
    if take_over_fields(managed, &body, FIELD_MANAGER, Some("status")).is_some() {
        // Rare (once after a move from another operator): on the object as it is now, not as
        // the watch last delivered it.
        let live = api
            .get(&name)
            .await
            .with_context(|| format!("read NetworkAddonsConfig {name}"))?;
        let what = format!("the status of NetworkAddonsConfig {name}");
        take_over(
            &api,
            &live.metadata,
            &body,
            FIELD_MANAGER,
            Some("status"),
            &what,
        )
        .await?;
    }
    api.patch_status(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&body),
    )
    .await
    .with_context(|| format!("write the status of {name}"))?;
    Ok(true)
}
