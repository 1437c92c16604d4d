//! A transaction: nf_tables messages between NFNL_MSG_BATCH_BEGIN and _END, which the kernel
//! applies all or nothing, as `nft -f` does with a script. Each method is named after the nft
//! command it stands for.

use crate::attr::AttrWriter;
use crate::generation::Generation;
use crate::model::{Chain, Element, Rule, Set, Table};
use crate::sys::*;

/// One request of a batch, with the nft command it stands for (for error messages).
#[derive(Debug, Clone)]
struct Message {
    kind: u16,
    flags: u16,
    family: u8,
    attrs: Vec<u8>,
    command: String,
}

#[derive(Debug, Clone, Default)]
pub struct Batch {
    messages: Vec<Message>,
    generation: Option<Generation>,
}

impl Batch {
    pub fn new() -> Batch {
        Batch::default()
    }

    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Makes the transaction conditional: the kernel applies it only while the ruleset is still
    /// at `generation`, and refuses it whole otherwise ([`crate::Error::GenerationChanged`]).
    /// For changes planned from a listing, so that they never act on what is no longer there;
    /// [`crate::Nftables::apply_planned`] reads the generation, lists and retries. A kernel that
    /// predates the check applies the batch without it.
    pub fn if_generation(&mut self, generation: Generation) -> &mut Self {
        self.generation = Some(generation);
        self
    }

    fn push(&mut self, kind: u16, flags: u16, table: &Table, attrs: AttrWriter, command: String) {
        self.messages.push(Message {
            kind,
            flags,
            family: table.family.number(),
            attrs: attrs.into_bytes(),
            command,
        });
    }

    /// `add table <family> <name>`: created unless it exists.
    pub fn add_table(&mut self, table: &Table) -> &mut Self {
        let mut w = AttrWriter::new();
        w.str(NFTA_TABLE_NAME, &table.name);
        let command = format!("add table {table}");
        self.push(NFT_MSG_NEWTABLE, NLM_F_CREATE, table, w, command);
        self
    }

    /// `delete table <family> <name>`, with everything in it.
    pub fn delete_table(&mut self, table: &Table) -> &mut Self {
        let mut w = AttrWriter::new();
        w.str(NFTA_TABLE_NAME, &table.name);
        let command = format!("delete table {table}");
        self.push(NFT_MSG_DELTABLE, 0, table, w, command);
        self
    }

    /// `add chain ...`: created unless it exists.
    pub fn add_chain(&mut self, chain: &Chain) -> &mut Self {
        let mut w = AttrWriter::new();
        chain.encode(&mut w);
        let command = format!("add chain {} {}", chain.table, chain.name);
        self.push(NFT_MSG_NEWCHAIN, NLM_F_CREATE, &chain.table, w, command);
        self
    }

    /// `flush chain ...`: its rules go.
    pub fn flush_chain(&mut self, chain: &Chain) -> &mut Self {
        let mut w = AttrWriter::new();
        w.str(NFTA_RULE_TABLE, &chain.table.name)
            .str(NFTA_RULE_CHAIN, &chain.name);
        let command = format!("flush chain {} {}", chain.table, chain.name);
        self.push(NFT_MSG_DELRULE, 0, &chain.table, w, command);
        self
    }

    /// `delete chain ...`: it must be empty and nothing may jump to it.
    pub fn delete_chain(&mut self, chain: &Chain) -> &mut Self {
        let mut w = AttrWriter::new();
        w.str(NFTA_CHAIN_TABLE, &chain.table.name)
            .str(NFTA_CHAIN_NAME, &chain.name);
        let command = format!("delete chain {} {}", chain.table, chain.name);
        self.push(NFT_MSG_DELCHAIN, 0, &chain.table, w, command);
        self
    }

    /// `add set|map ...`: created unless it exists.
    pub fn add_set(&mut self, set: &Set) -> &mut Self {
        let mut w = AttrWriter::new();
        set.encode(&mut w);
        // The kernel wants an ID for a new set, by which later messages of the same batch could
        // refer to it; they refer to it by name here, but it must be unique in the batch.
        w.u32(NFTA_SET_ID, self.messages.len() as u32 + 1);
        let command = format!("add map {} {}", set.table, set.name);
        self.push(NFT_MSG_NEWSET, NLM_F_CREATE, &set.table, w, command);
        self
    }

    fn elements(set: &Set, elements: &[Element]) -> AttrWriter {
        let mut w = AttrWriter::new();
        w.str(NFTA_SET_ELEM_LIST_TABLE, &set.table.name)
            .str(NFTA_SET_ELEM_LIST_SET, &set.name)
            .nested(NFTA_SET_ELEM_LIST_ELEMENTS, |list| {
                for e in elements {
                    e.encode(list);
                }
            });
        w
    }

    /// `add element ... { <key> : <verdict>, ... }`: an element already there with the same
    /// data is no error, one with other data is ([`crate::Error::Exists`]).
    pub fn add_elements(&mut self, set: &Set, elements: &[Element]) -> &mut Self {
        let w = Batch::elements(set, elements);
        let command = format!("add element {} {}", set.table, set.name);
        self.push(NFT_MSG_NEWSETELEM, NLM_F_CREATE, &set.table, w, command);
        self
    }

    /// `delete element ... { <key>, ... }`: each must exist.
    pub fn delete_elements(&mut self, set: &Set, elements: &[Element]) -> &mut Self {
        let w = Batch::elements(set, elements);
        let command = format!("delete element {} {}", set.table, set.name);
        self.push(NFT_MSG_DELSETELEM, 0, &set.table, w, command);
        self
    }

    /// `add rule ...`: appended to its chain.
    pub fn add_rule(&mut self, rule: &Rule) -> &mut Self {
        let mut w = AttrWriter::new();
        rule.encode(&mut w);
        let command = format!("add rule {} {}", rule.table, rule.chain);
        self.push(
            NFT_MSG_NEWRULE,
            NLM_F_CREATE | NLM_F_APPEND,
            &rule.table,
            w,
            command,
        );
        self
    }

    /// `delete rule ... handle <n>`, for a rule that was listed (a rule without a handle
    /// flushes its chain, so it is refused here by doing nothing).
    pub fn delete_rule(&mut self, rule: &Rule) -> &mut Self {
        let Some(handle) = rule.handle else {
            return self;
        };
        let mut w = AttrWriter::new();
        w.str(NFTA_RULE_TABLE, &rule.table.name)
            .str(NFTA_RULE_CHAIN, &rule.chain)
            .u64(NFTA_RULE_HANDLE, handle);
        let command = format!("delete rule {} {} handle {handle}", rule.table, rule.chain);
        self.push(NFT_MSG_DELRULE, 0, &rule.table, w, command);
        self
    }

    /// The nft command of the message sent with sequence number `seq`, when the batch went out
    /// starting at `first_seq`.
    pub(crate) fn command(&self, first_seq: u32, seq: u32) -> Option<&str> {
        let index = seq.checked_sub(first_seq)?.checked_sub(1)?;
        self.messages
            .get(index as usize)
            .map(|m| m.command.as_str())
    }

    /// The whole batch as sent: BEGIN with `first_seq` (and the generation it is bound to),
    /// the messages after it, END.
    ///
    /// The kernel answers every message it refuses, asked or not, and acknowledges the others
    /// only when asked, all after the whole batch was processed and in order. So only the last
    /// message asks: its acknowledgement comes last and ends the answer, and a batch of any
    /// size that applies gets one reply, not one per message that the socket's receive buffer
    /// would have to hold.
    pub(crate) fn encode(&self, first_seq: u32) -> Vec<u8> {
        let mut buf = Vec::new();
        let mut begin = AttrWriter::new();
        if let Some(generation) = self.generation {
            begin.u32(NFNL_BATCH_GENID, generation.id());
        }
        let batch_marker = |buf: &mut Vec<u8>, kind: u16, seq: u32, attrs: &[u8]| {
            header(
                buf,
                kind,
                NLM_F_REQUEST,
                seq,
                0,
                NFNL_SUBSYS_NFTABLES,
                attrs,
            );
        };
        batch_marker(&mut buf, NFNL_MSG_BATCH_BEGIN, first_seq, begin.as_bytes());
        let last = self.last_seq(first_seq);
        let mut seq = first_seq;
        for m in &self.messages {
            seq = seq.wrapping_add(1);
            let ack = if seq == last { NLM_F_ACK } else { 0 };
            header(
                &mut buf,
                (NFNL_SUBSYS_NFTABLES << 8) | m.kind,
                NLM_F_REQUEST | ack | m.flags,
                seq,
                m.family,
                0,
                &m.attrs,
            );
        }
        batch_marker(&mut buf, NFNL_MSG_BATCH_END, seq.wrapping_add(1), &[]);
        buf
    }

    /// The sequence number of the last message, the one whose acknowledgement ends the answer.
    pub(crate) fn last_seq(&self, first_seq: u32) -> u32 {
        first_seq.wrapping_add(self.messages.len() as u32)
    }
}

/// Appends one netlink message: nlmsghdr, nfgenmsg, attributes.
pub(crate) fn header(
    buf: &mut Vec<u8>,
    kind: u16,
    flags: u16,
    seq: u32,
    family: u8,
    res_id: u16,
    attrs: &[u8],
) {
    let len = (NLMSG_HDRLEN + NFGENMSG_LEN + attrs.len()) as u32;
    buf.extend_from_slice(&len.to_ne_bytes());
    buf.extend_from_slice(&kind.to_ne_bytes());
    buf.extend_from_slice(&flags.to_ne_bytes());
    buf.extend_from_slice(&seq.to_ne_bytes());
    buf.extend_from_slice(&0u32.to_ne_bytes());
    buf.extend_from_slice(&[family, NFNETLINK_V0]);
    buf.extend_from_slice(&res_id.to_be_bytes());
    buf.extend_from_slice(attrs);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Family;

    fn u16_at(buf: &[u8], at: usize) -> u16 {
        u16::from_ne_bytes([buf[at], buf[at + 1]])
    }

    fn u32_at(buf: &[u8], at: usize) -> u32 {
        u32::from_ne_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]])
    }

    #[test]
    fn a_batch_is_framed_by_begin_and_end_for_the_nftables_subsystem() {
        let mut batch = Batch::new();
        batch.add_table(&Table::new(Family::Inet, "t"));
        let buf = batch.encode(100);
        // BEGIN: 20 bytes, type 0x10, seq 100, res_id NFNL_SUBSYS_NFTABLES in network order.
        assert_eq!(u32_at(&buf, 0), 20);
        assert_eq!(u16_at(&buf, 4), NFNL_MSG_BATCH_BEGIN);
        assert_eq!(u32_at(&buf, 8), 100);
        assert_eq!(&buf[18..20], &NFNL_SUBSYS_NFTABLES.to_be_bytes());
        // NEWTABLE: subsystem in the high byte, create without exclusive, acked (it is the last
        // message), family inet.
        let table = &buf[20..];
        assert_eq!(
            u16_at(table, 4),
            (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWTABLE
        );
        assert_eq!(u16_at(table, 6), NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE);
        assert_eq!(u32_at(table, 8), 101);
        assert_eq!(table[16], 1);
        let end = &buf[20 + u32_at(table, 0) as usize..];
        assert_eq!(u16_at(end, 4), NFNL_MSG_BATCH_END);
        assert_eq!(u32_at(end, 8), 102);
        assert_eq!(end.len(), 20);
        assert_eq!(batch.last_seq(100), 101);
        assert_eq!(batch.command(100, 101), Some("add table inet t"));
    }

    #[test]
    fn adding_a_rule_appends_it() {
        let table = Table::new(Family::Bridge, "t");
        let mut batch = Batch::new();
        batch.add_rule(&Rule::new(&Chain::new(&table, "c"), vec![]));
        let buf = batch.encode(0);
        assert_eq!(
            u16_at(&buf, 20 + 6),
            NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_APPEND
        );
    }

    /// The messages of an encoded batch, as (type, flags, seq).
    fn headers(mut buf: &[u8]) -> Vec<(u16, u16, u32)> {
        let mut all = Vec::new();
        while !buf.is_empty() {
            all.push((u16_at(buf, 4), u16_at(buf, 6), u32_at(buf, 8)));
            buf = &buf[u32_at(buf, 0) as usize..];
        }
        all
    }

    #[test]
    fn only_the_last_message_asks_for_an_acknowledgement() {
        let table = Table::new(Family::Inet, "t");
        let mut batch = Batch::new();
        batch
            .add_table(&table)
            .add_chain(&Chain::new(&table, "a"))
            .add_chain(&Chain::new(&table, "b"));
        let acked: Vec<u32> = headers(&batch.encode(10))
            .into_iter()
            .filter(|(_, flags, _)| flags & NLM_F_ACK != 0)
            .map(|(_, _, seq)| seq)
            .collect();
        assert_eq!(acked, [batch.last_seq(10)]);
        assert_eq!(batch.last_seq(10), 13);
    }

    #[test]
    fn a_batch_bound_to_a_generation_carries_it_in_its_begin_message() {
        let mut batch = Batch::new();
        batch.add_table(&Table::new(Family::Inet, "t"));
        assert_eq!(
            u32_at(&batch.encode(0), 0),
            20,
            "no generation, no attribute"
        );
        batch.if_generation(Generation::new(0x0102_0304));
        let buf = batch.encode(0);
        // BEGIN: 20 bytes of headers, then NFNL_BATCH_GENID, big-endian.
        assert_eq!(u32_at(&buf, 0), 28);
        assert_eq!(u16_at(&buf, 20), 8);
        assert_eq!(u16_at(&buf, 22), NFNL_BATCH_GENID);
        assert_eq!(&buf[24..28], &[1, 2, 3, 4]);
        assert_eq!(
            u16_at(&buf, 28 + 4),
            (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWTABLE
        );
    }

    #[test]
    fn deleting_a_rule_without_a_handle_does_nothing() {
        let table = Table::new(Family::Bridge, "t");
        let mut batch = Batch::new();
        batch.delete_rule(&Rule::new(&Chain::new(&table, "c"), vec![]));
        assert!(batch.is_empty());
    }
}
