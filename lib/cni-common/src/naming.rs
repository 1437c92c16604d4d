//! Names derived from an attachment, the same on every call: DEL and GC find what ADD created
//! (host veths, nftables chains) without a state file.

use std::fmt;

/// FNV-1a over the parts, each followed by a NUL so that ("ab", "c") and ("a", "bc") differ.
/// Stable across builds and releases, which std's hasher does not promise.
pub fn stable_hash(parts: &[&str]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET;
    for part in parts {
        for b in part.bytes().chain(std::iter::once(0)) {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(PRIME);
        }
    }
    hash
}

/// One attachment (network, container, interface) as hashes: what the names are made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AttachmentKey {
    pub network: u64,
    pub attachment: u64,
}

impl AttachmentKey {
    pub fn new(network: &str, container_id: &str, ifname: &str) -> AttachmentKey {
        AttachmentKey {
            network: network_hash(network),
            attachment: attachment_hash(container_id, ifname),
        }
    }

    /// [`host_veth_name`] of this attachment.
    pub fn host_veth_name(&self) -> String {
        veth_name(self.attachment)
    }
}

/// The attachment's half of an [`AttachmentKey`].
pub fn attachment_hash(container_id: &str, ifname: &str) -> u64 {
    stable_hash(&[container_id, ifname])
}

/// The host end of an attachment's veth: `veth` and 11 hex digits (44 bits of the attachment
/// hash), which fits IFNAMSIZ. An interface name is unique per container, so the network is not
/// needed to tell attachments apart.
pub fn host_veth_name(container_id: &str, ifname: &str) -> String {
    veth_name(attachment_hash(container_id, ifname))
}

fn veth_name(attachment: u64) -> String {
    format!("veth{:011x}", attachment >> 20)
}

/// The network's half of an [`AttachmentKey`].
pub fn network_hash(network: &str) -> u64 {
    stable_hash(&[network])
}

/// `<network hash>-<attachment hash>`, 33 characters: the tag put on what ADD creates.
impl fmt::Display for AttachmentKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}-{:016x}", self.network, self.attachment)
    }
}

impl AttachmentKey {
    /// Reads back a tag written by `Display`.
    pub fn parse(tag: &str) -> Option<AttachmentKey> {
        let (net, att) = tag.split_once('-')?;
        if net.len() != 16 || att.len() != 16 {
            return None;
        }
        Some(AttachmentKey {
            network: u64::from_str_radix(net, 16).ok()?,
            attachment: u64::from_str_radix(att, 16).ok()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_hash_is_fnv1a_and_separates_parts() {
        // FNV-1a 64 of the single byte 0 (an empty part plus its separator).
        assert_eq!(stable_hash(&[""]), 0xaf63_bd4c_8601_b7df);
        assert_ne!(stable_hash(&["ab", "c"]), stable_hash(&["a", "bc"]));
    }

    #[test]
    fn host_veth_names_fit_ifnamsiz_and_follow_the_attachment() {
        let a = AttachmentKey::new("net", "c1", "net1");
        assert_eq!(a.host_veth_name().len(), 15);
        assert_eq!(
            a.host_veth_name(),
            AttachmentKey::new("other", "c1", "net1").host_veth_name()
        );
        assert_ne!(
            a.host_veth_name(),
            AttachmentKey::new("net", "c1", "net2").host_veth_name()
        );
    }

    #[test]
    fn host_veth_names_do_not_change_between_versions() {
        // DEL and GC of what an earlier build made rely on this.
        assert_eq!(host_veth_name("abc", "net1"), "veth2a94fde06e9");
    }

    #[test]
    fn tags_read_back() {
        let a = AttachmentKey::new("net", "c1", "net1");
        assert_eq!(AttachmentKey::parse(&a.to_string()), Some(a));
        assert_eq!(AttachmentKey::parse("x-y"), None);
    }
}
