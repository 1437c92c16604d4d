//! ipMasq: traffic from the container's addresses to anywhere outside their own subnets leaves
//! masqueraded (nftables, inet family).
//!
//! One table of ours: the postrouting NAT chain skips multicast and looks the source address up
//! in a verdict map per family, whose elements jump to the attachment's chain. DEL does not know
//! the addresses any more (the interface may be gone), so it finds the elements by their target.

use cni_common::naming::AttachmentKey;
use cni_common::Result;
use ipnetwork::IpNetwork;

use crate::nft::{nft_apply, quoted, AttachmentTable};

pub const TABLE: AttachmentTable = AttachmentTable {
    family: "inet",
    table: "cni_bridge_masquerade",
    maps: &[("saddr4", false), ("saddr6", false)],
};

/// Installs masquerading for the container's addresses.
pub fn ipmasq_setup(key: &AttachmentKey, addrs: &[IpNetwork], label: &str) -> Result<()> {
    let t = format!("{} {}", TABLE.family, TABLE.table);
    let chain = TABLE.chain(key);
    let mut script = format!(
        "add table {t}\n\
         add map {t} saddr4 {{ type ipv4_addr : verdict; }}\n\
         add map {t} saddr6 {{ type ipv6_addr : verdict; }}\n\
         add chain {t} postrouting {{ type nat hook postrouting priority srcnat; policy accept; }}\n\
         flush chain {t} postrouting\n\
         add rule {t} postrouting ip daddr 224.0.0.0/4 return\n\
         add rule {t} postrouting ip6 daddr ff00::/8 return\n\
         add rule {t} postrouting ip saddr vmap @saddr4\n\
         add rule {t} postrouting ip6 saddr vmap @saddr6\n\
         add chain {t} {chain}\n\
         flush chain {t} {chain}\n"
    );
    let label = quoted(label);
    for addr in addrs {
        let subnet = IpNetwork::new(addr.network(), addr.prefix()).unwrap_or(*addr);
        let (proto, map) = match addr {
            IpNetwork::V4(_) => ("ip", "saddr4"),
            IpNetwork::V6(_) => ("ip6", "saddr6"),
        };
        let ip = addr.ip();
        script += &format!(
            "add rule {t} {chain} {proto} saddr {ip} {proto} daddr != {subnet} masquerade comment {label}\n\
             add element {t} {map} {{ {ip} : jump {chain} }}\n"
        );
    }
    nft_apply(&script)
}

/// Removes masquerading for this attachment; nothing to remove is not an error.
pub fn ipmasq_teardown(key: &AttachmentKey) -> Result<()> {
    TABLE.remove_unless(|k| k != key).map(drop)
}
