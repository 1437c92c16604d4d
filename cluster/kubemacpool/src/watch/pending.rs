//! Holds of admissions whose objects never came.

use std::sync::Arc;
use std::time::Duration;

use tracing::info;

use crate::state::Shared;

/// Ends the holds of admissions whose objects never came.
pub async fn expire_pending(shared: Arc<Shared>) {
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let freed = shared.pool().expire(std::time::Instant::now());
        if freed > 0 {
            info!(
                freed,
                "MACs of admissions whose objects never came are free"
            );
        }
    }
}
