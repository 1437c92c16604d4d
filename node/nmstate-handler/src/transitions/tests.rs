//! Every transition of a policy's enactment on this node, one behaviour each.

use std::time::Duration;

use super::*;
use nmstate_netlink::Error as NodeError;

const ME: &str = "node01";

fn read(matches: bool, exists: bool, enacted: Option<Enactment>, reapply: bool) -> Step {
    next(&Known::Read(Facts {
        matches,
        exists,
        enacted,
        reapply,
    }))
}

fn slot(answer: Slot, was: Option<Enactment>) -> Step {
    next(&Known::Slot { answer, was })
}

fn applied(started: Started, result: Result<(), ApplyError>) -> Step {
    next(&Known::Applied { started, result })
}

fn refused(why: &str) -> ApplyError {
    ApplyError::Refused(NodeError::Refused(why.to_string()).into())
}

fn failed(cause: &str) -> ApplyError {
    ApplyError::Failed(
        NodeError::Failed {
            cause: cause.to_string(),
        }
        .into(),
    )
}

fn probe_failed(why: &str) -> ApplyError {
    ApplyError::Probe(Error::Probe(why.to_string()))
}

fn rollback_failed(rollback: &str) -> NodeError {
    NodeError::RollbackFailed {
        cause: "rolling back on request".to_string(),
        rollback: rollback.to_string(),
    }
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

const NOTHING: Step = Step::Done { changed: false };

#[test]
fn a_policy_not_for_this_node_is_left_alone() {
    assert_eq!(read(false, false, None, false), NOTHING);
}

#[test]
fn a_policy_no_longer_matching_is_withdrawn() {
    assert_eq!(
        read(false, true, Some(Enactment::Available), false),
        Step::Withdraw
    );
}

#[test]
fn a_new_policy_creates_its_enactment_then_takes_a_slot() {
    assert_eq!(
        read(true, false, None, false),
        Step::TakeSlot { create: true }
    );
}

#[test]
fn a_new_generation_takes_a_slot_again() {
    // An enactment of another generation reads as no state for this one.
    assert_eq!(
        read(true, true, None, false),
        Step::TakeSlot { create: false }
    );
}

#[test]
fn a_pending_enactment_asks_for_a_slot_again() {
    assert_eq!(
        read(true, true, Some(Enactment::Pending), false),
        Step::TakeSlot { create: false }
    );
}

#[test]
fn a_handler_restarted_mid_way_takes_a_slot_again() {
    assert_eq!(
        read(true, true, Some(Enactment::Progressing), true),
        Step::TakeSlot { create: false }
    );
}

#[test]
fn at_start_an_available_enactment_is_applied_again() {
    assert_eq!(
        read(true, true, Some(Enactment::Available), true),
        Step::ApplyAgain
    );
}

#[test]
fn an_available_enactment_is_left_as_it_is() {
    assert_eq!(read(true, true, Some(Enactment::Available), false), NOTHING);
}

#[test]
fn a_failing_enactment_waits_for_a_new_generation() {
    let failing = Enactment::Failing("interface br0: no port eth9".to_string());
    assert_eq!(read(true, true, Some(failing.clone()), false), NOTHING);
    assert_eq!(read(true, true, Some(failing), true), NOTHING);
}

#[test]
fn an_aborted_enactment_waits_for_a_new_generation() {
    assert_eq!(read(true, true, Some(Enactment::Aborted), true), NOTHING);
}

#[test]
fn progressing_once_a_slot_is_claimed() {
    assert_eq!(slot(Slot::Claimed, None), Step::Apply);
}

#[test]
fn pending_when_every_slot_is_taken() {
    assert_eq!(slot(Slot::Full, None), Step::Wait { report: true });
}

#[test]
fn a_pending_enactment_is_not_written_again() {
    assert_eq!(
        slot(Slot::Full, Some(Enactment::Pending)),
        Step::Wait { report: false }
    );
}

#[test]
fn aborted_when_failures_reached_max_unavailable() {
    assert_eq!(
        slot(Slot::Aborted, Some(Enactment::Pending)),
        Step::Report {
            state: Enactment::Aborted,
            free_slot: false
        }
    );
}

#[test]
fn a_policy_changed_while_waiting_is_left_to_its_next_sync() {
    assert_eq!(slot(Slot::Stale, Some(Enactment::Pending)), NOTHING);
}

#[test]
fn available_when_the_change_is_kept() {
    assert_eq!(
        applied(Started::Fresh, Ok(())),
        Step::Report {
            state: Enactment::Available,
            free_slot: true
        }
    );
}

#[test]
fn failing_when_the_change_is_not_kept() {
    assert_eq!(
        applied(Started::Fresh, Err(probe_failed("node-ready: not Ready"))),
        Step::Report {
            state: Enactment::Failing("node-ready: not Ready; rolled back".to_string()),
            free_slot: true
        }
    );
}

#[test]
fn a_change_applied_again_is_done_without_a_write() {
    assert_eq!(
        applied(Started::Again, Ok(())),
        Step::Done { changed: true }
    );
}

#[test]
fn a_change_not_applied_again_is_failing() {
    assert_eq!(
        applied(Started::Again, Err(refused("no port eth9"))),
        Step::Report {
            state: Enactment::Failing("refused: no port eth9".to_string()),
            free_slot: false
        }
    );
}

#[test]
fn a_probe_failed_and_not_rolled_back_names_both() {
    let why = ApplyError::ProbeRollbackFailed {
        probe: Error::Probe("api-server: no answer".to_string()),
        rollback: rollback_failed("interface eth1: gone").into(),
    };
    assert_eq!(
        applied(Started::Fresh, Err(why)),
        Step::Report {
            state: Enactment::Failing(
                "api-server: no answer; rolling back failed: rolling back on request; \
                 rolling back failed too: interface eth1: gone"
                    .to_string()
            ),
            free_slot: true
        }
    );
}

#[test]
fn a_failed_try_is_retried_after_a_doubling_wait() {
    let failed = failed("interface br0: busy");
    let waits: Vec<Option<Duration>> = (1..TRIES).map(|t| retry(t, &failed)).collect();
    let secs = |s| Some(Duration::from_secs(s));
    assert_eq!(waits, [secs(1), secs(2), secs(4), secs(8)]);
}

#[test]
fn the_fifth_failed_try_is_the_last() {
    assert_eq!(retry(TRIES, &failed("interface br0: busy")), None);
}

#[test]
fn refusals_probes_and_rollbacks_are_not_retried() {
    for error in [
        refused("no port eth9"),
        probe_failed("api-server: no answer"),
        ApplyError::RollbackFailed(rollback_failed("interface eth1: gone").into()),
        ApplyError::ProbeRollbackFailed {
            probe: Error::Probe("api-server: no answer".to_string()),
            rollback: rollback_failed("interface eth1: gone").into(),
        },
    ] {
        assert_eq!(retry(1, &error), None, "{error:?}");
    }
}

#[test]
fn stale_when_the_policy_changed() {
    assert_eq!(slot_settled(3, 2, &names(&[ME]), ME), Some(Slot::Stale));
}

#[test]
fn a_slot_this_node_holds_is_its_own() {
    assert_eq!(
        slot_settled(2, 2, &names(&["node02", ME]), ME),
        Some(Slot::Claimed)
    );
    assert_eq!(slot_settled(2, 2, &names(&["node02"]), ME), None);
}

fn slots<'a>(holders: &'a [String], limit: usize, failing: usize, all: &'a [String]) -> Slots<'a> {
    Slots {
        holders,
        limit,
        failing,
        matching: all,
        finished: &[],
    }
}

#[test]
fn the_rollout_is_aborted_when_failures_reach_max_unavailable() {
    let all = names(&[ME, "node02", "node03"]);
    assert_eq!(claim(slots(&[], 1, 1, &all), ME), Claim::Aborted);
}

#[test]
fn the_slot_taken_when_one_is_free() {
    let all = names(&[ME, "node02", "node03"]);
    let holders = names(&["node02"]);
    assert_eq!(
        claim(slots(&holders, 2, 0, &all), ME),
        Claim::Take(names(&["node02", ME]))
    );
}

#[test]
fn the_slot_refused_when_max_unavailable_is_reached() {
    let all = names(&[ME, "node02", "node03"]);
    let holders = names(&["node02", "node03"]);
    assert_eq!(
        claim(slots(&holders, 2, 0, &all), ME),
        Claim::Full { prune: None }
    );
}

#[test]
fn holders_no_longer_configuring_are_dropped_when_full() {
    let all = names(&[ME, "node02", "node03"]);
    let holders = names(&["node02", "node03", "node09"]);
    let finished = names(&["node03"]);
    let view = Slots {
        finished: &finished,
        ..slots(&holders, 1, 0, &all)
    };
    assert_eq!(
        claim(view, ME),
        Claim::Full {
            prune: Some(names(&["node02"]))
        }
    );
}

#[test]
fn the_slot_freed() {
    assert_eq!(
        release(&names(&["node02", ME, "node03"]), ME),
        Some(names(&["node02", "node03"]))
    );
}

#[test]
fn a_slot_not_held_is_not_freed() {
    assert_eq!(release(&names(&["node02"]), ME), None);
}
