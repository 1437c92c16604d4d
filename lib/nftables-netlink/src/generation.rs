//! The ruleset's generation: a number the kernel moves on with every transaction it commits in
//! the namespace. A change planned from a listing is bound to the generation read before the
//! listing, so that the kernel refuses it if anything changed in between, rather than applying
//! it to a ruleset that is no longer the one listed.

use std::fmt;

/// A generation of a namespace's ruleset, as [`crate::Nftables::generation`] reads it.
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
