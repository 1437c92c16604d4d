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
mod tests;
