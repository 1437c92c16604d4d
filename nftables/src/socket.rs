//! The conversation with the kernel: one NETLINK_NETFILTER socket in the namespace it was
//! opened in, batches sent and acknowledged, dumps read to their end.

use std::os::fd::AsRawFd;
use std::time::Duration;

use netlink_sys::{protocols::NETLINK_NETFILTER, Socket};

use crate::attr;
use crate::batch::{header, Batch};
use crate::model::{Chain, Element, Family, Rule, Set, Table};
use crate::sys::*;
use crate::{Error, Result};

/// Receive buffer: large enough for any message of a dump (the kernel fills up to 32 KiB).
const RECV_BUF: usize = 128 * 1024;
/// How long to wait for the kernel's answer before giving up; it answers at once unless it is
/// loading a module.
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a dump is restarted when the ruleset changed while it was read.
const DUMP_ATTEMPTS: usize = 5;

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
}

impl Nftables {
    /// Opens a socket in the calling thread's network namespace.
    pub fn new() -> Result<Nftables> {
        let mut socket = Socket::new(NETLINK_NETFILTER)
            .map_err(|e| Error::io("opening a netfilter netlink socket", e))?;
        socket
            .bind_auto()
            .map_err(|e| Error::io("binding the netfilter netlink socket", e))?;
        // Acknowledgements without a copy of the request: errors come back small.
        socket
            .set_cap_ack(true)
            .map_err(|e| Error::io("setting NETLINK_CAP_ACK", e))?;
        set_recv_timeout(&socket, REPLY_TIMEOUT)?;
        // Sequence numbers only need to differ between requests of this socket.
        let seq = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(1);
        Ok(Nftables {
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
            .map_err(|e| Error::io(format!("sending {what}"), e))?;
        Ok(())
    }

    /// The messages of one datagram.
    fn recv(&mut self, what: &str) -> Result<Vec<Reply>> {
        self.buf.clear();
        self.socket
            .recv(&mut self.buf, 0)
            .map_err(|e| Error::io(format!("waiting for the answer to {what}"), e))?;
        parse_replies(&self.buf)
    }

    /// Applies `batch` as one transaction: everything in it takes effect, or nothing does and
    /// the error is the first message's the kernel refused.
    pub fn apply(&mut self, batch: &Batch) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let first = self.next_seqs(batch.len() as u32 + 2);
        let last = batch.last_seq(first);
        self.send(&batch.encode(first), "an nftables transaction")?;
        let mut failure = None;
        loop {
            let replies = match self.recv("an nftables transaction") {
                Ok(replies) => replies,
                // A refused batch may end without acknowledging its last message: the refusal
                // is the answer.
                Err(e) => return Err(failure.unwrap_or(e)),
            };
            for reply in replies {
                // Answers to earlier requests of a reused socket are not this batch's.
                let ours = reply.seq.wrapping_sub(first).wrapping_sub(1) < batch.len() as u32;
                if reply.kind != NLMSG_ERROR || !ours {
                    continue;
                }
                let errno = error_code(&reply.payload)?;
                if errno != 0 && failure.is_none() {
                    let command = batch
                        .command(first, reply.seq)
                        .unwrap_or("nftables transaction");
                    failure = Some(Error::from_errno(command, errno));
                }
                if reply.seq == last {
                    return failure.map_or(Ok(()), Err);
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
                for reply in self.recv(what)? {
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

fn set_recv_timeout(socket: &Socket, timeout: Duration) -> Result<()> {
    let tv = libc::timeval {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_usec: 0,
    };
    // SAFETY: the fd is the socket's, open for its lifetime; tv lives across the call and its
    // size is passed with it.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(Error::io(
            "setting the netlink socket's receive timeout",
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
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
