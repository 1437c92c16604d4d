use super::*;

fn at(start: Instant, secs: u64) -> Instant {
    start + Duration::from_secs(secs)
}

#[test]
fn a_leader_gives_the_lease_up_after_failing_to_renew_for_the_grace() {
    let (t, mut renewals) = (Instant::now(), Renewals::default());
    assert!(!renewals.failed(at(t, 5), at(t, 5)));
    assert!(!renewals.failed(at(t, 9), at(t, 9)));
    assert!(!renewals.failed(at(t, 13), at(t, 14)));
    assert!(renewals.failed(at(t, 14), at(t, 15)));
}

#[test]
fn renewals_that_succeeded_since_a_failure_start_the_count_again() {
    let (t, mut renewals) = (Instant::now(), Renewals::default());
    assert!(!renewals.failed(at(t, 5), at(t, 5)));
    // the next attempt renewed for a minute before it failed
    assert!(!renewals.failed(at(t, 6), at(t, 66)));
    assert!(!renewals.failed(at(t, 67), at(t, 67)));
    assert!(renewals.failed(at(t, 76), at(t, 77)));
}
