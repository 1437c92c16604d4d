//! The collision reporter: one replica reports each new collision and serves the gauge.

use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use tracing::{info, warn};

use crate::claims::RENEW_EVERY;
use crate::state::Shared;

/// How often a replica checks whether it is the reporter when no collision waits to be reported.
const REPORTER_CHECK_EVERY: Duration = Duration::from_secs(10);

/// Reports every new collision by event, from the reporter: the live replica whose identity
/// sorts first, which alone serves the collision gauge's samples ([`crate::collisions`]). Only
/// the reporter takes the collisions as reported: one that merely looked would never report
/// them once it becomes the reporter (its peer stopped).
pub async fn report_collisions(client: Client, shared: Arc<Shared>) {
    let mut checked: Option<std::time::Instant> = None;
    loop {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let waiting = shared.collisions.has_unreported();
        let due = checked.is_none_or(|at| at.elapsed() >= REPORTER_CHECK_EVERY);
        if !waiting && !due {
            continue;
        }
        checked = Some(std::time::Instant::now());
        // Renewed within three renewals: a replica that stopped without retiring (killed) no
        // longer sorts first for the 45 s its blocks stay its own.
        let reporting = match shared.claims.live_allocators(3 * RENEW_EVERY).await {
            Ok(mut live) => {
                live.sort();
                live.first().map(String::as_str) == Some(shared.claims.identity())
            }
            Err(e) => {
                warn!(error = %e, "listing the allocators");
                continue;
            }
        };
        if reporting != shared.collisions.is_reporting() {
            info!(reporting, "collision reporter");
            shared.collisions.set_reporting(reporting);
        }
        if !reporting || !waiting {
            continue;
        }
        for (mac, users) in shared.collisions.unreported() {
            warn!(message = %crate::collisions::message(&mac, &users), "collision");
            crate::collisions::report(&client, &mac, &users).await;
        }
    }
}
