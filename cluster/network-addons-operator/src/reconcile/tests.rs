use super::*;

#[test]
fn backoff_doubles_up_to_five_minutes() {
    let delays: Vec<u64> = (0..9).map(|n| backoff(n).as_secs()).collect();
    assert_eq!(delays, [5, 10, 20, 40, 80, 160, 300, 300, 300]);
}
