//! ipMasq: traffic from the container's addresses to anywhere outside their own subnets leaves
//! masqueraded (nftables, inet family).
//!
//! One table of ours: the postrouting NAT chain skips multicast and looks the source address up
//! in a verdict map per family, whose elements jump to the attachment's chain. DEL does not know
//! the addresses any more (the interface may be gone), so it finds the elements by their target.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use cni_common::naming::AttachmentKey;
use cni_common::Result;
use ipnetwork::IpNetwork;
use nftables_netlink::matches::{ip_addr, ip_addr_vmap, nfproto, Addr};
use nftables_netlink::{
    BaseChain, Batch, Chain, ChainType, CmpOp, Element, Expr, Family, Hook, KeyType, Nftables,
    Rule, Verdict,
};

use crate::nft::{comment, nft_error, nft_open, AttachmentTable};
use crate::tool::{find_tool, run};

pub const TABLE: AttachmentTable = AttachmentTable {
    family: Family::Inet,
    table: "cni_bridge_masquerade",
    maps: &[("saddr4", KeyType::Ipv4Addr), ("saddr6", KeyType::Ipv6Addr)],
};

/// `priority srcnat`
const SRCNAT: i32 = 100;

/// Installs masquerading for the container's addresses, and the empty iptables chain the
/// reference plugin's DEL expects (see [`reference_marker`]).
pub fn ipmasq_setup(
    key: &AttachmentKey,
    addrs: &[IpNetwork],
    label: &str,
    reference: &ReferenceNames,
) -> Result<()> {
    let batch = setup_batch(key, addrs, label);
    let mut nf = nft_open()?;
    match nf.apply(&batch) {
        Ok(()) => {}
        // IPAM handed these addresses to this attachment, so an element for one of them can only
        // be the leftover of an attachment that is gone (a DEL by the reference plugin, which
        // knows nothing of this table): it goes, and the setup is tried once more.
        Err(e) if e.is_exists() => {
            remove_stale_elements(&mut nf, addrs).map_err(nft_error)?;
            nf.apply(&batch).map_err(nft_error)?;
        }
        Err(e) => return Err(nft_error(e)),
    }
    reference_marker(addrs, reference);
    Ok(())
}

/// The network and container the reference plugin names its masquerade chain after.
pub struct ReferenceNames<'a> {
    pub network: &'a str,
    pub container_id: &'a str,
}

/// The reference plugin (1.1 and 1.9 alike) deletes its masquerade rules from iptables on DEL,
/// and with iptables-nft it fails that DEL when its chain does not exist at all (it does not
/// recognize the "does not exist" answer). So that a node can switch back to it with pods running, ADD
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

fn setup_batch(key: &AttachmentKey, addrs: &[IpNetwork], label: &str) -> Batch {
    let table = TABLE.table();
    let postrouting = Chain {
        base: Some(BaseChain {
            kind: ChainType::Nat,
            hook: Hook::Postrouting,
            priority: SRCNAT,
            policy: Verdict::Accept,
        }),
        ..Chain::new(&table, "postrouting")
    };
    // `ip daddr 224.0.0.0/4 return`, `ip6 daddr ff00::/8 return`
    let multicast = |net: IpAddr, prefix| {
        [
            nfproto(net.is_ipv4()),
            ip_addr(Addr::Destination, net, prefix, CmpOp::Eq),
            vec![Expr::Verdict(Verdict::Return)],
        ]
        .concat()
    };
    // `ip saddr vmap @saddr4`, `ip6 saddr vmap @saddr6`
    let lookup =
        |ipv4: bool, map: &str| [nfproto(ipv4), ip_addr_vmap(Addr::Source, ipv4, map)].concat();
    let mut batch = Batch::new();
    batch
        .add_table(&table)
        .add_set(&TABLE.map("saddr4"))
        .add_set(&TABLE.map("saddr6"))
        .add_chain(&postrouting)
        .flush_chain(&postrouting)
        .add_rule(&Rule::new(
            &postrouting,
            multicast(Ipv4Addr::new(224, 0, 0, 0).into(), 4),
        ))
        .add_rule(&Rule::new(
            &postrouting,
            multicast(Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0).into(), 8),
        ))
        .add_rule(&Rule::new(&postrouting, lookup(true, "saddr4")))
        .add_rule(&Rule::new(&postrouting, lookup(false, "saddr6")));
    let chain = TABLE.chain(key);
    batch.add_chain(&chain).flush_chain(&chain);
    let label = comment(label);
    for addr in addrs {
        let ip = addr.ip();
        // `<ip> saddr <ip> <ip> daddr != <subnet> masquerade comment "<label>"`
        let masquerade = [
            nfproto(addr.is_ipv4()),
            ip_addr(Addr::Source, ip, addr_bits(ip), CmpOp::Eq),
            ip_addr(Addr::Destination, ip, addr.prefix(), CmpOp::Neq),
            vec![Expr::Masquerade],
        ]
        .concat();
        batch
            .add_rule(&Rule::new(&chain, masquerade).with_comment(label.clone()))
            .add_elements(
                &TABLE.map(map_of(&ip)),
                &[Element::mapping(
                    key_of(&ip),
                    Verdict::Jump(chain.name.clone()),
                )],
            );
    }
    batch
}

fn addr_bits(ip: IpAddr) -> u8 {
    if ip.is_ipv4() {
        32
    } else {
        128
    }
}

fn map_of(ip: &IpAddr) -> &'static str {
    if ip.is_ipv4() {
        "saddr4"
    } else {
        "saddr6"
    }
}

fn key_of(ip: &IpAddr) -> Vec<u8> {
    match ip {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

/// Deletes the elements for `addrs`, and the chains they led to when nothing else leads there,
/// as listed: applied only if nothing changed the ruleset since, else listed again.
fn remove_stale_elements(nf: &mut Nftables, addrs: &[IpNetwork]) -> nftables_netlink::Result<()> {
    nf.apply_planned(|nf| Ok((stale_elements_removal(nf, addrs)?, ())))
}

fn stale_elements_removal(
    nf: &mut Nftables,
    addrs: &[IpNetwork],
) -> nftables_netlink::Result<Batch> {
    let all = TABLE.elements(nf)?;
    let keys: Vec<Vec<u8>> = addrs.iter().map(|a| key_of(&a.ip())).collect();
    let mut batch = Batch::new();
    let mut targets = BTreeSet::new();
    for (map, element) in &all {
        if keys.contains(&element.key) {
            batch.delete_elements(map, &[Element::key(element.key.clone())]);
            targets.extend(element.verdict.as_ref().and_then(Verdict::target));
        }
    }
    for target in targets {
        let others = all.iter().any(|(_, e)| {
            e.verdict.as_ref().and_then(Verdict::target) == Some(target) && !keys.contains(&e.key)
        });
        if !others && target.starts_with("att-") {
            let chain = Chain::new(&TABLE.table(), target);
            batch.flush_chain(&chain).delete_chain(&chain);
        }
    }
    Ok(batch)
}

/// Removes masquerading for this attachment, and the iptables chain left for the reference
/// plugin (or made by it); nothing to remove is not an error.
pub fn ipmasq_teardown(key: &AttachmentKey, reference: &ReferenceNames) -> Result<()> {
    TABLE.remove_unless(|k| k != key)?;
    crate::reference::ipmasq_iptables_teardown(reference.network, reference.container_id)
}
