use super::*;

fn at(start: Instant, secs: u64) -> Instant {
    start + Duration::from_secs(secs)
}

#[test]
fn a_leader_gives_the_lease_up_after_failing_to_renew_for_the_grace() {
    let (t, mut renewals) = (Instant::now(), Renewals::default());
    assert!(!renewals.failed(at(t, 7), at(t, 7)));
    assert!(!renewals.failed(at(t, 8), at(t, 8)));
    assert!(renewals.failed(at(t, 9), at(t, 10)));
}

#[test]
fn renewals_that_succeeded_since_a_failure_start_the_count_again() {
    let (t, mut renewals) = (Instant::now(), Renewals::default());
    assert!(!renewals.failed(at(t, 7), at(t, 7)));
    // the next attempt renewed for a minute before it failed
    assert!(!renewals.failed(at(t, 8), at(t, 68)));
    assert!(!renewals.failed(at(t, 69), at(t, 69)));
    assert!(renewals.failed(at(t, 70), at(t, 71)));
}
