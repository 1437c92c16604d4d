//! The ruleset's generation: a number the kernel moves on with every transaction it commits in
//! the namespace. A change planned from a listing is bound to the generation read before the
//! listing, so that the kernel refuses it if anything changed in between, rather than applying
//! it to a ruleset that is no longer the one listed.

use std::fmt;

use crate::attr;
use crate::batch::Batch;
use crate::sys::{NFTA_GEN_ID, NFT_MSG_GETGEN, NFT_MSG_NEWGEN};
use crate::{Error, Nftables, Result};

/// How often [`Nftables::apply_planned`] lists and plans again when other transactions keep
/// changing the ruleset in between.
const PLAN_ATTEMPTS: usize = 5;

/// A generation of a namespace's ruleset, as [`Nftables::generation`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Generation(u32);

impl Generation {
    pub(crate) fn new(id: u32) -> Generation {
        Generation(id)
    }

    /// The kernel's number for it.
    pub fn id(&self) -> u32 {
        self.0
    }
}

impl fmt::Display for Generation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "generation {}", self.0)
    }
}

impl Nftables {
    /// The ruleset's generation now (`NFT_MSG_GETGEN`).
    pub fn generation(&mut self) -> Result<Generation> {
        let body = self.query(
            NFT_MSG_GETGEN,
            NFT_MSG_NEWGEN,
            "reading the ruleset's generation",
        )?;
        attr::get_u32(&attr::parse(&body)?, NFTA_GEN_ID)
            .map(Generation::new)
            .ok_or_else(|| Error::Decode("a generation without its number".into()))
    }

    /// Lists, plans and applies as one step: `plan` reads what it needs through this
    /// connection and returns the batch to apply (with anything else the caller wants back),
    /// and the batch is applied only if the ruleset is still at the generation read before
    /// `plan` ran ([`Batch::if_generation`]). When another transaction changed the ruleset in
    /// between, `plan` runs again on a fresh listing, a few times at most; after that the
    /// error is [`Error::GenerationChanged`]. An empty batch is not sent.
    pub fn apply_planned<T>(
        &mut self,
        mut plan: impl FnMut(&mut Nftables) -> Result<(Batch, T)>,
    ) -> Result<T> {
        let mut attempt = 1;
        loop {
            let generation = self.generation()?;
            let (mut batch, planned) = plan(self)?;
            batch.if_generation(generation);
            match self.apply(&batch) {
                Err(e) if e.is_generation_changed() && attempt < PLAN_ATTEMPTS => attempt += 1,
                applied => return applied.map(|()| planned),
            }
        }
    }
}
