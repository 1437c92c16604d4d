use super::*;

fn spawnable<F: std::future::Future + Send + 'static>(_: fn(Client, String, Intervals) -> F) {}

#[test]
fn the_cert_manager_can_run_on_a_spawned_task() {
    spawnable(run_cert_manager);
}

#[test]
fn a_retry_after_a_lost_race_waits_under_a_second() {
    let d = jitter();
    assert!(
        d >= Duration::from_millis(200) && d < Duration::from_millis(1000),
        "{d:?}"
    );
}
