//! The pool: which MACs are taken, and the next free ones of this replica's blocks.
//!
//! Nothing here is the record of what was handed out. A MAC is taken while a stored pod or
//! VirtualMachine names it ([`Pool::set_holder`], fed by the watches), or while this replica
//! has just handed it out and the object is not stored yet (pending, for `wait_time`). So a
//! restart loses nothing: the objects are the state, as they are for upstream, which also makes
//! a switch from upstream or back keep every MAC.
//!
//! Replicas never hand out the same MAC because each allocates only inside blocks it has
//! claimed through the API server ([`crate::claims`]); a block whose claimant died is claimable
//! again only once every admission it might still have answered is over and stored.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use net_types::MacAddr;

use crate::range::{is_multicast_number, MacRange};

/// A block: the numbers `start..=end`, claimed by one replica at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Block {
    pub start: u64,
    pub end: u64,
}

impl Block {
    pub fn overlaps(&self, other: &Block) -> bool {
        self.start <= other.end && other.start <= self.end
    }
}

/// Why an allocation could not be made from this replica's blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shortage {
    /// Claim another block and try again.
    NeedBlock,
}

/// Who holds a MAC: `pod/<namespace>/<name>` or `vm/<namespace>/<name>`.
pub type Holder = String;

#[derive(Debug)]
pub struct Pool {
    range: MacRange,
    /// MACs named by stored objects.
    holders: HashMap<Holder, Vec<u64>>,
    held: HashMap<u64, u32>,
    /// Handed out by this replica, not yet seen stored: freed at the deadline.
    pending: HashMap<u64, Instant>,
    wait_time: Duration,
    /// This replica's claimed blocks, by start.
    blocks: BTreeMap<u64, Block>,
    /// When each block was claimed or last gave a MAC, by start: a block is given back to
    /// another replica only once it has been quiet for a while.
    last_used: HashMap<u64, Instant>,
    cursor: u64,
}

impl Pool {
    /// `seed` picks where allocation starts (upstream starts at a random point, #447), so two
    /// clusters with one range do not hand out the same first MACs.
    pub fn new(range: MacRange, wait_time: Duration, seed: u64) -> Pool {
        Pool {
            range,
            holders: HashMap::new(),
            held: HashMap::new(),
            pending: HashMap::new(),
            wait_time,
            blocks: BTreeMap::new(),
            last_used: HashMap::new(),
            cursor: range.start() + seed % range.span(),
        }
    }

    pub fn range(&self) -> MacRange {
        self.range
    }

    pub fn cursor(&self) -> u64 {
        self.cursor
    }

    /// A range change applies at once: the blocks outside it are given up, the MACs already
    /// held stay held, the cursor moves into the new range.
    pub fn set_range(&mut self, range: MacRange, seed: u64) -> Vec<Block> {
        if range == self.range {
            return Vec::new();
        }
        self.range = range;
        self.cursor = range.start() + seed % range.span();
        let outside: Vec<Block> = self
            .blocks
            .values()
            .filter(|b| b.end < range.start() || b.start > range.end())
            .copied()
            .collect();
        for b in &outside {
            self.remove_block(b);
        }
        outside
    }

    pub fn wait_time(&self) -> Duration {
        self.wait_time
    }

    /// Records the MACs a stored object names (an empty list forgets the object). Seeing them
    /// stored ends their pending hold.
    pub fn set_holder(&mut self, holder: &str, macs: &[MacAddr]) {
        let numbers: Vec<u64> = macs.iter().map(MacAddr::to_u64).collect();
        for n in &numbers {
            self.pending.remove(n);
        }
        if self.holders.get(holder) == Some(&numbers) {
            return;
        }
        self.remove_holder(holder);
        if numbers.is_empty() {
            return;
        }
        for n in &numbers {
            *self.held.entry(*n).or_default() += 1;
        }
        self.holders.insert(holder.to_string(), numbers);
    }

    pub fn remove_holder(&mut self, holder: &str) {
        let Some(numbers) = self.holders.remove(holder) else {
            return;
        };
        for n in numbers {
            if let Some(count) = self.held.get_mut(&n) {
                *count -= 1;
                if *count == 0 {
                    self.held.remove(&n);
                }
            }
        }
    }

    /// Every holder whose name starts with `prefix` (`pod/`, `vm/`), for a relist to drop the
    /// ones that are gone.
    pub fn holders_with_prefix(&self, prefix: &str) -> Vec<Holder> {
        self.holders
            .keys()
            .filter(|h| h.starts_with(prefix))
            .cloned()
            .collect()
    }

    pub fn holder_macs(&self, holder: &str) -> Option<Vec<MacAddr>> {
        self.holders
            .get(holder)
            .map(|ns| ns.iter().map(|n| MacAddr::from_u64(*n)).collect())
    }

    /// For every MAC that a holder with `prefix` names, how many other stored objects name it
    /// too, summed: upstream's count of duplicate MACs (`kubevirt_kmp_duplicate_macs`) when
    /// `prefix` is `vm/`.
    pub fn extra_holders_of_macs_of(&self, prefix: &str) -> u64 {
        let macs: HashSet<u64> = self
            .holders
            .iter()
            .filter(|(h, _)| h.starts_with(prefix))
            .flat_map(|(_, ns)| ns.iter().copied())
            .collect();
        macs.iter()
            .map(|n| u64::from(self.held.get(n).copied().unwrap_or(0).saturating_sub(1)))
            .sum()
    }

    /// How many stored objects name `mac`.
    pub fn holder_count(&self, mac: MacAddr) -> u32 {
        self.held.get(&mac.to_u64()).copied().unwrap_or(0)
    }

    pub fn is_taken(&self, n: u64) -> bool {
        self.held.contains_key(&n) || self.pending.contains_key(&n)
    }

    /// How many MACs stored objects hold, and how many are pending.
    pub fn counts(&self) -> (usize, usize) {
        (self.held.len(), self.pending.len())
    }

    pub fn blocks(&self) -> Vec<Block> {
        self.blocks.values().copied().collect()
    }

    pub fn add_block(&mut self, block: Block) {
        self.add_block_at(block, Instant::now());
    }

    fn add_block_at(&mut self, block: Block, now: Instant) {
        self.blocks.insert(block.start, block);
        self.last_used.insert(block.start, now);
    }

    pub fn remove_block(&mut self, block: &Block) {
        self.blocks.remove(&block.start);
        self.last_used.remove(&block.start);
    }

    /// Takes out of this replica's blocks the ones another replica may have, when it asks
    /// because the range has no unclaimed block with a free MAC: those with a free MAC, none
    /// pending (handed out here, not yet seen stored) and unused for `quiet` (so the other's
    /// watch has seen every object given a MAC from them). The caller gives them back.
    pub fn take_back_releasable(&mut self, now: Instant, quiet: Duration) -> Vec<Block> {
        let releasable: Vec<Block> = self
            .blocks
            .values()
            .filter(|b| {
                self.free_in(b) > 0
                    && !self.pending.keys().any(|n| (b.start..=b.end).contains(n))
                    && self
                        .last_used
                        .get(&b.start)
                        .is_none_or(|t| now.saturating_duration_since(*t) >= quiet)
            })
            .copied()
            .collect();
        for b in &releasable {
            self.remove_block(b);
        }
        releasable
    }

    /// MACs requested by an object being admitted: held until it is seen stored (or the wait
    /// time passes), so none of them is handed out meanwhile. Anyone may ask for any MAC.
    pub fn hold_requested(&mut self, macs: &[MacAddr], now: Instant) {
        for mac in macs {
            self.pending.insert(mac.to_u64(), now + self.wait_time);
        }
    }

    /// Ends the holds that were never followed by a stored object: a failed create frees its
    /// MACs after `wait_time`.
    pub fn expire(&mut self, now: Instant) -> usize {
        let before = self.pending.len();
        self.pending.retain(|_, deadline| *deadline > now);
        before - self.pending.len()
    }

    /// `count` free MACs from this replica's blocks, in order from the cursor, all or none.
    /// Unless `dry_run`, they are held as pending and the cursor moves past them.
    pub fn allocate(
        &mut self,
        count: usize,
        now: Instant,
        dry_run: bool,
    ) -> Result<Vec<MacAddr>, Shortage> {
        if count == 0 {
            return Ok(Vec::new());
        }
        let mut found = Vec::with_capacity(count);
        for n in self.free_numbers() {
            found.push(n);
            if found.len() == count {
                break;
            }
        }
        if found.len() < count {
            return Err(Shortage::NeedBlock);
        }
        if !dry_run {
            for n in &found {
                self.pending.insert(*n, now + self.wait_time);
                if let Some((start, _)) = self.blocks.range(..=*n).next_back() {
                    self.last_used.insert(*start, now);
                }
            }
            if let Some(last) = found.last() {
                self.cursor = last + 1;
            }
        }
        Ok(found.into_iter().map(MacAddr::from_u64).collect())
    }

    /// The free numbers of this replica's blocks inside the range, from the cursor, wrapping.
    fn free_numbers(&self) -> impl Iterator<Item = u64> + '_ {
        let (lo, hi) = (self.range.start(), self.range.end());
        let clipped = self
            .blocks
            .values()
            .filter_map(move |b| {
                let (s, e) = (b.start.max(lo), b.end.min(hi));
                (s <= e).then_some((s, e))
            })
            .collect::<Vec<_>>();
        let cursor = self.cursor;
        let after = clipped
            .clone()
            .into_iter()
            .filter_map(move |(s, e)| (e >= cursor).then_some((s.max(cursor), e)));
        let before = clipped
            .into_iter()
            .filter_map(move |(s, e)| (s < cursor).then_some((s, e.min(cursor - 1))));
        after
            .chain(before)
            .flat_map(|(s, e)| unicast_parts(s, e))
            .flat_map(|(s, e)| s..=e)
            .filter(move |n| !self.is_taken(*n))
    }

    /// How many numbers of `block` (within the range) are free, for choosing the next claim.
    pub fn free_in(&self, block: &Block) -> u64 {
        let (s, e) = (
            block.start.max(self.range.start()),
            block.end.min(self.range.end()),
        );
        if s > e {
            return 0;
        }
        unicast_parts(s, e)
            .into_iter()
            .map(|(s, e)| (s..=e).filter(|n| !self.is_taken(*n)).count() as u64)
            .sum()
    }
}

/// `s..=e` without its multicast stretches (whole first octets), which are skipped at once
/// rather than number by number.
fn unicast_parts(s: u64, e: u64) -> Vec<(u64, u64)> {
    let mut parts = Vec::new();
    let mut n = s;
    while n <= e {
        let octet_end = n | 0xff_ffff_ffff;
        if is_multicast_number(n) {
            n = octet_end + 1;
            continue;
        }
        parts.push((n, octet_end.min(e)));
        n = octet_end + 1;
    }
    parts
}

/// The blocks of a range: aligned to its start, of a power-of-two size that gives a range at
/// least 64 blocks (so a small range still serves every replica) and at most 4096 MACs each
/// (so a claim is rare: one API write per 4096 allocations).
pub fn block_size(range: &MacRange) -> u64 {
    let per_block = (range.span() / 64).max(1);
    let size = 1u64 << (63 - per_block.leading_zeros());
    size.min(4096)
}

/// The block of `range` that holds `n`.
pub fn block_of(range: &MacRange, n: u64) -> Block {
    let size = block_size(range);
    let start = range.start() + (n - range.start()) / size * size;
    Block {
        start,
        end: (start + size - 1).min(range.end()),
    }
}

#[cfg(test)]
mod tests;
