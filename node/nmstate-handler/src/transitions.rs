//! How one policy's enactment on this node moves on, as pure functions: from what the sync
//! read (and what the last step returned) to the next step. They read no clock and call no API;
//! `enact` executes the steps they choose, `slots` and `transaction` ask them what their answers
//! mean.
//!
//! | state / inputs                                               | next step                              | test |
//! |--------------------------------------------------------------|----------------------------------------|------|
//! | not matching, no enactment                                   | `Done` (nothing)                       | `a_policy_not_for_this_node_is_left_alone` |
//! | not matching, an enactment                                   | `Withdraw` (free slot, delete, status) | `a_policy_no_longer_matching_is_withdrawn` |
//! | matching, no enactment                                       | `TakeSlot { create: true }`            | `a_new_policy_creates_its_enactment_then_takes_a_slot` |
//! | enactment of another generation                              | `TakeSlot { create: false }`           | `a_new_generation_takes_a_slot_again` |
//! | Pending (this generation)                                    | `TakeSlot { create: false }`           | `a_pending_enactment_asks_for_a_slot_again` |
//! | Progressing (this generation), handler restarted             | `TakeSlot { create: false }`           | `a_handler_restarted_mid_way_takes_a_slot_again` |
//! | Available, at start                                          | `ApplyAgain`                           | `at_start_an_available_enactment_is_applied_again` |
//! | Available, later                                             | `Done` (nothing)                       | `an_available_enactment_is_left_as_it_is` |
//! | Failing                                                      | `Done` (nothing)                       | `a_failing_enactment_waits_for_a_new_generation` |
//! | Aborted                                                      | `Done` (nothing)                       | `an_aborted_enactment_waits_for_a_new_generation` |
//! | slot: Claimed                                                | `Apply` (Progressing)                  | `progressing_once_a_slot_is_claimed` |
//! | slot: Full, not yet Pending                                  | `Wait { report: true }` (Pending)      | `pending_when_every_slot_is_taken` |
//! | slot: Full, already Pending                                  | `Wait { report: false }`               | `a_pending_enactment_is_not_written_again` |
//! | slot: Aborted                                                | `Report(Aborted)`, no slot to free     | `aborted_when_failures_reached_max_unavailable` |
//! | slot: Stale                                                  | `Done` (nothing)                       | `a_policy_changed_while_waiting_is_left_to_its_next_sync` |
//! | applied (fresh): kept                                        | `Report(Available)`, slot freed        | `available_when_the_change_is_kept` |
//! | applied (fresh): not kept                                    | `Report(Failing)`, slot freed          | `failing_when_the_change_is_not_kept` |
//! | applied (fresh): probe failed, rollback failed               | `Report(Failing)` naming both          | `a_probe_failed_and_not_rolled_back_names_both` |
//! | applied again at start: kept                                 | `Done { changed: true }`               | `a_change_applied_again_is_done_without_a_write` |
//! | applied again at start: not kept                             | `Report(Failing)`, no slot to free     | `a_change_not_applied_again_is_failing` |
//! | try n < 5 failed (`Failed`)                                  | retry after 1 s, 2 s, 4 s, 8 s         | `a_failed_try_is_retried_after_a_doubling_wait` |
//! | try 5 failed                                                 | give up (Failing)                      | `the_fifth_failed_try_is_the_last` |
//! | refused, probe failed, rollback failed                       | give up (Failing)                      | `refusals_probes_and_rollbacks_are_not_retried` |
//! | slot: policy of another generation                           | `Slot::Stale`                          | `stale_when_the_policy_changed` |
//! | slot: this node among the holders                            | `Slot::Claimed`                        | `a_slot_this_node_holds_is_its_own` |
//! | slot: failures >= maxUnavailable                             | `Claim::Aborted`                       | `the_rollout_is_aborted_when_failures_reach_max_unavailable` |
//! | slot: live holders < maxUnavailable                          | `Claim::Take` (holders + this node)    | `the_slot_taken_when_one_is_free` |
//! | slot: live holders >= maxUnavailable                         | `Claim::Full`                          | `the_slot_refused_when_max_unavailable_is_reached` |
//! | slot: full, some holders gone or finished                    | `Claim::Full` with the live holders    | `holders_no_longer_configuring_are_dropped_when_full` |
//! | release, this node a holder                                  | the holders without it                 | `the_slot_freed` |
//! | release, this node no holder                                 | nothing written                        | `a_slot_not_held_is_not_freed` |

use std::time::Duration;

use error_context::report;

use super::conditions::Enactment;
use super::rollout;
use crate::error::Error;

/// Why an apply did not keep its change; on one line ([`report`]), the enactment's message.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// Nothing was changed, and trying again cannot help.
    #[error("refused")]
    Refused(#[source] Error),
    /// A probe failed and the change was rolled back: not tried again, as the probe already
    /// kept the node cut off for its whole timeout.
    #[error("{}; rolled back", report(.0))]
    Probe(Error),
    /// The change failed (and was rolled back): worth another try.
    #[error(transparent)]
    Failed(Error),
    /// Putting the node back failed: nothing more is tried until the journal is restored.
    #[error(transparent)]
    RollbackFailed(Error),
    /// A probe failed, and so did rolling the change back: as `RollbackFailed`.
    #[error("{}; rolling back failed: {}", report(probe), report(rollback))]
    ProbeRollbackFailed { probe: Error, rollback: Error },
}

/// Upstream's: five tries, the waits doubling from 1 s to at most 30 s.
pub const TRIES: u32 = 5;
const FIRST_WAIT: Duration = Duration::from_secs(1);
const LONGEST_WAIT: Duration = Duration::from_secs(30);

/// What the sync read of one policy and of this node's enactment of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// The policy's `nodeSelector` matches this node.
    pub matches: bool,
    /// This node's enactment of the policy exists.
    pub exists: bool,
    /// The enactment's state, when it is of the policy's current generation.
    pub enacted: Option<Enactment>,
    /// The sync at start: what is Available here is applied again (the kernel may have
    /// forgotten it in a reboot).
    pub reapply: bool,
}

/// What is known when the next step is chosen: what the sync read, then what the last step
/// that has an answer returned.
#[derive(Debug)]
pub enum Known {
    Read(Facts),
    /// The slot protocol answered; `was` is the enactment's state as read.
    Slot {
        answer: Slot,
        was: Option<Enactment>,
    },
    /// The transaction ended (after its retries): kept, or why not.
    Applied {
        started: Started,
        result: Result<(), ApplyError>,
    },
}

/// Whether an apply is a policy's first on this node, or its state put back at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Started {
    Fresh,
    Again,
}

/// The slot protocol's answer to this node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    Claimed,
    /// Every slot is taken: Pending until one is released.
    Full,
    /// The rollout's failures reached `maxUnavailable`.
    Aborted,
    /// The policy changed while this node waited: its new generation is reconciled next.
    Stale,
}

/// What to do next for the policy on this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Nothing (more) to do; `changed` when the node was changed.
    Done { changed: bool },
    /// The policy no longer matches this node: its slot freed, its enactment removed, the
    /// policy's conditions written.
    Withdraw,
    /// Apply an Available policy again after start: one try, no slot, and nothing written
    /// unless it fails.
    ApplyAgain,
    /// Ask for a slot of the policy's `maxUnavailable`, creating the enactment first.
    TakeSlot { create: bool },
    /// Pending until a slot is released; `report`: the enactment and the policy's conditions
    /// are written (they do not say Pending yet).
    Wait { report: bool },
    /// Progressing written (enactment, then the policy's conditions), then the transaction.
    Apply,
    /// The enactment's `state` written first (a node that finished is no longer counted as
    /// configuring by the others), then its slot freed when it holds one, then the policy's
    /// conditions.
    Report { state: Enactment, free_slot: bool },
}

/// The step after `known`.
pub fn next(known: &Known) -> Step {
    match known {
        Known::Read(facts) => after_read(facts),
        Known::Slot { answer, was } => after_slot(*answer, was.as_ref()),
        Known::Applied { started, result } => after_apply(*started, result),
    }
}

fn after_read(facts: &Facts) -> Step {
    if !facts.matches {
        return if facts.exists {
            Step::Withdraw
        } else {
            Step::Done { changed: false }
        };
    }
    match facts.enacted {
        Some(Enactment::Available) if facts.reapply => Step::ApplyAgain,
        Some(Enactment::Available | Enactment::Failing(_) | Enactment::Aborted) => {
            Step::Done { changed: false }
        }
        // None, Pending or Progressing (a handler that stopped mid-way): a slot first.
        _ => Step::TakeSlot {
            create: !facts.exists,
        },
    }
}

fn after_slot(answer: Slot, was: Option<&Enactment>) -> Step {
    match answer {
        Slot::Stale => Step::Done { changed: false },
        Slot::Full => Step::Wait {
            report: was != Some(&Enactment::Pending),
        },
        Slot::Aborted => Step::Report {
            state: Enactment::Aborted,
            free_slot: false,
        },
        Slot::Claimed => Step::Apply,
    }
}

fn after_apply(started: Started, result: &Result<(), ApplyError>) -> Step {
    let state = match result {
        Ok(()) => Enactment::Available,
        Err(why) => Enactment::Failing(report(why)),
    };
    match started {
        // Put back as it was: the enactment already says so.
        Started::Again if result.is_ok() => Step::Done { changed: true },
        Started::Again => Step::Report {
            state,
            free_slot: false,
        },
        Started::Fresh => Step::Report {
            state,
            free_slot: true,
        },
    }
}

/// After try `tries` failed with `error`: how long to wait before the next, or None when it is
/// given up. Tried again, as upstream does, is only what may pass next time: not a refusal, a
/// failed probe or a failed rollback.
pub fn retry(tries: u32, error: &ApplyError) -> Option<Duration> {
    if !matches!(error, ApplyError::Failed(_)) || tries >= TRIES {
        return None;
    }
    let doubled = FIRST_WAIT.saturating_mul(1 << (tries - 1).min(16));
    Some(doubled.min(LONGEST_WAIT))
}

/// Before counting: the slot's answer when the policy as read settles it.
pub fn slot_settled(
    read_generation: i64,
    generation: i64,
    holders: &[String],
    me: &str,
) -> Option<Slot> {
    if read_generation != generation {
        return Some(Slot::Stale);
    }
    // A handler restarted mid-way finds its own slot.
    holders.iter().any(|h| h == me).then_some(Slot::Claimed)
}

/// A policy's slots as read, with what its rollout says of the holders.
#[derive(Debug, Clone, Copy)]
pub struct Slots<'a> {
    pub holders: &'a [String],
    /// `maxUnavailable` as a node count.
    pub limit: usize,
    /// Enactments of this generation that are Failing.
    pub failing: usize,
    /// The nodes that match the policy and run a handler.
    pub matching: &'a [String],
    /// The nodes whose enactment of this generation finished.
    pub finished: &'a [String],
}

/// What the slots allow this node (that holds none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The rollout's failures reached `maxUnavailable`.
    Aborted,
    /// Every slot is taken; `prune`: the holders still configuring, to write when some were
    /// not (a node gone, a handler that finished without releasing), so that a slot never leaks.
    Full { prune: Option<Vec<String>> },
    /// A slot is free: these holders, this node last, are written.
    Take(Vec<String>),
}

pub fn claim(slots: Slots<'_>, me: &str) -> Claim {
    if slots.failing >= slots.limit {
        return Claim::Aborted;
    }
    let mut live = rollout::live_holders(slots.holders, slots.matching, slots.finished);
    if live.len() >= slots.limit {
        let prune = (live != slots.holders).then_some(live);
        return Claim::Full { prune };
    }
    live.push(me.to_string());
    Claim::Take(live)
}

/// The holders to write when this node frees its slot; None when it holds none.
pub fn release(holders: &[String], me: &str) -> Option<Vec<String>> {
    if !holders.iter().any(|h| h == me) {
        return None;
    }
    Some(holders.iter().filter(|h| *h != me).cloned().collect())
}

#[cfg(test)]
mod tests;
