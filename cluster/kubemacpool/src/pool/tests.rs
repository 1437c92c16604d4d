use super::*;

fn range(start: &str, end: &str) -> MacRange {
    MacRange::parse(start, end).expect("range")
}

fn mac(s: &str) -> MacAddr {
    MacAddr::parse(s).expect("mac")
}

fn pool_with_all_blocks(r: MacRange) -> Pool {
    let mut pool = Pool::new(r, Duration::from_secs(30), 0);
    pool.add_block(Block {
        start: r.start(),
        end: r.end(),
    });
    pool
}

#[test]
fn nothing_is_handed_out_without_a_claimed_block() {
    let mut pool = Pool::new(
        range("02:00:00:00:00:00", "02:00:00:00:00:ff"),
        Duration::from_secs(30),
        0,
    );
    assert_eq!(
        pool.allocate(1, Instant::now(), false),
        Err(Shortage::NeedBlock)
    );
}

#[test]
fn allocation_runs_in_order_from_the_cursor() {
    let mut pool = pool_with_all_blocks(range("02:00:00:00:00:00", "02:00:00:00:00:ff"));
    let got = pool.allocate(2, Instant::now(), false).expect("free");
    assert_eq!(got, [mac("02:00:00:00:00:00"), mac("02:00:00:00:00:01")]);
    let next = pool.allocate(1, Instant::now(), false).expect("free");
    assert_eq!(next, [mac("02:00:00:00:00:02")]);
}

#[test]
fn a_mac_a_stored_object_names_is_skipped() {
    let mut pool = pool_with_all_blocks(range("02:00:00:00:00:00", "02:00:00:00:00:ff"));
    pool.set_holder("pod/ns/a", &[mac("02:00:00:00:00:00")]);
    let got = pool.allocate(1, Instant::now(), false).expect("free");
    assert_eq!(got, [mac("02:00:00:00:00:01")]);
}

#[test]
fn a_deleted_objects_macs_are_free_again() {
    let r = range("02:00:00:00:00:00", "02:00:00:00:00:01");
    let mut pool = pool_with_all_blocks(r);
    pool.set_holder(
        "vm/ns/a",
        &[mac("02:00:00:00:00:00"), mac("02:00:00:00:00:01")],
    );
    assert!(pool.allocate(1, Instant::now(), false).is_err());
    pool.remove_holder("vm/ns/a");
    assert!(pool.allocate(1, Instant::now(), false).is_ok());
}

#[test]
fn a_shared_mac_stays_taken_until_its_last_holder_is_gone() {
    let r = range("02:00:00:00:00:00", "02:00:00:00:00:01");
    let mut pool = pool_with_all_blocks(r);
    pool.set_holder("vm/ns/a", &[mac("02:00:00:00:00:00")]);
    pool.set_holder("vm/ns/b", &[mac("02:00:00:00:00:00")]);
    pool.remove_holder("vm/ns/a");
    assert_eq!(pool.holder_count(mac("02:00:00:00:00:00")), 1);
    assert!(pool.is_taken(mac("02:00:00:00:00:00").to_u64()));
}

#[test]
fn a_pending_mac_is_freed_after_the_wait_time() {
    let mut pool = pool_with_all_blocks(range("02:00:00:00:00:00", "02:00:00:00:00:01"));
    let t0 = Instant::now();
    pool.allocate(2, t0, false).expect("free");
    assert!(pool.allocate(1, t0, false).is_err());
    assert_eq!(pool.expire(t0 + Duration::from_secs(31)), 2);
    assert!(pool
        .allocate(1, t0 + Duration::from_secs(31), false)
        .is_ok());
}

#[test]
fn a_stored_object_ends_the_pending_hold_of_its_macs() {
    let mut pool = pool_with_all_blocks(range("02:00:00:00:00:00", "02:00:00:00:00:01"));
    let t0 = Instant::now();
    let got = pool.allocate(1, t0, false).expect("free");
    pool.set_holder("pod/ns/a", &got);
    assert_eq!(pool.expire(t0 + Duration::from_secs(31)), 0);
    assert!(pool.is_taken(got[0].to_u64()));
}

#[test]
fn a_dry_run_holds_nothing() {
    let mut pool = pool_with_all_blocks(range("02:00:00:00:00:00", "02:00:00:00:00:01"));
    let a = pool.allocate(1, Instant::now(), true).expect("free");
    let b = pool.allocate(1, Instant::now(), true).expect("free");
    assert_eq!(a, b);
    assert_eq!(pool.counts(), (0, 0));
}

#[test]
fn an_allocation_is_all_or_nothing() {
    let mut pool = pool_with_all_blocks(range("02:00:00:00:00:00", "02:00:00:00:00:01"));
    assert!(pool.allocate(3, Instant::now(), false).is_err());
    assert_eq!(pool.counts(), (0, 0));
}

#[test]
fn the_cursor_wraps_to_the_start_of_the_blocks() {
    let r = range("02:00:00:00:00:00", "02:00:00:00:00:03");
    let mut pool = Pool::new(r, Duration::from_secs(30), 3);
    pool.add_block(Block {
        start: r.start(),
        end: r.end(),
    });
    let got = pool.allocate(2, Instant::now(), false).expect("free");
    assert_eq!(got, [mac("02:00:00:00:00:03"), mac("02:00:00:00:00:00")]);
}

#[test]
fn multicast_numbers_inside_a_range_are_never_handed_out() {
    let r = range("02:ff:ff:ff:ff:ff", "04:00:00:00:00:00");
    let mut pool = Pool::new(r, Duration::from_secs(30), 0);
    pool.add_block(Block {
        start: r.start(),
        end: r.end(),
    });
    let got = pool.allocate(2, Instant::now(), false).expect("free");
    assert_eq!(got, [mac("02:ff:ff:ff:ff:ff"), mac("04:00:00:00:00:00")]);
}

#[test]
fn only_the_replicas_own_blocks_are_used() {
    let r = range("02:00:00:00:00:00", "02:00:00:00:00:ff");
    let mut pool = Pool::new(r, Duration::from_secs(30), 0);
    let block = block_of(&r, r.start() + 8);
    pool.add_block(block);
    let got = pool.allocate(4, Instant::now(), false).expect("free");
    assert_eq!(got[0], MacAddr::from_u64(block.start));
    assert_eq!(
        pool.allocate(1, Instant::now(), false),
        Err(Shortage::NeedBlock)
    );
}

#[test]
fn a_range_change_gives_up_the_blocks_outside_it_and_keeps_what_is_held() {
    let r = range("02:00:00:00:00:00", "02:00:00:00:00:ff");
    let mut pool = pool_with_all_blocks(r);
    pool.set_holder("pod/ns/a", &[mac("02:00:00:00:00:05")]);
    let dropped = pool.set_range(range("02:00:00:00:10:00", "02:00:00:00:10:ff"), 0);
    assert_eq!(dropped.len(), 1);
    assert!(pool.blocks().is_empty());
    assert_eq!(pool.holder_count(mac("02:00:00:00:00:05")), 1);
}

/// A pool of `range` whose blocks, of `size` MACs each, were all claimed at `at`.
fn claimed_in_blocks_of(r: MacRange, size: u64, at: Instant) -> Pool {
    let mut pool = Pool::new(r, Duration::from_secs(30), 0);
    for start in (r.start()..=r.end()).step_by(size as usize) {
        let end = (start + size - 1).min(r.end());
        pool.add_block_at(Block { start, end }, at);
    }
    pool
}

const QUIET: Duration = Duration::from_secs(2);

#[test]
fn a_quiet_block_with_a_free_mac_is_given_back() {
    let t0 = Instant::now();
    let r = range("02:00:00:00:00:00", "02:00:00:00:00:01");
    let mut pool = claimed_in_blocks_of(r, 2, t0);
    let later = t0 + Duration::from_secs(3);
    assert_eq!(pool.take_back_releasable(later, QUIET).len(), 1);
    assert!(
        pool.blocks().is_empty(),
        "a block given back is not allocated from"
    );
    assert_eq!(pool.allocate(1, later, false), Err(Shortage::NeedBlock));
}

#[test]
fn a_block_just_claimed_is_kept() {
    let t0 = Instant::now();
    let r = range("02:00:00:00:00:00", "02:00:00:00:00:03");
    let mut pool = claimed_in_blocks_of(r, 2, t0);
    assert!(pool
        .take_back_releasable(t0 + Duration::from_secs(1), QUIET)
        .is_empty());
    assert_eq!(pool.blocks().len(), 2);
}

#[test]
fn a_block_that_just_gave_a_mac_is_kept() {
    let t0 = Instant::now();
    let r = range("02:00:00:00:00:00", "02:00:00:00:00:03");
    let mut pool = claimed_in_blocks_of(r, 2, t0);
    let at = t0 + Duration::from_secs(5);
    let given = pool.allocate(1, at, false).expect("a MAC");
    pool.set_holder("vm/ns/a", &given);
    let released = pool.take_back_releasable(at + Duration::from_secs(1), QUIET);
    assert_eq!(
        released,
        vec![Block {
            start: r.start() + 2,
            end: r.end()
        }]
    );
}

#[test]
fn a_block_with_a_pending_mac_is_kept() {
    let t0 = Instant::now();
    let r = range("02:00:00:00:00:00", "02:00:00:00:00:03");
    let mut pool = claimed_in_blocks_of(r, 2, t0);
    pool.hold_requested(&[mac("02:00:00:00:00:01")], t0);
    let released = pool.take_back_releasable(t0 + Duration::from_secs(5), QUIET);
    assert_eq!(
        released,
        vec![Block {
            start: r.start() + 2,
            end: r.end()
        }]
    );
}

#[test]
fn a_full_block_is_kept() {
    let t0 = Instant::now();
    let r = range("02:00:00:00:00:00", "02:00:00:00:00:03");
    let mut pool = claimed_in_blocks_of(r, 2, t0);
    pool.set_holder(
        "vm/ns/a",
        &[mac("02:00:00:00:00:02"), mac("02:00:00:00:00:03")],
    );
    let released = pool.take_back_releasable(t0 + Duration::from_secs(5), QUIET);
    assert_eq!(
        released,
        vec![Block {
            start: r.start(),
            end: r.start() + 1
        }]
    );
}

#[test]
fn a_small_range_has_64_blocks_and_a_large_one_blocks_of_4096() {
    let small = range("02:00:00:00:00:00", "02:00:00:00:00:ff");
    assert_eq!(block_size(&small), 4);
    let large = range("02:00:00:00:00:00", "02:00:00:ff:ff:ff");
    assert_eq!(block_size(&large), 4096);
    let tiny = range("02:00:00:00:00:00", "02:00:00:00:00:01");
    assert_eq!(block_size(&tiny), 1);
}

#[test]
fn the_last_block_ends_with_the_range() {
    let r = range("02:00:00:00:00:00", "02:00:00:00:01:01");
    let last = block_of(&r, r.end());
    assert_eq!(last.end, r.end());
}

#[test]
fn the_duplicates_of_vm_macs_count_every_other_object_naming_them() {
    let mut pool = Pool::new(
        range("02:00:00:00:00:00", "02:00:00:00:00:ff"),
        Duration::from_secs(30),
        0,
    );
    let (a, b) = (mac("02:00:00:00:00:01"), mac("02:00:00:00:00:02"));
    pool.set_holder("vm/ns/one", &[a, b]);
    assert_eq!(pool.extra_holders_of_macs_of("vm/"), 0);
    pool.set_holder("vm/ns/two", &[a]);
    pool.set_holder("pod/ns/p", &[a]);
    // a is named by three objects: two more than once. A pod's own duplicate is not a VM's.
    pool.set_holder("pod/ns/q", &[mac("02:00:00:00:00:03")]);
    pool.set_holder("pod/ns/r", &[mac("02:00:00:00:00:03")]);
    assert_eq!(pool.extra_holders_of_macs_of("vm/"), 2);
}
