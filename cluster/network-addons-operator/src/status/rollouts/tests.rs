/// The default progress timeout.
const TIMEOUT: std::time::Duration = crate::settings::DEFAULT_PROGRESS_TIMEOUT;
use super::*;

fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + secs).unwrap_or(Timestamp::UNIX_EPOCH)
}

fn daemonset(namespace: &str, name: &str) -> Identity {
    Identity {
        api_version: "apps/v1".to_string(),
        kind: "DaemonSet".to_string(),
        namespace: namespace.to_string(),
        name: name.to_string(),
    }
}

fn rollout(object: &Identity, line: &str, fingerprint: &str) -> Rollout {
    Rollout {
        object: object.clone(),
        line: line.to_string(),
        fingerprint: fingerprint.to_string(),
    }
}

#[test]
fn a_rollout_is_hung_after_ten_unchanged_minutes_and_a_change_restarts_the_clock() {
    let tracker = RolloutTracker::default();
    let a = daemonset("ns", "a");
    let line = "DaemonSet \"ns/a\" is not available (awaiting 1 nodes)".to_string();
    let obs = |fp: &str, secs: i64| tracker.observe(&[rollout(&a, &line, fp)], at(secs), TIMEOUT);
    assert!(obs("s1", 0).is_empty());
    assert!(obs("s1", 9 * 60).is_empty());
    assert!(obs("s2", 9 * 60 + 30).is_empty());
    assert!(obs("s2", 19 * 60).is_empty());
    let hung = obs("s2", 20 * 60);
    assert_eq!(hung.len(), 1);
    assert!(hung[0].starts_with(&line));
    // no longer progressing: forgotten, so a new rollout gets its full ten minutes
    assert!(tracker.observe(&[], at(21 * 60), TIMEOUT).is_empty());
    assert!(obs("s2", 22 * 60).is_empty());
}

#[test]
fn a_rollout_is_tracked_by_its_object_whatever_its_line_says() {
    let tracker = RolloutTracker::default();
    let a = daemonset("ns", "a");
    // the line a missing DaemonSet gets names it without quotes
    let missing = "DaemonSet ns/a is missing";
    assert!(tracker
        .observe(&[rollout(&a, missing, "")], at(0), TIMEOUT)
        .is_empty());
    let reworded = "DaemonSet ns/a is still missing";
    let hung = tracker.observe(&[rollout(&a, reworded, "")], at(10 * 60), TIMEOUT);
    assert_eq!(
        hung,
        [format!(
            "{reworded}; its status has not changed for 10 minutes"
        )]
    );
}

#[test]
fn two_objects_whose_lines_read_the_same_keep_their_own_clocks() {
    let tracker = RolloutTracker::default();
    let (a, b) = (daemonset("ns", "a"), daemonset("other", "a"));
    let line = "a rollout line naming neither";
    assert!(tracker
        .observe(&[rollout(&a, line, "s1")], at(0), TIMEOUT)
        .is_empty());
    let both = [rollout(&a, line, "s1"), rollout(&b, line, "s1")];
    assert!(tracker.observe(&both, at(5 * 60), TIMEOUT).is_empty());
    // a has been unchanged for ten minutes, b only for five
    assert_eq!(tracker.observe(&both, at(10 * 60), TIMEOUT).len(), 1);
}
