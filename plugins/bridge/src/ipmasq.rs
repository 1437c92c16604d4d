//! ipMasq: traffic from the container's addresses to anywhere outside their own subnets leaves
//! masqueraded (nftables, inet family).
//!
//! One table of ours: the postrouting NAT chain skips multicast and looks the source address up
//! in a verdict map per family, whose elements jump to the attachment's chain. DEL does not know
//! the addresses any more (the interface may be gone), so it finds the elements by their target.

use cni_common::naming::AttachmentKey;
use cni_common::Result;
use ipnetwork::IpNetwork;

use crate::nft::{find_tool, map_jumps, nft_apply, nft_list_table, quoted, run, AttachmentTable};

pub const TABLE: AttachmentTable = AttachmentTable {
    family: "inet",
    table: "cni_bridge_masquerade",
    maps: &[("saddr4", false), ("saddr6", false)],
};

/// Installs masquerading for the container's addresses, and the empty iptables chain the
/// reference plugin's DEL expects (see [`reference_marker`]).
pub fn ipmasq_setup(
    key: &AttachmentKey,
    addrs: &[IpNetwork],
    label: &str,
    reference: &ReferenceNames,
) -> Result<()> {
    let script = setup_script(key, addrs, label);
    match nft_apply(&script) {
        Ok(()) => {}
        // IPAM handed these addresses to this attachment, so an element for one of them can only
        // be the leftover of an attachment that is gone (a DEL by the reference plugin, which
        // knows nothing of this table): it goes, and the setup is tried once more.
        Err(e) if e.msg().contains("File exists") => {
            remove_stale_elements(addrs)?;
            nft_apply(&script)?;
        }
        Err(e) => return Err(e),
    }
    reference_marker(addrs, reference);
    Ok(())
}

/// The network and container the reference plugin names its masquerade chain after.
pub struct ReferenceNames<'a> {
    pub network: &'a str,
    pub container_id: &'a str,
}

/// The reference plugin 1.1 deletes its masquerade rules from iptables on DEL, and with
/// iptables-nft it fails that DEL when its chain does not exist at all (it does not recognize
/// the "does not exist" answer). So that a node can switch back to it with pods running, ADD
/// leaves the chain it looks for, IPv4 and IPv6 as the addresses need. Nothing jumps to it; its
/// one rule, a RETURN, carries the reference plugin's comment, by which GC finds the chain of an
/// attachment that is gone (DEL finds it by name). Nothing to do where iptables is not installed
/// (the reference plugin needs it).
fn reference_marker(addrs: &[IpNetwork], names: &ReferenceNames) {
    let chain = crate::reference::iptables_chain(names.network, names.container_id);
    let comment = crate::reference::iptables_comment(names.network, names.container_id);
    // The restore format quotes like the shell's double quotes.
    let comment = comment.replace('\\', "\\\\").replace('"', "\\\"");
    for (v4, tool) in [(true, "iptables-restore"), (false, "ip6tables-restore")] {
        if !addrs.iter().any(|a| a.is_ipv4() == v4) {
            continue;
        }
        let Some(restore) = find_tool(tool) else {
            continue;
        };
        // Declaring a chain creates it, or empties it if it is there. It only matters if the node
        // goes back to the reference plugin: a failure is reported, not fatal.
        let script = format!(
            "*nat\n:{chain} - [0:0]\n-A {chain} -m comment --comment \"{comment}\" -j RETURN\nCOMMIT\n"
        );
        if let Err(e) = run(&restore, &["--noflush", "--wait"], Some(&script)) {
            eprintln!(
                "note: {tool} could not create the chain {chain} that the reference plugin's DEL \
                 expects: {e}"
            );
        }
    }
}

fn setup_script(key: &AttachmentKey, addrs: &[IpNetwork], label: &str) -> String {
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
        let (proto, map) = family(addr);
        let ip = addr.ip();
        script += &format!(
            "add rule {t} {chain} {proto} saddr {ip} {proto} daddr != {subnet} masquerade comment {label}\n\
             add element {t} {map} {{ {ip} : jump {chain} }}\n"
        );
    }
    script
}

fn family(addr: &IpNetwork) -> (&'static str, &'static str) {
    match addr {
        IpNetwork::V4(_) => ("ip", "saddr4"),
        IpNetwork::V6(_) => ("ip6", "saddr6"),
    }
}

/// Deletes the elements for `addrs`, and the chains they led to when nothing else leads there.
fn remove_stale_elements(addrs: &[IpNetwork]) -> Result<()> {
    let (f, t) = (TABLE.family, TABLE.table);
    let objects = nft_list_table(f, t)?;
    let mut script = String::new();
    let mut targets = std::collections::BTreeSet::new();
    let mut all = Vec::new();
    for (map, _) in TABLE.maps {
        all.extend(map_jumps(&objects, map));
    }
    for addr in addrs {
        let (_, map) = family(addr);
        let ip = addr.ip().to_string();
        for (elem, target) in map_jumps(&objects, map) {
            if elem.as_str() == Some(ip.as_str()) {
                script += &format!("delete element {f} {t} {map} {{ {ip} }}\n");
                targets.insert(target);
            }
        }
    }
    for target in targets {
        let others = all
            .iter()
            .filter(|(elem, to)| {
                *to == target
                    && !addrs
                        .iter()
                        .any(|a| elem.as_str() == Some(a.ip().to_string().as_str()))
            })
            .count();
        if others == 0 && target.starts_with("att-") {
            script += &format!("flush chain {f} {t} {target}\ndelete chain {f} {t} {target}\n");
        }
    }
    if script.is_empty() {
        return Ok(());
    }
    nft_apply(&script)
}

/// Removes masquerading for this attachment, and the iptables chain left for the reference
/// plugin (or made by it); nothing to remove is not an error.
pub fn ipmasq_teardown(key: &AttachmentKey, reference: &ReferenceNames) -> Result<()> {
    TABLE.remove_unless(|k| k != key)?;
    crate::reference::ipmasq_iptables_teardown(reference.network, reference.container_id)
}
