//! macspoofchk: frames entering the bridge from the container's port must carry the
//! container's MAC as their source, or they are dropped (nftables, bridge family).
//!
//! One table of ours: a prerouting base chain looks the input port up in a verdict map, whose
//! element for our host veth jumps to the attachment's chain (accept our MAC, drop the rest).
//! The element's key is the host veth's name, which follows from the attachment, so DEL
//! removes everything in one transaction without listing first.

use cni_common::mac::MacAddr;
use cni_common::naming::AttachmentKey;
use cni_common::{Error, Result};
use nftables_netlink::matches::{ether_saddr, iifname_vmap};
use nftables_netlink::{
    ifname_key, BaseChain, Batch, Chain, ChainType, Element, Expr, Family, Hook, KeyType, Rule,
    Verdict,
};

use crate::nft::{comment, nft_error, nft_open, nft_open_existing, AttachmentTable};

pub const TABLE: AttachmentTable = AttachmentTable {
    family: Family::Bridge,
    table: "cni_bridge_spoofchk",
    maps: &[("ports", KeyType::Ifname)],
};

const PORTS: &str = "ports";

/// The table, map and base chain; the base chain is rebuilt in the same transaction, so it
/// always holds exactly its one rule, however many ADDs run at once.
fn declare(batch: &mut Batch) {
    let table = TABLE.table();
    let prerouting = Chain {
        base: Some(BaseChain {
            kind: ChainType::Filter,
            hook: Hook::Prerouting,
            priority: -300,
            policy: Verdict::Accept,
        }),
        ..Chain::new(&table, "prerouting")
    };
    batch
        .add_table(&table)
        .add_set(&TABLE.map(PORTS))
        .add_chain(&prerouting)
        .flush_chain(&prerouting)
        .add_rule(&Rule::new(&prerouting, iifname_vmap(PORTS)));
}

/// `ether saddr <mac> return comment "<label>"`, then `drop`.
fn attachment_rules(chain: &Chain, mac: &MacAddr, label: &str) -> [Rule; 2] {
    let mut ours = ether_saddr(mac.octets());
    ours.push(Expr::Verdict(Verdict::Return));
    [
        Rule::new(chain, ours).with_comment(comment(label)),
        Rule::new(chain, vec![Expr::Verdict(Verdict::Drop)]),
    ]
}

/// Installs the check for the port `host_veth`; `label` names the attachment for people
/// reading `nft list ruleset`.
pub fn spoofchk_setup(
    key: &AttachmentKey,
    host_veth: &str,
    mac: &MacAddr,
    label: &str,
) -> Result<()> {
    let chain = TABLE.chain(key);
    let mut batch = Batch::new();
    declare(&mut batch);
    batch.add_chain(&chain).flush_chain(&chain);
    for rule in attachment_rules(&chain, mac, label) {
        batch.add_rule(&rule);
    }
    batch.add_elements(
        &TABLE.map(PORTS),
        &[Element::mapping(
            ifname_key(host_veth),
            Verdict::Jump(chain.name.clone()),
        )],
    );
    nft_open()?.apply(&batch).map_err(nft_error)
}

/// Removes the check; nothing left to remove is not an error, and nothing is created (a node
/// that never ran this plugin's spoof check gets no table from its DEL). The usual case is one
/// transaction; when part of it is missing, the table is listed and what is left removed.
pub fn spoofchk_teardown(key: &AttachmentKey, host_veth: &str) -> Result<()> {
    let chain = TABLE.chain(key);
    let mut batch = Batch::new();
    batch
        .delete_elements(&TABLE.map(PORTS), &[Element::key(ifname_key(host_veth))])
        .flush_chain(&chain)
        .delete_chain(&chain);
    let Some(mut nf) = nft_open_existing()? else {
        return Ok(());
    };
    match nf.apply(&batch) {
        Ok(()) => Ok(()),
        Err(e) if e.is_not_found() => TABLE.remove_unless(|k| k != key).map(drop),
        Err(e) => Err(nft_error(e)),
    }
}

/// Whether the check for this attachment is in place with `mac`.
pub fn spoofchk_check(key: &AttachmentKey, host_veth: &str, mac: &MacAddr) -> Result<()> {
    let mut nf = nft_open()?;
    let chain = TABLE.chain_name(key);
    let port = ifname_key(host_veth);
    let jumps = nf.list_elements(&TABLE.map(PORTS)).map_err(nft_error)?;
    if !jumps.iter().any(|e| {
        e.key == port && e.verdict.as_ref().and_then(Verdict::target) == Some(chain.as_str())
    }) {
        return Err(Error::system(format!(
            "macspoofchk: no rule for port {host_veth}"
        )));
    }
    let rules = nf
        .list_rules(&TABLE.table(), Some(&chain))
        .map_err(nft_error)?;
    if !rules.iter().any(|r| compares_to(r, &mac.octets())) {
        return Err(Error::system(format!(
            "macspoofchk: the rule for port {host_veth} does not allow {mac}"
        )));
    }
    Ok(())
}

/// Whether `rule` compares something with `value`.
pub(crate) fn compares_to(rule: &Rule, value: &[u8]) -> bool {
    rule.exprs
        .iter()
        .any(|e| matches!(e, Expr::Cmp { data, .. } if data[..] == *value))
}
