//! What the pod and VM webhooks share: the check of a MAC a user names, and JSON Pointer
//! escaping for the patches they return.

use net_types::MacAddr;

/// A MAC named by a user: it must parse, and be unicast and not all zeros.
pub fn parse_unicast(s: &str) -> Result<MacAddr, &'static str> {
    let mac = MacAddr::parse(s).map_err(|_| "is not a MAC address")?;
    if mac.is_multicast() {
        return Err("is a multicast address");
    }
    if mac.is_zero() {
        return Err("is all zeros");
    }
    Ok(mac)
}

/// A key as one JSON Pointer (RFC 6901) token: `~` as `~0`, `/` as `~1`.
pub fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
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
}
