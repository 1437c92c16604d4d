//! The conversation with the kernel: one NETLINK_NETFILTER socket in the namespace it was
//! opened in, batches sent and acknowledged, dumps read to their end.

use std::time::Duration;

use netlink_sys::{protocols::NETLINK_NETFILTER, Socket};

use crate::attr;
use crate::batch::{header, Batch};
use crate::generation::Generation;
use crate::model::{Chain, Element, Family, Rule, Set, Table};
use crate::sockopt::{grow_recv_buffer, recv_buffer, set_recv_timeout};
use crate::sys::*;
use crate::{Context, Error, Result};

/// Receive buffer: large enough for any message of a dump (the kernel fills up to 32 KiB).
const RECV_BUF: usize = 128 * 1024;
/// How long to wait for the kernel's answer before giving up; it answers at once unless it is
/// loading a module.
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a dump is restarted when the ruleset changed while it was read.
const DUMP_ATTEMPTS: usize = 5;
/// What one answer to a batch takes of the socket's receive buffer, with room to spare (as nft
/// counts it): a few dozen bytes of message, but the kernel's allocation for it is what counts.
const ANSWER_ROOM: usize = 1024;
/// What the kernel's errors against a batch as a whole are reported as.
const TRANSACTION: &str = "nftables transaction";
/// How often [`Nftables::apply_planned`] lists and plans again when other transactions keep
/// changing the ruleset in between.
const PLAN_ATTEMPTS: usize = 5;

/// One reply message: its type, flags, sequence number and payload after the nlmsghdr.
struct Reply {
    kind: u16,
    flags: u16,
    seq: u32,
    payload: Vec<u8>,
}

/// The nf_tables of the network namespace this was opened in.
pub struct Nftables {
    socket: Socket,
    seq: u32,
    buf: Vec<u8>,
    /// The socket's receive buffer, as last set.
    recv_room: usize,
}

impl Nftables {
    /// Opens a socket in the calling thread's network namespace.
    pub fn new() -> Result<Nftables> {
        let mut socket =
            Socket::new(NETLINK_NETFILTER).context("opening a netfilter netlink socket")?;
        socket
            .bind_auto()
            .context("binding the netfilter netlink socket")?;
        // Acknowledgements without a copy of the request: errors come back small.
        socket
            .set_cap_ack(true)
            .context("setting NETLINK_CAP_ACK")?;
        set_recv_timeout(&socket, REPLY_TIMEOUT)?;
        // Sequence numbers only need to differ between requests of this socket.
        let seq = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(1);
        Ok(Nftables {
            recv_room: recv_buffer(&socket),
            socket,
            seq,
            buf: Vec::with_capacity(RECV_BUF),
        })
    }

    fn next_seqs(&mut self, count: u32) -> u32 {
        let first = self.seq;
        self.seq = self.seq.wrapping_add(count);
        first
    }

    fn send(&self, buf: &[u8], what: &str) -> Result<()> {
        self.socket
            .send(buf, 0)
            .with_context(|| format!("sending {what}"))?;
        Ok(())
    }

    /// The messages of one datagram; `flags` as for recv(2).
    fn recv(&mut self, what: &str, flags: libc::c_int) -> Result<Vec<Reply>> {
        self.buf.clear();
        self.socket
            .recv(&mut self.buf, flags)
            .with_context(|| format!("waiting for the answer to {what}"))?;
        parse_replies(&self.buf)
    }

    /// Drops the answers already queued. The kernel answers a request before the send returns,
    /// so nothing of it comes later.
    fn discard_queued(&mut self) {
        while self.recv("", libc::MSG_DONTWAIT).is_ok() {}
    }

    /// Makes room in the socket's receive buffer for `answers` answers.
    fn make_room(&mut self, answers: usize) {
        let needed = answers.saturating_mul(ANSWER_ROOM);
        if needed > self.recv_room {
            grow_recv_buffer(&self.socket, needed);
            self.recv_room = recv_buffer(&self.socket);
        }
    }

    /// Applies `batch` as one transaction: everything in it takes effect, or nothing does and
    /// the error is the first message's the kernel refused, or the batch's as a whole (without
    /// CAP_NET_ADMIN, say, or bound to a generation that is gone).
    pub fn apply(&mut self, batch: &Batch) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let first = self.next_seqs(batch.len() as u32 + 2);
        let last = batch.last_seq(first);
        // The kernel answers every message it refuses: room for them all, and for a refusal of
        // the batch as a whole.
        self.make_room(batch.len() + 1);
        self.send(&batch.encode(first), "an nftables transaction")?;
        let mut failure = None;
        // Answers dropped for want of room (ENOBUFS): only refusals come in numbers, so the
        // batch was refused; the first refusal is still queued.
        let mut overrun = None;
        loop {
            let flags = if overrun.is_some() {
                // The last acknowledgement may be among the answers dropped: read only what is
                // queued.
                libc::MSG_DONTWAIT
            } else {
                0
            };
            let replies = match self.recv("an nftables transaction", flags) {
                Ok(replies) => replies,
                Err(e) if e.errno() == Some(libc::ENOBUFS) && overrun.is_none() => {
                    overrun = Some(Error::wrap(
                        "the kernel refused an nftables transaction, and its answers overflowed \
                         the socket's receive buffer",
                        e,
                    ));
                    continue;
                }
                Err(e) => return Err(failure.or(overrun).unwrap_or(e)),
            };
            for reply in replies {
                if reply.kind != NLMSG_ERROR {
                    continue;
                }
                let errno = error_code(&reply.payload)?;
                if reply.seq == first {
                    // Refused before any message was looked at (no CAP_NET_ADMIN, a stale
                    // generation, no memory), or its commit failed: nothing more to wait for.
                    if errno != 0 {
                        self.discard_queued();
                        return Err(Error::from_errno(TRANSACTION, errno));
                    }
                    continue;
                }
                // Answers to earlier requests of a reused socket are not this batch's.
                let Some(command) = batch.command(first, reply.seq) else {
                    continue;
                };
                if errno != 0 && failure.is_none() {
                    failure = Some(Error::from_errno(command, errno));
                }
                if reply.seq == last {
                    return failure.or(overrun).map_or(Ok(()), Err);
                }
            }
        }
    }

    /// Sends the request `kind` (not a dump) and returns the body of the kernel's answer, of
    /// type `answer`, after its nfgenmsg.
    pub(crate) fn query(&mut self, kind: u16, answer: u16, what: &str) -> Result<Vec<u8>> {
        let seq = self.next_seqs(1);
        let mut request = Vec::new();
        header(
            &mut request,
            (NFNL_SUBSYS_NFTABLES << 8) | kind,
            NLM_F_REQUEST,
            seq,
            libc::AF_UNSPEC as u8,
            0,
            &[],
        );
        self.send(&request, what)?;
        loop {
            for reply in self.recv(what, 0)? {
                if reply.seq != seq {
                    continue;
                }
                if reply.kind == NLMSG_ERROR {
                    let errno = error_code(&reply.payload)?;
                    if errno != 0 {
                        return Err(Error::from_errno(what, errno));
                    }
                } else if reply.kind == (NFNL_SUBSYS_NFTABLES << 8) | answer {
                    return reply
                        .payload
                        .get(NFGENMSG_LEN..)
                        .map(<[u8]>::to_vec)
                        .ok_or_else(|| Error::Decode("a message without nfgenmsg".into()));
                }
            }
        }
    }

    /// Dumps `kind` for `family` (filtered by `attrs` where the kernel supports it): the
    /// family and attributes of every object.
    fn dump(&mut self, kind: u16, family: Family, attrs: &[u8]) -> Result<Vec<(u8, Vec<u8>)>> {
        let what = "an nftables listing";
        'attempt: for _ in 0..DUMP_ATTEMPTS {
            let seq = self.next_seqs(1);
            let mut request = Vec::new();
            header(
                &mut request,
                (NFNL_SUBSYS_NFTABLES << 8) | kind,
                NLM_F_REQUEST | NLM_F_DUMP,
                seq,
                family.number(),
                0,
                attrs,
            );
            self.send(&request, what)?;
            let mut objects = Vec::new();
            let mut interrupted = false;
            loop {
                for reply in self.recv(what, 0)? {
                    if reply.seq != seq {
                        continue;
                    }
                    interrupted |= reply.flags & NLM_F_DUMP_INTR != 0;
                    match reply.kind {
                        NLMSG_DONE if interrupted => continue 'attempt,
                        NLMSG_DONE => return Ok(objects),
                        NLMSG_ERROR => {
                            let errno = error_code(&reply.payload)?;
                            return Err(Error::from_errno(dump_name(kind, family), errno));
                        }
                        _ => {
                            let (head, body) = reply
                                .payload
                                .split_at_checked(NFGENMSG_LEN)
                                .ok_or_else(|| {
                                    Error::Decode("a message without nfgenmsg".into())
                                })?;
                            objects.push((head[0], body.to_vec()));
                        }
                    }
                }
            }
        }
        Err(Error::from_errno(dump_name(kind, family), libc::EINTR))
    }

    /// The ruleset's generation now (`NFT_MSG_GETGEN`).
    pub fn generation(&mut self) -> Result<Generation> {
        let body = self.query(
            NFT_MSG_GETGEN,
            NFT_MSG_NEWGEN,
            "reading the ruleset's generation",
        )?;
        attr::get_u32(&attr::parse(&body)?, NFTA_GEN_ID)
            .map(Generation::new)
            .ok_or_else(|| Error::Decode("a generation without its number".into()))
    }

    /// Lists, plans and applies as one step: `plan` reads what it needs through this
    /// connection and returns the batch to apply (with anything else the caller wants back),
    /// and the batch is applied only if the ruleset is still at the generation read before
    /// `plan` ran ([`Batch::if_generation`]). When another transaction changed the ruleset in
    /// between, `plan` runs again on a fresh listing, a few times at most; after that the
    /// error is [`Error::GenerationChanged`]. An empty batch is not sent.
    pub fn apply_planned<T>(
        &mut self,
        mut plan: impl FnMut(&mut Nftables) -> Result<(Batch, T)>,
    ) -> Result<T> {
        let mut attempt = 1;
        loop {
            let generation = self.generation()?;
            let (mut batch, planned) = plan(self)?;
            batch.if_generation(generation);
            match self.apply(&batch) {
                Err(e) if e.is_generation_changed() && attempt < PLAN_ATTEMPTS => attempt += 1,
                applied => return applied.map(|()| planned),
            }
        }
    }

    /// `nft list tables <family>`
    pub fn list_tables(&mut self, family: Family) -> Result<Vec<Table>> {
        let mut tables = Vec::new();
        for (_, body) in self.dump(NFT_MSG_GETTABLE, family, &[])? {
            if let Some(name) = attr::get_str(&attr::parse(&body)?, NFTA_TABLE_NAME) {
                tables.push(Table::new(family, name));
            }
        }
        Ok(tables)
    }

    /// The chains of `table`; none when it does not exist.
    pub fn list_chains(&mut self, table: &Table) -> Result<Vec<Chain>> {
        let mut chains = Vec::new();
        for (_, body) in self.dump(NFT_MSG_GETCHAIN, table.family, &[])? {
            let chain = Chain::decode(table.family, &attr::parse(&body)?)?;
            if chain.table == *table {
                chains.push(chain);
            }
        }
        Ok(chains)
    }

    /// The rules of `table`, of chain `chain` only if given, with their handles; none when the
    /// table or chain does not exist.
    pub fn list_rules(&mut self, table: &Table, chain: Option<&str>) -> Result<Vec<Rule>> {
        let mut filter = attr::AttrWriter::new();
        filter.str(NFTA_RULE_TABLE, &table.name);
        if let Some(chain) = chain {
            filter.str(NFTA_RULE_CHAIN, chain);
        }
        let objects = match self.dump(NFT_MSG_GETRULE, table.family, filter.as_bytes()) {
            Err(e) if e.is_not_found() => return Ok(Vec::new()),
            other => other?,
        };
        let mut rules = Vec::new();
        for (_, body) in objects {
            let rule = Rule::decode(table.family, &attr::parse(&body)?)?;
            if rule.table == *table && chain.is_none_or(|c| rule.chain == c) {
                rules.push(rule);
            }
        }
        Ok(rules)
    }

    /// The elements of `set`; none when it (or its table) does not exist.
    pub fn list_elements(&mut self, set: &Set) -> Result<Vec<Element>> {
        let mut filter = attr::AttrWriter::new();
        filter
            .str(NFTA_SET_ELEM_LIST_TABLE, &set.table.name)
            .str(NFTA_SET_ELEM_LIST_SET, &set.name);
        let objects = match self.dump(NFT_MSG_GETSETELEM, set.table.family, filter.as_bytes()) {
            Err(e) if e.is_not_found() => return Ok(Vec::new()),
            other => other?,
        };
        let mut elements = Vec::new();
        for (_, body) in objects {
            let attrs = attr::parse(&body)?;
            let Some(list) = attr::find(&attrs, NFTA_SET_ELEM_LIST_ELEMENTS) else {
                continue;
            };
            for (_, elem) in attr::parse(list)? {
                elements.push(Element::decode(&attr::parse(elem)?)?);
            }
        }
        Ok(elements)
    }
}

fn dump_name(kind: u16, family: Family) -> String {
    let what = match kind {
        NFT_MSG_GETTABLE => "tables",
        NFT_MSG_GETCHAIN => "chains",
        NFT_MSG_GETRULE => "rules",
        NFT_MSG_GETSETELEM => "set elements",
        _ => "objects",
    };
    format!("listing the {family} {what}")
}

/// The positive errno of an NLMSG_ERROR payload; 0 for an acknowledgement.
fn error_code(payload: &[u8]) -> Result<i32> {
    let code = payload
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .map(i32::from_ne_bytes)
        .ok_or_else(|| Error::Decode("a truncated netlink error".into()))?;
    Ok(-code)
}

fn parse_replies(mut buf: &[u8]) -> Result<Vec<Reply>> {
    let mut replies = Vec::new();
    while buf.len() >= NLMSG_HDRLEN {
        let len = u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
        if len < NLMSG_HDRLEN || len > buf.len() {
            return Err(Error::Decode(format!(
                "a netlink message of {len} bytes in {} bytes",
                buf.len()
            )));
        }
        replies.push(Reply {
            kind: u16::from_ne_bytes([buf[4], buf[5]]),
            flags: u16::from_ne_bytes([buf[6], buf[7]]),
            seq: u32::from_ne_bytes([buf[8], buf[9], buf[10], buf[11]]),
            payload: buf[NLMSG_HDRLEN..len].to_vec(),
        });
        buf = &buf[((len + 3) & !3).min(buf.len())..];
    }
    Ok(replies)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_split_and_errors_read_as_positive_errnos() {
        let mut buf = Vec::new();
        // An NLMSG_ERROR carrying -ENOENT, then NLMSG_DONE.
        buf.extend(20u32.to_ne_bytes());
        buf.extend(NLMSG_ERROR.to_ne_bytes());
        buf.extend(0u16.to_ne_bytes());
        buf.extend(7u32.to_ne_bytes());
        buf.extend(0u32.to_ne_bytes());
        buf.extend((-libc::ENOENT).to_ne_bytes());
        buf.extend(16u32.to_ne_bytes());
        buf.extend(NLMSG_DONE.to_ne_bytes());
        buf.extend(2u16.to_ne_bytes());
        buf.extend(8u32.to_ne_bytes());
        buf.extend(0u32.to_ne_bytes());
        let replies = parse_replies(&buf).expect("parses");
        assert_eq!(replies.len(), 2);
        assert_eq!(replies[0].seq, 7);
        assert_eq!(error_code(&replies[0].payload).expect("code"), libc::ENOENT);
        assert_eq!(replies[1].kind, NLMSG_DONE);
    }
}
