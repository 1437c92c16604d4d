use super::*;
use crate::range::MacRange;

fn pool() -> Pool {
    let r = MacRange::parse("02:00:00:00:00:00", "02:00:00:00:00:ff").expect("range");
    Pool::new(r, Duration::from_secs(30), 0)
}

#[test]
fn a_claim_key_reads_back_as_its_block() {
    let b = Block {
        start: 0x0200_0000_0000,
        end: 0x0200_0000_0fff,
    };
    assert_eq!(key(&b), "020000000000-020000000fff");
    assert_eq!(parse_key(&key(&b)), Some(b));
}

#[test]
fn the_next_block_overlaps_no_claim() {
    let p = pool();
    let first = next_block(&p, &[]).expect("free");
    let second = next_block(&p, &[first]).expect("free");
    assert!(!second.overlaps(&first));
}

#[test]
fn a_claim_of_another_block_geometry_still_excludes_its_numbers() {
    let p = pool();
    let wide = Block {
        start: 0x0200_0000_0000,
        end: 0x0200_0000_00ff,
    };
    assert_eq!(next_block(&p, &[wide]), None);
}

#[test]
fn a_fresh_request_of_another_allocator_is_answered() {
    let data = BTreeMap::from([
        ("want.b".to_string(), Timestamp::now().to_string()),
        ("020000000000-020000000000".to_string(), "b".to_string()),
    ]);
    assert_eq!(askers(&data, "a"), vec!["b".to_string()]);
    assert!(
        askers(&data, "b").is_empty(),
        "its own request is not answered"
    );
}

#[test]
fn a_stale_or_unreadable_request_is_not_answered() {
    let old = Timestamp::now() - SignedDuration::from_secs(60);
    let data = BTreeMap::from([
        ("want.b".to_string(), old.to_string()),
        ("want.c".to_string(), "yesterday".to_string()),
    ]);
    assert!(askers(&data, "a").is_empty());
}

#[test]
fn a_request_is_not_read_as_a_block() {
    assert_eq!(
        parse_key("want.kubemacpool-mac-controller-manager-1-ab"),
        None
    );
}

#[test]
fn a_block_whose_macs_are_all_held_is_not_claimed() {
    let mut p = pool();
    let first = next_block(&p, &[]).expect("free");
    let held: Vec<_> = (first.start..=first.end)
        .map(net_types::MacAddr::from_u64)
        .collect();
    p.set_holder("vm/ns/a", &held);
    assert_ne!(next_block(&p, &[]), Some(first));
}
