use super::*;

#[test]
fn a_range_of_two_unicast_ends_in_order_parses() {
    let r = MacRange::parse("02:00:00:00:00:00", "02:00:00:00:00:ff").expect("valid");
    assert_eq!(r.span(), 256);
    assert!(r.contains(MacAddr::parse("02:00:00:00:00:ff").expect("mac")));
    assert!(!r.contains(MacAddr::parse("02:00:00:00:01:00").expect("mac")));
}

#[test]
fn ends_compare_as_numbers_not_byte_by_byte() {
    assert!(MacRange::parse("02:00:00:00:01:00", "02:00:00:00:00:ff").is_err());
}

#[test]
fn a_one_address_range_is_refused() {
    assert!(matches!(
        MacRange::parse("02:00:00:00:00:01", "02:00:00:00:00:01"),
        Err(RangeError::Order { .. })
    ));
}

#[test]
fn a_multicast_end_is_refused() {
    assert!(matches!(
        MacRange::parse("02:00:00:00:00:00", "03:00:00:00:00:00"),
        Err(RangeError::Multicast { .. })
    ));
}

#[test]
fn text_that_is_not_a_mac_is_refused() {
    assert!(matches!(
        MacRange::parse("this:aint:right", "02:00:00:00:00:00"),
        Err(RangeError::NotAMac { .. })
    ));
}

#[test]
fn numbers_with_an_odd_first_octet_are_multicast() {
    assert!(is_multicast_number(0x03_00_00_00_00_00));
    assert!(!is_multicast_number(0x02_ff_ff_ff_ff_ff));
}
