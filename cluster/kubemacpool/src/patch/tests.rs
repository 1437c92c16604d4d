use super::*;

#[test]
fn a_slash_in_a_key_is_escaped_for_a_pointer() {
    assert_eq!(
        escape_pointer("k8s.v1.cni.cncf.io/networks"),
        "k8s.v1.cni.cncf.io~1networks"
    );
    assert_eq!(escape_pointer("a~b/c"), "a~0b~1c");
}

#[test]
fn broadcast_and_zero_macs_are_not_unicast_addresses_to_hand_out() {
    assert!(parse_unicast("ff:ff:ff:ff:ff:ff").is_err());
    assert!(parse_unicast("00:00:00:00:00:00").is_err());
    assert!(parse_unicast("02:00:00:00:00:01").is_ok());
}
