//! What the reference (Go) bridge plugin leaves on a node for an attachment, named exactly as it
//! names it, so that DEL and GC of this plugin also take down attachments the reference plugin
//! made: a node switches implementations with its pods running.
//!
//! - macspoofchk: table `bridge nat`, base chain `PREROUTING`; per attachment the chains
//!   `cni-br-iface-<container id>-<ifname>` and `...-mac`, reached from `PREROUTING` by a rule
//!   `iifname "<host veth>" jump cni-br-iface-...` (pkg/link/spoofcheck.go).
//! - ipMasq through iptables (every release): in table `nat`, a chain
//!   `CNI-<24 hex digits of sha512(network + container id)>` and a `POSTROUTING` rule
//!   `-s <ip> -j <chain>`, all with the comment `name: "<network>" id: "<container id>"`, for
//!   IPv4 and IPv6 alike (pkg/ip/ipmasq_iptables_linux.go).
//! - ipMasq through nftables (releases from 1.6): table `inet cni_plugins_masquerade`, one rule
//!   per address in chain `masq_checks`, its comment starting with
//!   `<16 hex of sha512(network)>-<16 hex of sha512(ifname:container id)>`
//!   (pkg/ip/ipmasq_nftables_linux.go).
//!
//! The tables and base chains the reference plugin shares between attachments stay, as its own
//! DEL leaves them: `bridge nat` is also where ebtables-nft keeps its nat table.

use std::collections::{BTreeSet, HashSet};

use cni_common::netlink::Netlink;
use cni_common::Result;
use nftables_netlink::{ifname_from_key, Batch, Chain, CmpOp, Expr, Family, MetaKey, Rule, Table};
use sha2::{Digest, Sha512};

use crate::nft::{nft_error, nft_open, nft_open_existing};
use crate::spoofchk::compares_to;
use crate::tool::{find_tool, run};

fn sha512_hex(text: &str) -> String {
    Sha512::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// macspoofchk

const SPOOF_FAMILY: Family = Family::Bridge;
const SPOOF_TABLE: &str = "nat";
const SPOOF_BASE_CHAIN: &str = "PREROUTING";
const SPOOF_CHAIN_PREFIX: &str = "cni-br-iface-";

fn spoof_table() -> Table {
    Table::new(SPOOF_FAMILY, SPOOF_TABLE)
}

/// The attachment's first chain; the second one is this plus `-mac`.
pub fn spoofchk_chain(container_id: &str, ifname: &str) -> String {
    format!("{SPOOF_CHAIN_PREFIX}{container_id}-{ifname}")
}

/// A rule of `PREROUTING` that sends a port's frames to an attachment's chain.
struct SpoofJump {
    rule: Rule,
    port: Option<String>,
    target: String,
}

/// The jumps to attachments' chains among the rules of `PREROUTING`; the port is the name an
/// `iifname "<port>"` match compares with.
fn spoof_jumps(rules: &[Rule]) -> Vec<SpoofJump> {
    rules
        .iter()
        .filter(|r| r.chain == SPOOF_BASE_CHAIN)
        .filter_map(|r| {
            let target = r.exprs.iter().find_map(|e| match e {
                Expr::Verdict(v) => v.target(),
                _ => None,
            })?;
            if !target.starts_with(SPOOF_CHAIN_PREFIX) {
                return None;
            }
            let port = r.exprs.windows(2).find_map(|pair| match pair {
                [Expr::Meta {
                    key: MetaKey::Iifname,
                    dreg,
                }, Expr::Cmp {
                    op: CmpOp::Eq,
                    sreg,
                    data,
                }] if dreg == sreg => Some(ifname_from_key(data)),
                _ => None,
            });
            Some(SpoofJump {
                rule: r.clone(),
                port,
                target: target.to_string(),
            })
        })
        .collect()
}

/// What removes the attachments' chains (given by their first chain): the rules jumping to
/// them, and those of their chains that exist, in the order they must go.
fn spoof_removal(
    rules: &[Rule],
    existing: &[Chain],
    chains: &BTreeSet<String>,
) -> (Vec<Rule>, Vec<Chain>) {
    let jumps = spoof_jumps(rules)
        .into_iter()
        .filter(|j| chains.contains(&j.target))
        .map(|j| j.rule)
        .collect();
    let mut doomed = Vec::new();
    for chain in chains {
        for name in [chain.clone(), format!("{chain}-mac")] {
            if let Some(c) = existing.iter().find(|c| c.name == name) {
                doomed.push(c.clone());
            }
        }
    }
    (jumps, doomed)
}

/// Removes, in one transaction, the attachments' spoof checks given by their first chain.
/// Removes the spoof-check `chains` and the rules jumping to them, in one transaction bound to
/// the ruleset it listed (planned again if the ruleset changed meanwhile).
fn spoof_remove(nf: &mut nftables_netlink::Nftables, chains: &BTreeSet<String>) -> Result<()> {
    nf.apply_planned(|nf| {
        let rules = nf.list_rules(&spoof_table(), Some(SPOOF_BASE_CHAIN))?;
        let existing = nf.list_chains(&spoof_table())?;
        let (jumps, doomed) = spoof_removal(&rules, &existing, chains);
        let mut batch = Batch::new();
        for rule in &jumps {
            batch.delete_rule(rule);
        }
        for chain in &doomed {
            batch.flush_chain(chain);
        }
        for chain in &doomed {
            batch.delete_chain(chain);
        }
        Ok((batch, ()))
    })
    .map_err(nft_error)
}

fn prerouting_rules(nf: &mut nftables_netlink::Nftables) -> Result<Vec<Rule>> {
    nf.list_rules(&spoof_table(), Some(SPOOF_BASE_CHAIN))
        .map_err(nft_error)
}

/// DEL: the attachment's spoof check, when the reference plugin made one.
pub fn spoofchk_teardown(container_id: &str, ifname: &str) -> Result<()> {
    let Some(mut nf) = nft_open_existing()? else {
        return Ok(());
    };
    let chains = BTreeSet::from([spoofchk_chain(container_id, ifname)]);
    spoof_remove(&mut nf, &chains)
}

/// GC: the spoof checks whose port no longer exists. The reference plugin's names carry no
/// network, so the port is what tells a dead attachment: a veth goes with its namespace.
pub fn spoofchk_gc(nl: &Netlink) -> Result<()> {
    let Some(mut nf) = nft_open_existing()? else {
        return Ok(());
    };
    let rules = prerouting_rules(&mut nf)?;
    let mut dead = BTreeSet::new();
    for jump in spoof_jumps(&rules) {
        let gone = match &jump.port {
            Some(port) => nl.link_show(port)?.is_none(),
            None => false,
        };
        if gone {
            dead.insert(jump.target);
        }
    }
    if dead.is_empty() {
        return Ok(());
    }
    spoof_remove(&mut nf, &dead)
}

/// CHECK: the attachment's spoof check as the reference plugin made it, for port `host_veth` and
/// `mac`.
pub fn spoofchk_check(
    container_id: &str,
    ifname: &str,
    host_veth: &str,
    mac: &cni_common::mac::MacAddr,
) -> Result<()> {
    let mut nf = nft_open()?;
    let chain = spoofchk_chain(container_id, ifname);
    let jumped = spoof_jumps(&prerouting_rules(&mut nf)?)
        .iter()
        .any(|j| j.target == chain && j.port.as_deref() == Some(host_veth));
    let mac_chain = format!("{chain}-mac");
    let allows_mac = nf
        .list_rules(&spoof_table(), Some(&mac_chain))
        .map_err(nft_error)?
        .iter()
        .any(|r| compares_to(r, &mac.octets()));
    if !jumped || !allows_mac {
        return Err(cni_common::Error::system(format!(
            "macspoofchk: no rule for port {host_veth} allowing {mac}"
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// ipMasq through iptables

/// `CNI-` and 24 hex digits: the chain of one container's masquerade rules.
pub fn iptables_chain(network: &str, container_id: &str) -> String {
    let hash = sha512_hex(&format!("{network}{container_id}"));
    format!("CNI-{}", &hash[..24])
}

/// The comment on each of its rules (Go's `%q`, which for these names is plain quoting).
pub fn iptables_comment(network: &str, container_id: &str) -> String {
    format!("name: {network:?} id: {container_id:?}")
}

/// The two tools, each with its restore companion.
const IPTABLES: [(&str, &str); 2] = [
    ("iptables", "iptables-restore"),
    ("ip6tables", "ip6tables-restore"),
];

/// One line of `iptables -S` split into words; quoted words lose their quotes and escapes.
fn save_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let mut word = String::new();
        if c == '"' {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => word.extend(chars.next()),
                    '"' => break,
                    c => word.push(c),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                word.push(c);
                chars.next();
            }
        }
        words.push(word);
    }
    words
}

/// The value following `flag` among a rule's words.
fn word_after<'a>(words: &'a [String], flag: &str) -> Option<&'a str> {
    let at = words.iter().position(|w| w == flag)?;
    words.get(at + 1).map(String::as_str)
}

/// `name: "N" id: "C"` read back.
fn parse_comment(comment: &str) -> Option<(String, String)> {
    let words = save_words(comment);
    match words.as_slice() {
        [name, network, id, container] if name == "name:" && id == "id:" => {
            Some((network.clone(), container.clone()))
        }
        _ => None,
    }
}

/// Removes `chains` from table nat with `tool`, given `tool -S`'s lines: the POSTROUTING rules
/// jumping to them, then the chains, in one `iptables-restore` transaction.
fn iptables_remove(tool: &(&str, &str), lines: &[String], chains: &BTreeSet<String>) -> Result<()> {
    let mut script = String::new();
    for line in lines {
        let words = save_words(line);
        if words.first().map(String::as_str) == Some("-A")
            && words.get(1).map(String::as_str) == Some("POSTROUTING")
            && word_after(&words, "-j").is_some_and(|j| chains.contains(j))
        {
            // A line of `-S` is in the restore format already.
            script += &format!("-D{}\n", &line[2..]);
        }
    }
    for chain in chains {
        if lines.iter().any(|l| l == &format!("-N {chain}")) {
            script += &format!("-F {chain}\n-X {chain}\n");
        }
    }
    if script.is_empty() {
        return Ok(());
    }
    let restore = find_tool(tool.1).ok_or_else(|| {
        cni_common::Error::system(format!("{} is needed to remove {chains:?}", tool.1))
    })?;
    run(
        &restore,
        &["--noflush", "--wait"],
        Some(&format!("*nat\n{script}COMMIT\n")),
    )
    .map(drop)
}

/// `<tool> -S` of table nat, one line per chain or rule; None when the tool is not installed, or
/// cannot read the table (a kernel without IPv6 NAT, for one): then nothing can be in it either.
fn iptables_nat_lines(tool: &str) -> Result<Option<Vec<String>>> {
    let Some(binary) = find_tool(tool) else {
        return Ok(None);
    };
    match run(&binary, &["--wait", "-t", "nat", "-S"], None) {
        Ok(out) => Ok(Some(out.lines().map(str::to_string).collect())),
        Err(e) => {
            tracing::info!("{tool} cannot list table nat, so nothing is removed from it: {e}");
            Ok(None)
        }
    }
}

/// DEL: the container's masquerade chains of this network, IPv4 and IPv6. They are found by
/// name, so this works without the container's addresses (the reference plugin needs them, and
/// leaks the rules when the namespace went first).
pub fn ipmasq_iptables_teardown(network: &str, container_id: &str) -> Result<()> {
    let chains = BTreeSet::from([iptables_chain(network, container_id)]);
    for tool in &IPTABLES {
        if let Some(lines) = iptables_nat_lines(tool.0)? {
            iptables_remove(tool, &lines, &chains)?;
        }
    }
    Ok(())
}

/// GC: the masquerade chains of this network's containers that the runtime no longer lists.
pub fn ipmasq_iptables_gc(network: &str, valid_containers: &HashSet<&str>) -> Result<()> {
    for tool in &IPTABLES {
        let Some(lines) = iptables_nat_lines(tool.0)? else {
            continue;
        };
        let mut dead = BTreeSet::new();
        for line in &lines {
            let words = save_words(line);
            let Some((net, container)) = word_after(&words, "--comment").and_then(parse_comment)
            else {
                continue;
            };
            if net != network || valid_containers.contains(container.as_str()) {
                continue;
            }
            // The comment alone is not proof: the chain must be the one named after it.
            let chain = iptables_chain(&net, &container);
            let in_chain = words.get(1).map(String::as_str) == Some(chain.as_str());
            if in_chain || word_after(&words, "-j") == Some(chain.as_str()) {
                dead.insert(chain);
            }
        }
        if !dead.is_empty() {
            iptables_remove(tool, &lines, &dead)?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// ipMasq through nftables

const MASQ_FAMILY: Family = Family::Inet;
const MASQ_TABLE: &str = "cni_plugins_masquerade";
const MASQ_CHAIN: &str = "masq_checks";

fn masq_network_hash(network: &str) -> String {
    sha512_hex(network)[..16].to_string()
}

/// The start of the comment of each of the attachment's rules.
pub fn masq_instance_hash(network: &str, ifname: &str, container_id: &str) -> String {
    format!(
        "{}-{}",
        masq_network_hash(network),
        &sha512_hex(&format!("{ifname}:{container_id}"))[..16]
    )
}

/// Deletes, in one transaction, the rules of `masq_checks` whose comment `doomed` accepts.
fn masq_remove(doomed: impl Fn(&str) -> bool) -> Result<()> {
    let Some(mut nf) = nft_open_existing()? else {
        return Ok(());
    };
    let table = Table::new(MASQ_FAMILY, MASQ_TABLE);
    // Bound to the ruleset it listed: a rule's handle is only good for that generation.
    nf.apply_planned(|nf| {
        let mut batch = Batch::new();
        for rule in &nf.list_rules(&table, Some(MASQ_CHAIN))? {
            if rule.comment.as_deref().is_some_and(&doomed) {
                batch.delete_rule(rule);
            }
        }
        Ok((batch, ()))
    })
    .map_err(nft_error)
}

/// DEL: the attachment's masquerade rules, when a reference plugin with the nftables backend
/// made them.
pub fn ipmasq_nft_teardown(network: &str, ifname: &str, container_id: &str) -> Result<()> {
    let hash = masq_instance_hash(network, ifname, container_id);
    masq_remove(|comment| comment.starts_with(&hash))
}

/// GC: this network's masquerade rules of attachments the runtime no longer lists.
pub fn ipmasq_nft_gc(network: &str, valid: &[(String, String)]) -> Result<()> {
    let prefix = format!("{}-", masq_network_hash(network));
    let keep: HashSet<String> = valid
        .iter()
        .map(|(container_id, ifname)| masq_instance_hash(network, ifname, container_id))
        .collect();
    masq_remove(|comment| {
        comment.starts_with(&prefix)
            && !keep.contains(comment.get(..prefix.len() + 16).unwrap_or(comment))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use nftables_netlink::Verdict;

    #[test]
    fn names_follow_the_reference_plugin() {
        // The digits are `printf net1c1 | sha512sum` and so on.
        assert_eq!(iptables_chain("net1", "c1"), "CNI-c2d892b58e87e28a12fe6479");
        assert_eq!(iptables_comment("net1", "c1"), r#"name: "net1" id: "c1""#);
        assert_eq!(spoofchk_chain("c1", "net1"), "cni-br-iface-c1-net1");
        assert_eq!(
            masq_instance_hash("net1", "eth0", "c1"),
            "8e48f37d5de60467-f4d01f2ef4b92245"
        );
    }

    #[test]
    fn sha512_is_the_standard_one() {
        assert_eq!(&sha512_hex("abc")[..32], "ddaf35a193617abacc417349ae204131");
    }

    #[test]
    fn iptables_save_lines_split_with_their_quoted_comment() {
        let line = r#"-A POSTROUTING -s 10.1.0.2/32 -m comment --comment "name: \"n\" id: \"c\"" -j CNI-abc"#;
        let words = save_words(line);
        assert_eq!(word_after(&words, "-j"), Some("CNI-abc"));
        let comment = word_after(&words, "--comment").expect("comment");
        assert_eq!(
            parse_comment(comment),
            Some(("n".to_string(), "c".to_string()))
        );
    }

    fn rule(chain: &str, handle: u64, exprs: Vec<Expr>) -> Rule {
        Rule {
            handle: Some(handle),
            ..Rule::new(&Chain::new(&spoof_table(), chain), exprs)
        }
    }

    #[test]
    fn spoof_jumps_are_read_from_the_listing() {
        let jump = |target: &str| Expr::Verdict(Verdict::Jump(target.into()));
        let rules = vec![
            rule(
                "PREROUTING",
                7,
                vec![
                    Expr::Meta {
                        key: MetaKey::Iifname,
                        dreg: 1,
                    },
                    Expr::Cmp {
                        op: CmpOp::Eq,
                        sreg: 1,
                        data: b"veth1\0".to_vec(),
                    },
                    jump("cni-br-iface-c1-net1"),
                ],
            ),
            rule("PREROUTING", 8, vec![jump("someone-else")]),
        ];
        let existing = [
            Chain::new(&spoof_table(), "cni-br-iface-c1-net1"),
            Chain::new(&spoof_table(), "cni-br-iface-c1-net1-mac"),
        ];
        let jumps = spoof_jumps(&rules);
        assert_eq!(jumps.len(), 1);
        assert_eq!(jumps[0].port.as_deref(), Some("veth1"));
        let (doomed_rules, doomed_chains) = spoof_removal(
            &rules,
            &existing,
            &BTreeSet::from(["cni-br-iface-c1-net1".to_string()]),
        );
        assert_eq!(
            doomed_rules.iter().map(|r| r.handle).collect::<Vec<_>>(),
            [Some(7)]
        );
        assert_eq!(doomed_chains, existing);
    }

    #[test]
    fn only_existing_chains_of_an_attachment_are_removed() {
        let existing = [Chain::new(&spoof_table(), "cni-br-iface-c1-net1")];
        let (rules, chains) = spoof_removal(
            &[],
            &existing,
            &BTreeSet::from(["cni-br-iface-c1-net1".to_string()]),
        );
        assert!(rules.is_empty());
        assert_eq!(chains, existing);
    }
}
