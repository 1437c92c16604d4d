//! Applying one kind's watch events to the pool.

use std::collections::HashSet;

use crate::state::Shared;

/// Applies one kind's watch events to the pool; a relist drops the holders that are gone.
pub(super) struct Follower<'a> {
    pub(super) shared: &'a Shared,
    pub(super) prefix: &'static str,
    pub(super) relisted: Option<HashSet<String>>,
}

impl Follower<'_> {
    pub(super) fn apply(&mut self, holder: String, macs: Vec<net_types::MacAddr>) {
        self.shared.pool().set_holder(&holder, &macs);
        if let Some(seen) = self.relisted.as_mut() {
            seen.insert(holder);
        }
    }

    pub(super) fn delete(&mut self, holder: &str) {
        self.shared.pool().remove_holder(holder);
    }

    pub(super) fn init(&mut self) {
        self.relisted = Some(HashSet::new());
    }

    pub(super) fn init_done(&mut self) {
        let Some(seen) = self.relisted.take() else {
            return;
        };
        let mut pool = self.shared.pool();
        for gone in pool
            .holders_with_prefix(self.prefix)
            .into_iter()
            .filter(|h| !seen.contains(h))
        {
            pool.remove_holder(&gone);
        }
    }
}
