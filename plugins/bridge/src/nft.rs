//! nftables for the plugin, through netlink ([`nftables_netlink`]): its errors as CNI errors,
//! rule comments as earlier releases wrote them, and the tables of ours that hold one chain per
//! attachment.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::ops::{Deref, DerefMut};

use cni_common::naming::AttachmentKey;
use cni_common::{Error, Result};
use nftables_netlink::{Batch, Chain, Element, Family, KeyType, Nftables, Set, Table};

/// A library error as the plugin reports it: a system error, with the whole chain of causes.
pub fn nft_error(err: nftables_netlink::Error) -> Error {
    Error::system(cni_common::report(&err))
}

thread_local! {
    /// The thread's connection, once opened. It is kept until the process exits because the
    /// kernel makes the release of an nf_tables socket wait until the transactions committed
    /// through it are freed, which takes an RCU grace period: released at exit, after the rest
    /// of the ADD or DEL, that wait has mostly passed already. The plugin makes its nftables
    /// changes from threads in the node's namespace; a connection stays in the namespace it was
    /// opened in.
    static CONNECTION: RefCell<Option<Nftables>> = const { RefCell::new(None) };
}

/// A connection to nf_tables, given back to the thread's cache when dropped.
pub struct Nft(Option<Nftables>);

impl Deref for Nft {
    type Target = Nftables;

    fn deref(&self) -> &Nftables {
        self.0
            .as_ref()
            .unwrap_or_else(|| unreachable!("taken only in drop"))
    }
}

impl DerefMut for Nft {
    fn deref_mut(&mut self) -> &mut Nftables {
        self.0
            .as_mut()
            .unwrap_or_else(|| unreachable!("taken only in drop"))
    }
}

impl Drop for Nft {
    fn drop(&mut self) {
        let nf = self.0.take();
        CONNECTION.with(|c| {
            let mut cached = c.borrow_mut();
            if cached.is_none() {
                *cached = nf;
            }
        });
    }
}

fn connect() -> nftables_netlink::Result<Nft> {
    match CONNECTION.with(|c| c.borrow_mut().take()) {
        Some(nf) => Ok(Nft(Some(nf))),
        None => Nftables::new().map(|nf| Nft(Some(nf))),
    }
}

/// nf_tables of the plugin's namespace.
pub fn nft_open() -> Result<Nft> {
    connect().map_err(nft_error)
}

/// nf_tables of the plugin's namespace, for removing and checking: none on a kernel without
/// nf_tables, where nothing of ours or the reference plugin's can be.
pub fn nft_open_existing() -> Result<Option<Nft>> {
    match connect() {
        Ok(nf) => Ok(Some(nf)),
        Err(e) if e.errno() == Some(nix::errno::Errno::EPROTONOSUPPORT as i32) => Ok(None),
        Err(e) => Err(nft_error(e)),
    }
}

/// A rule comment as earlier releases wrote it through an nft script, which could not carry
/// quotes, backslashes, line breaks, `;` or `#`: the same text for the same attachment.
pub fn comment(label: &str) -> String {
    label
        .chars()
        .filter(|c| !matches!(c, '"' | '\\' | '\n' | '\r' | ';' | '#'))
        .take(120)
        .collect()
}

/// A table of ours holding one chain per attachment, `att-<network hash>-<attachment hash>`,
/// reached through verdict maps whose elements jump to it.
pub struct AttachmentTable {
    pub family: Family,
    pub table: &'static str,
    /// The verdict maps, with the type of their keys.
    pub maps: &'static [(&'static str, KeyType)],
}

impl AttachmentTable {
    pub fn table(&self) -> Table {
        Table::new(self.family, self.table)
    }

    /// The verdict map `name` of the table.
    pub fn map(&self, name: &str) -> Set {
        let key = self
            .maps
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(KeyType::Ifname, |(_, k)| *k);
        Set::verdict_map(&self.table(), name, key)
    }

    pub fn chain_name(&self, key: &AttachmentKey) -> String {
        format!("att-{key}")
    }

    pub fn chain(&self, key: &AttachmentKey) -> Chain {
        Chain::new(&self.table(), self.chain_name(key))
    }

    /// Every element of the table's maps, with its map.
    pub(crate) fn elements(
        &self,
        nf: &mut Nftables,
    ) -> nftables_netlink::Result<Vec<(Set, Element)>> {
        let mut all = Vec::new();
        for (name, _) in self.maps {
            let map = self.map(name);
            for element in nf.list_elements(&map)? {
                all.push((map.clone(), element));
            }
        }
        Ok(all)
    }

    /// Deletes, in one transaction, the chains of every attachment that `keep` refuses and the
    /// map elements leading to them; returns those attachments. Nothing to do when the table
    /// does not exist. The deletion is planned from a listing, and applied only if nothing
    /// changed the ruleset since (an ADD or DEL running meanwhile): otherwise it is listed and
    /// planned again.
    pub fn remove_unless(
        &self,
        keep: impl Fn(&AttachmentKey) -> bool,
    ) -> Result<Vec<AttachmentKey>> {
        let Some(mut nf) = nft_open_existing()? else {
            return Ok(Vec::new());
        };
        nf.apply_planned(|nf| self.removal(nf, &keep))
            .map_err(nft_error)
    }

    fn removal(
        &self,
        nf: &mut Nftables,
        keep: &impl Fn(&AttachmentKey) -> bool,
    ) -> nftables_netlink::Result<(Batch, Vec<AttachmentKey>)> {
        let mut batch = Batch::new();
        let mut removed = Vec::new();
        let chains = nf.list_chains(&self.table())?;
        let doomed: BTreeSet<String> = chains
            .iter()
            .filter_map(|c| {
                let key = c.name.strip_prefix("att-").and_then(AttachmentKey::parse)?;
                (!keep(&key)).then(|| {
                    removed.push(key);
                    c.name.clone()
                })
            })
            .collect();
        if doomed.is_empty() {
            return Ok((batch, removed));
        }
        for (map, element) in self.elements(nf)? {
            let target = element.verdict.as_ref().and_then(|v| v.target());
            if target.is_some_and(|t| doomed.contains(t)) {
                batch.delete_elements(&map, &[Element::key(element.key)]);
            }
        }
        for chain in chains.iter().filter(|c| doomed.contains(&c.name)) {
            batch.flush_chain(chain).delete_chain(chain);
        }
        Ok((batch, removed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_lose_what_an_nft_script_could_not_carry() {
        assert_eq!(comment("a\"; flush ruleset\n"), "a flush ruleset");
        assert_eq!(comment(&"x".repeat(200)).len(), 120);
    }

    #[test]
    fn library_errors_keep_their_causes() {
        let err = nftables_netlink::Error::wrap(
            "removing the spoof check",
            nftables_netlink::Error::Decode("short".into()),
        );
        let e = nft_error(err);
        assert_eq!(e.code(), cni_common::Code::System);
        assert_eq!(
            e.msg(),
            "removing the spoof check: malformed nf_tables message: short"
        );
    }
}
