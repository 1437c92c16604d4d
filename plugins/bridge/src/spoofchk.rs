//! macspoofchk: frames entering the bridge from the container's port must carry the
//! container's MAC as their source, or they are dropped (nftables, bridge family).
//!
//! One table of ours: a prerouting base chain looks the input port up in a verdict map, whose
//! element for our host veth jumps to the attachment's chain (accept our MAC, drop the rest).
//! The element's key is the host veth's name, which follows from the attachment, so DEL
//! removes everything in one transaction without listing first.

use cni_common::mac::MacAddr;
use cni_common::naming::AttachmentKey;
use cni_common::Result;

use crate::nft::{nft_apply, quoted, AttachmentTable};

pub const TABLE: AttachmentTable = AttachmentTable {
    family: "bridge",
    table: "cni_bridge_spoofchk",
    maps: &[("ports", true)],
};

/// The table, map and base chain; the base chain is rebuilt in the same transaction, so it
/// always holds exactly its one rule, however many ADDs run at once.
fn declare() -> String {
    let t = format!("{} {}", TABLE.family, TABLE.table);
    format!(
        "add table {t}\n\
         add map {t} ports {{ type ifname : verdict; }}\n\
         add chain {t} prerouting {{ type filter hook prerouting priority -300; policy accept; }}\n\
         flush chain {t} prerouting\n\
         add rule {t} prerouting iifname vmap @ports\n"
    )
}

/// Installs the check for the port `host_veth`; `label` names the attachment for people
/// reading `nft list ruleset`.
pub fn spoofchk_setup(
    key: &AttachmentKey,
    host_veth: &str,
    mac: &MacAddr,
    label: &str,
) -> Result<()> {
    let t = format!("{} {}", TABLE.family, TABLE.table);
    let chain = TABLE.chain(key);
    let script = format!(
        "{declare}\
         add chain {t} {chain}\n\
         flush chain {t} {chain}\n\
         add rule {t} {chain} ether saddr {mac} return comment {label}\n\
         add rule {t} {chain} drop\n\
         add element {t} ports {{ {port} : jump {chain} }}\n",
        declare = declare(),
        label = quoted(label),
        port = quoted(host_veth),
    );
    nft_apply(&script)
}

/// Removes the check; nothing left to remove is not an error, and nothing is created (a node
/// that never ran this plugin's spoof check gets no table from its DEL). The usual case is one
/// transaction; when part of it is missing, the table is listed and what is left removed.
pub fn spoofchk_teardown(key: &AttachmentKey, host_veth: &str) -> Result<()> {
    let t = format!("{} {}", TABLE.family, TABLE.table);
    let chain = TABLE.chain(key);
    let port = quoted(host_veth);
    let script = format!(
        "delete element {t} ports {{ {port} }}\n\
         flush chain {t} {chain}\n\
         delete chain {t} {chain}\n"
    );
    match nft_apply(&script) {
        Ok(()) => Ok(()),
        Err(e) if e.msg().contains("No such file or directory") => {
            TABLE.remove_unless(|k| k != key).map(drop)
        }
        Err(e) => Err(e),
    }
}

/// Whether the check for this attachment is in place with `mac`.
pub fn spoofchk_check(key: &AttachmentKey, host_veth: &str, mac: &MacAddr) -> Result<()> {
    let objects = crate::nft::nft_list_table(TABLE.family, TABLE.table)?;
    let chain = TABLE.chain(key);
    let jumps = crate::nft::map_jumps(&objects, "ports");
    if !jumps
        .iter()
        .any(|(k, target)| k.as_str() == Some(host_veth) && *target == chain)
    {
        return Err(cni_common::Error::system(format!(
            "macspoofchk: no rule for port {host_veth}"
        )));
    }
    let mac_text = mac.to_string();
    let has_mac = objects.iter().filter_map(|o| o.get("rule")).any(|r| {
        r.get("chain").and_then(|c| c.as_str()) == Some(chain.as_str())
            && r.to_string().contains(&mac_text)
    });
    if !has_mac {
        return Err(cni_common::Error::system(format!(
            "macspoofchk: the rule for port {host_veth} does not allow {mac}"
        )));
    }
    Ok(())
}
