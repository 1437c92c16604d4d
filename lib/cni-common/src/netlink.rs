//! A synchronous rtnetlink client: one method per `ip` command, one netlink request each.
//!
//! CNI plugins are one-shot processes, so there is nothing for async to overlap: a [`Netlink`]
//! owns one blocking NETLINK_ROUTE socket bound to one namespace, and each method sends one
//! request and reads its answer before returning. Messages are built and parsed with
//! `netlink-packet-route`; the socket is `netlink-sys` without any runtime.

use std::io;
use std::sync::{Mutex, PoisonError};

use netlink_packet_core::{
    DecodeError, NetlinkBuffer, NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_ACK_TLVS,
    NLM_F_CAPPED, NLM_F_DUMP, NLM_F_MULTIPART, NLM_F_REQUEST,
};
use netlink_packet_route::link::LinkMessage;
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::protocols::NETLINK_ROUTE;
use netlink_sys::{Socket, SocketAddr};

use crate::error::{Code, Context, Error, Result};
use crate::netns::NetNs;

mod addr;
mod bridge;
mod detail;
mod events;
mod link;
mod macvtap;
mod route;

pub use events::{LinkEvent, LinkEvents, LinkNotices};
pub use link::{Link, Veth};

pub use bridge::{BridgePort, PortVlan};
pub use detail::{BondSettings, BridgePortSettings, BridgeSettings, LinkDetails};
pub use route::{
    NewRoute, RouteEntry, RouteInfo, RT_TABLE_DEFAULT, RT_TABLE_LOCAL, RT_TABLE_MAIN,
    RT_TABLE_UNSPEC,
};

/// The MTUs a config may ask of a link: IPv4's minimum (RFC 791's 68) up to the largest any
/// link takes. The kernel narrows it per link type; this is what is checked before it is asked.
pub const MTU_RANGE: std::ops::RangeInclusive<u32> = 68..=65535;

/// Longest interface name plus the NUL (IFNAMSIZ).
const IFNAMSIZ: usize = 16;

/// Initial receive buffer. The kernel sizes dump chunks after the largest buffer it has seen us
/// read with (up to 32 KiB), so this takes a whole chunk in one read; anything larger is
/// peeked at first and the buffer grows for it.
const RECV_BUF: usize = 32 * 1024;

/// Length of `struct nlmsghdr`, which an NLMSG_ERROR echoes back.
const NLMSG_HDRLEN: usize = 16;

/// NLMSGERR_ATTR_MSG: the extended ack's human-readable text.
const NLMSGERR_ATTR_MSG: u16 = 1;

/// Why a request failed.
#[derive(Debug)]
enum NlError {
    /// The kernel refused it: a positive errno, and the extended ack's text if it gave one.
    Kernel { errno: i32, detail: Option<String> },
    /// The socket failed.
    Socket(io::Error),
    /// A reply whose netlink header does not hold together.
    Malformed(DecodeError),
    /// A reply whose message could not be read.
    Undecodable(DecodeError),
    /// The kernel dropped part of the answer.
    Overrun,
}

impl NlError {
    /// The kernel's errno, 0 when the failure was ours.
    fn errno(&self) -> i32 {
        match self {
            NlError::Kernel { errno, .. } => *errno,
            NlError::Socket(_)
            | NlError::Malformed(_)
            | NlError::Undecodable(_)
            | NlError::Overrun => 0,
        }
    }
}

impl From<io::Error> for NlError {
    fn from(e: io::Error) -> Self {
        NlError::Socket(e)
    }
}

/// Only the kernel's refusals carry an errno: a failed socket or an unreadable reply is no answer
/// to the request (errno 0).
impl From<NlError> for Error {
    fn from(e: NlError) -> Self {
        match e {
            NlError::Kernel { errno, detail } => Error::Netlink { errno, detail },
            NlError::Socket(e) => Error::classified(Code::System, "netlink socket", e),
            NlError::Malformed(e) => Error::classified(Code::System, "malformed netlink reply", e),
            NlError::Undecodable(e) => {
                Error::classified(Code::System, "undecodable netlink reply", e)
            }
            NlError::Overrun => Error::system("netlink reply overrun"),
        }
    }
}

/// A netlink socket bound to one network namespace.
pub struct Netlink {
    socket: Socket,
    /// Sequence counter and receive buffer. Held across a whole request, so that two threads
    /// sharing one `Netlink` cannot read each other's replies.
    state: Mutex<Requests>,
}

/// What one request at a time needs.
struct Requests {
    seq: u32,
    buf: Vec<u8>,
}

impl Netlink {
    /// A socket in the calling thread's namespace.
    pub fn current() -> Result<Netlink> {
        let socket = open_socket().context("opening a netlink socket")?;
        Ok(Netlink {
            socket,
            state: Mutex::new(Requests {
                seq: 0,
                buf: Vec::with_capacity(RECV_BUF),
            }),
        })
    }

    /// A socket in `ns`. A netlink socket stays in the namespace it was created in, so it is
    /// created on a thread inside `ns`; the caller's thread never moves.
    pub fn in_netns(ns: &NetNs) -> Result<Netlink> {
        ns.run(Netlink::current)
            .with_context(|| format!("netlink socket in netns {}", ns.path().display()))
    }

    /// Sends `msg` with NLM_F_REQUEST | `flags` and collects the replies: until the ACK (or
    /// error) for a plain request, until NLMSG_DONE for a dump. Every other request type is a
    /// thin wrapper around this one.
    fn request(
        &self,
        msg: RouteNetlinkMessage,
        flags: u16,
    ) -> std::result::Result<Vec<RouteNetlinkMessage>, NlError> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let Requests { seq, buf } = &mut *state;
        // Replies carry the request's number; anything else is a leftover of an earlier
        // request that failed half-way, and is skipped.
        *seq = seq.wrapping_add(1);
        let seq = *seq;

        let mut req = NetlinkMessage::from(msg);
        req.header.flags = NLM_F_REQUEST | flags;
        req.header.sequence_number = seq;
        req.finalize();
        buf.clear();
        buf.resize(req.buffer_len(), 0);
        req.serialize(buf);
        self.socket.send(buf, 0)?;

        let dump = flags & NLM_F_DUMP == NLM_F_DUMP;
        let mut replies = Vec::new();
        loop {
            let len = self.recv_datagram(buf)?;
            let mut rest = &buf[..len];
            // One datagram may hold several messages (dumps, a reply and its ACK).
            while !rest.is_empty() {
                let one = NetlinkBuffer::new_checked(rest).map_err(NlError::Malformed)?;
                let msg_len = one.length() as usize;
                let msg_seq = one.sequence_number();
                let msg_bytes = &rest[..msg_len];
                rest = rest.get(align(msg_len)..).unwrap_or_default();
                if msg_seq != seq {
                    continue;
                }
                let reply = NetlinkMessage::<RouteNetlinkMessage>::deserialize(msg_bytes)
                    .map_err(NlError::Undecodable)?;
                let reply_flags = reply.header.flags;
                match reply.payload {
                    NetlinkPayload::InnerMessage(m) => {
                        replies.push(m);
                        // Without an ACK to wait for, a lone reply is the whole answer.
                        if flags & NLM_F_ACK == 0 && !dump && reply_flags & NLM_F_MULTIPART == 0 {
                            return Ok(replies);
                        }
                    }
                    NetlinkPayload::Error(e) => match e.code {
                        // An ACK: the request is done.
                        None => return Ok(replies),
                        Some(code) => {
                            return Err(NlError::Kernel {
                                errno: code.get().saturating_neg(),
                                detail: ack_error_text(reply_flags, &e.header),
                            })
                        }
                    },
                    NetlinkPayload::Done(done) => {
                        if done.code != 0 {
                            // The dump broke off; the extended ack follows the code directly.
                            return Err(NlError::Kernel {
                                errno: done.code.saturating_neg(),
                                detail: ext_ack_text(reply_flags, &done.extended_ack),
                            });
                        }
                        return Ok(replies);
                    }
                    NetlinkPayload::Overrun(_) => return Err(NlError::Overrun),
                    _ => {}
                }
            }
        }
    }

    fn recv_datagram(&self, buf: &mut Vec<u8>) -> std::result::Result<usize, NlError> {
        Ok(recv_datagram(&self.socket, buf)?)
    }

    /// A request answered by an ACK only (new, set, del).
    fn ack(&self, msg: RouteNetlinkMessage, extra_flags: u16) -> std::result::Result<(), NlError> {
        self.request(msg, NLM_F_ACK | extra_flags).map(drop)
    }

    /// A dump: every object the kernel's filter lets through.
    fn dump(
        &self,
        msg: RouteNetlinkMessage,
    ) -> std::result::Result<Vec<RouteNetlinkMessage>, NlError> {
        self.request(msg, NLM_F_DUMP)
    }

    /// RTM_SETLINK: changes an existing link.
    fn set_link(&self, msg: LinkMessage) -> std::result::Result<(), NlError> {
        self.ack(RouteNetlinkMessage::SetLink(msg), 0)
    }

    /// One RTM_GETLINK (not a dump): the kernel answers with one link or ENODEV.
    fn get_link(&self, msg: LinkMessage) -> Result<Option<Link>> {
        match self.request(RouteNetlinkMessage::GetLink(msg), NLM_F_ACK) {
            Ok(replies) => Ok(replies.into_iter().find_map(|m| match m {
                RouteNetlinkMessage::NewLink(link) => Some(Link::from_message(link)),
                _ => None,
            })),
            Err(e) if e.errno() == libc::ENODEV => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

/// A NETLINK_ROUTE socket in the calling thread's namespace, connected to the kernel.
fn open_socket() -> io::Result<Socket> {
    let socket = Socket::new(NETLINK_ROUTE)?;
    // Strict checking makes the kernel filter dumps by the header's fields (addresses of one
    // link) instead of sending everything. Kernels before 4.20 lack it; `addr_list` filters
    // again itself, so its absence is not an error.
    let _ = socket.set_netlink_get_strict_chk(true);
    // Extended acks carry the kernel's reason ("mtu greater than device maximum") along with
    // the errno, and capped acks do not echo our whole request back. Both are optional.
    let _ = socket.set_ext_ack(true);
    let _ = socket.set_cap_ack(true);
    // Connecting autobinds a port id and makes the kernel our only peer.
    socket.connect(&SocketAddr::new(0, 0))?;
    Ok(socket)
}

/// Reads one datagram of `socket` into `buf`, growing it when the datagram is larger, and
/// returns its length. Netlink drops the tail of a datagram that does not fit, so the length is
/// peeked (MSG_PEEK | MSG_TRUNC) before the read. Replies and notifications alike.
fn recv_datagram(socket: &Socket, buf: &mut Vec<u8>) -> io::Result<usize> {
    let mut nothing: &mut [u8] = &mut [];
    let len = retry_eintr(|| socket.recv(&mut nothing, libc::MSG_PEEK | libc::MSG_TRUNC))?;
    buf.clear();
    buf.reserve(len.max(RECV_BUF));
    // recv fills the spare capacity and sets the length to what it read.
    let read = retry_eintr(|| socket.recv(buf, 0))?;
    if read != len {
        return Err(io::Error::other(format!(
            "netlink datagram of {len} bytes read as {read}"
        )));
    }
    Ok(len)
}

/// Repeats a call that a signal interrupted: the kernel still holds the reply.
fn retry_eintr(mut f: impl FnMut() -> io::Result<usize>) -> io::Result<usize> {
    loop {
        match f() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// NLMSG_ALIGN: messages and attributes start on 4-byte boundaries.
fn align(len: usize) -> usize {
    (len + 3) & !3
}

/// The extended ack text of an NLMSG_ERROR, whose payload (after the errno) echoes our
/// request: just its header when capped, the whole message otherwise.
fn ack_error_text(flags: u16, echoed: &[u8]) -> Option<String> {
    let skip = if flags & NLM_F_CAPPED != 0 {
        NLMSG_HDRLEN
    } else {
        let len = u32::from_ne_bytes(echoed.get(..4)?.try_into().ok()?);
        align(usize::try_from(len).ok()?)
    };
    ext_ack_text(flags, echoed.get(skip..)?)
}

/// NLMSGERR_ATTR_MSG among extended-ack attributes, when the kernel sent any.
fn ext_ack_text(flags: u16, mut attrs: &[u8]) -> Option<String> {
    if flags & NLM_F_ACK_TLVS == 0 {
        return None;
    }
    while attrs.len() >= 4 {
        let len = usize::from(u16::from_ne_bytes([attrs[0], attrs[1]]));
        let kind = u16::from_ne_bytes([attrs[2], attrs[3]]);
        let value = attrs.get(4..len)?;
        if kind == NLMSGERR_ATTR_MSG {
            let text = value.split(|b| *b == 0).next().unwrap_or_default();
            let text = String::from_utf8_lossy(text).trim().to_string();
            return (!text.is_empty()).then_some(text);
        }
        attrs = attrs.get(align(len)..).unwrap_or_default();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An extended-ack attribute: length, type, value, padding.
    fn attr(kind: u16, value: &[u8]) -> Vec<u8> {
        let len = u16::try_from(4 + value.len()).expect("short attribute");
        let mut out = [len.to_ne_bytes(), kind.to_ne_bytes()].concat();
        out.extend_from_slice(value);
        out.resize(align(out.len()), 0);
        out
    }

    #[test]
    fn ext_ack_text_is_found_among_other_attributes() {
        let attrs = [attr(2, &7u32.to_ne_bytes()), attr(1, b"mtu too big\0")].concat();
        assert_eq!(
            ext_ack_text(NLM_F_ACK_TLVS, &attrs).as_deref(),
            Some("mtu too big")
        );
        // Without the flag the bytes are not attributes.
        assert_eq!(ext_ack_text(0, &attrs), None);
        assert_eq!(ext_ack_text(NLM_F_ACK_TLVS, &attr(2, &[0; 4])), None);
    }

    #[test]
    fn ack_error_text_skips_the_echoed_request() {
        let text = attr(1, b"no such thing\0");
        // Capped: only the 16-byte header is echoed.
        let capped = [vec![0xaa; NLMSG_HDRLEN], text.clone()].concat();
        assert_eq!(
            ack_error_text(NLM_F_ACK_TLVS | NLM_F_CAPPED, &capped).as_deref(),
            Some("no such thing")
        );
        // Uncapped: the whole request, whose length is its header's first field.
        let mut request = vec![0xbb; 22];
        request[..4].copy_from_slice(&22u32.to_ne_bytes());
        let whole = [request, vec![0; 2], text].concat();
        assert_eq!(
            ack_error_text(NLM_F_ACK_TLVS, &whole).as_deref(),
            Some("no such thing")
        );
    }

    #[test]
    fn truncated_or_bogus_attributes_yield_nothing() {
        assert_eq!(ext_ack_text(NLM_F_ACK_TLVS, &[]), None);
        assert_eq!(ext_ack_text(NLM_F_ACK_TLVS, &[200, 0, 1, 0, b'x']), None);
        assert_eq!(ext_ack_text(NLM_F_ACK_TLVS, &[0, 0, 1, 0]), None);
        assert_eq!(ack_error_text(NLM_F_ACK_TLVS, &[1, 2]), None);
        assert_eq!(
            ack_error_text(NLM_F_ACK_TLVS, &u32::MAX.to_ne_bytes()),
            None
        );
    }

    #[test]
    fn kernel_errors_read_like_iproute2() {
        let plain = Error::from(NlError::Kernel {
            errno: libc::EEXIST,
            detail: None,
        });
        assert_eq!(plain.code(), crate::Code::System);
        assert_eq!(plain.msg(), "File exists (os error 17)");
        let detailed = Error::from(NlError::Kernel {
            errno: libc::EINVAL,
            detail: Some("mtu greater than device maximum".to_string()),
        });
        assert_eq!(
            detailed.msg(),
            "Invalid argument (os error 22): mtu greater than device maximum"
        );
    }

    #[test]
    fn netlink_can_be_shared_between_threads() {
        fn shareable<T: Send + Sync>() {}
        shareable::<Netlink>();
    }
}
