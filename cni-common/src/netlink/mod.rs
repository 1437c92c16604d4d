//! A synchronous rtnetlink client: one method per `ip` command, one netlink request each.
//!
//! CNI plugins are one-shot processes, so there is nothing for async to overlap: a [`Netlink`]
//! owns one blocking NETLINK_ROUTE socket bound to one namespace, and each method sends one
//! request and reads its answer before returning. Messages are built and parsed with
//! `netlink-packet-route`; the socket is `netlink-sys` without any runtime.

use std::io;
use std::os::fd::AsRawFd;
use std::sync::{Mutex, PoisonError};

use ipnetwork::IpNetwork;
use netlink_packet_core::{
    NetlinkBuffer, NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_ACK_TLVS, NLM_F_CAPPED,
    NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL, NLM_F_MULTIPART, NLM_F_REQUEST,
};
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{
    InfoBridge, InfoData, InfoKind, InfoVeth, LinkAttribute, LinkFlags, LinkInfo, LinkMessage,
    State,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::protocols::NETLINK_ROUTE;
use netlink_sys::{Socket, SocketAddr};

use crate::error::{Error, Result};
use crate::mac::MacAddr;
use crate::netns::NetNs;

mod bridge;
mod macvtap;
mod route;

pub use bridge::{BridgePort, PortVlan};
pub use route::{NewRoute, RouteEntry};

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
    /// The socket failed, or a reply made no sense.
    Socket(String),
}

impl NlError {
    /// The kernel's errno, 0 when the failure was ours.
    fn errno(&self) -> i32 {
        match self {
            NlError::Kernel { errno, .. } => *errno,
            NlError::Socket(_) => 0,
        }
    }
}

impl From<io::Error> for NlError {
    fn from(e: io::Error) -> Self {
        NlError::Socket(format!("netlink socket: {e}"))
    }
}

impl From<NlError> for Error {
    fn from(e: NlError) -> Self {
        match e {
            NlError::Kernel { errno, detail } => Error::Netlink { errno, detail },
            NlError::Socket(msg) => Error::system(msg),
        }
    }
}

/// What `ip link show` prints about one link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub index: u32,
    pub name: String,
    /// IFLA_INFO_KIND: "veth", "bridge", "macvtap", ...; None for kind-less links like `lo`.
    pub kind: Option<String>,
    pub mac: Option<MacAddr>,
    pub mtu: u32,
    /// IFF_UP: administratively up.
    pub up: bool,
    pub promisc: bool,
    pub allmulti: bool,
    pub txqlen: u32,
    /// IFLA_MASTER: the bridge (or other controller) this link is enslaved to.
    pub master: Option<u32>,
    /// IFLA_LINK: the veth peer's or the macvtap parent's index (in the peer's namespace).
    pub link: Option<u32>,
    /// Operational state is UP (carrier and all).
    pub oper_up: bool,
    /// IFLA_IFALIAS: `ip link set <dev> alias <text>`.
    pub alias: Option<String>,
    /// For a bridge: whether it filters by VLAN (IFLA_BR_VLAN_FILTERING).
    pub vlan_filtering: Option<bool>,
    /// For a bridge: the VLAN a new port joins as PVID, untagged (0: none).
    pub vlan_default_pvid: Option<u16>,
}

impl Link {
    fn from_message(msg: LinkMessage) -> Link {
        let flags = msg.header.flags;
        let mut link = Link {
            index: msg.header.index,
            name: String::new(),
            kind: None,
            mac: None,
            mtu: 0,
            up: flags.contains(LinkFlags::Up),
            promisc: flags.contains(LinkFlags::Promisc),
            allmulti: flags.contains(LinkFlags::Allmulti),
            txqlen: 0,
            master: None,
            link: None,
            oper_up: false,
            alias: None,
            vlan_filtering: None,
            vlan_default_pvid: None,
        };
        for attr in msg.attributes {
            match attr {
                LinkAttribute::IfName(name) => link.name = name,
                // Not every link has an Ethernet address (tun in L3 mode has none).
                LinkAttribute::Address(addr) => link.mac = MacAddr::try_from(addr.as_slice()).ok(),
                LinkAttribute::Mtu(mtu) => link.mtu = mtu,
                LinkAttribute::TxQueueLen(len) => link.txqlen = len,
                LinkAttribute::Controller(index) => link.master = Some(index),
                LinkAttribute::Link(index) => link.link = Some(index),
                LinkAttribute::OperState(state) => link.oper_up = state == State::Up,
                LinkAttribute::IfAlias(alias) => link.alias = Some(alias),
                LinkAttribute::LinkInfo(infos) => {
                    for info in infos {
                        match info {
                            LinkInfo::Kind(kind) => link.kind = Some(kind.to_string()),
                            LinkInfo::Data(InfoData::Bridge(attrs)) => {
                                for attr in attrs {
                                    match attr {
                                        InfoBridge::VlanFiltering(on) => {
                                            link.vlan_filtering = Some(on)
                                        }
                                        InfoBridge::VlanDefaultPvid(vid) => {
                                            link.vlan_default_pvid = Some(vid)
                                        }
                                        _ => {}
                                    }
                                }
                            }
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        link
    }
}

/// A veth pair to create: `ip link add <name> [mtu M] [address A] [master B] [up]
/// type veth peer name <peer_name> [mtu M] [address A] [netns N]`.
///
/// The peer cannot be brought up in the same request (the kernel opens it before the pair is
/// joined and refuses with ENOTCONN), and the kernel ignores an alias given at creation.
#[derive(Debug, Clone, Copy, Default)]
pub struct Veth<'a> {
    pub name: &'a str,
    pub peer_name: &'a str,
    /// Where the kernel creates the peer; None for the socket's own namespace.
    pub peer_netns: Option<&'a NetNs>,
    /// Applied to both ends.
    pub mtu: Option<u32>,
    pub mac: Option<MacAddr>,
    pub peer_mac: Option<MacAddr>,
    /// The bridge (or other controller) `name` joins as it is created.
    pub master: Option<u32>,
    /// `name` is created administratively up.
    pub up: bool,
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
        let socket = open_socket().map_err(|e| Error::wrap("opening a netlink socket", e))?;
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
            .map_err(|e| Error::wrap(format!("netlink socket in netns {}", ns.path().display()), e))
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
                let one = NetlinkBuffer::new_checked(rest)
                    .map_err(|e| NlError::Socket(format!("malformed netlink reply: {e}")))?;
                let msg_len = one.length() as usize;
                let msg_seq = one.sequence_number();
                let msg_bytes = &rest[..msg_len];
                rest = rest.get(align(msg_len)..).unwrap_or_default();
                if msg_seq != seq {
                    continue;
                }
                let reply = NetlinkMessage::<RouteNetlinkMessage>::deserialize(msg_bytes)
                    .map_err(|e| NlError::Socket(format!("undecodable netlink reply: {e}")))?;
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
                    NetlinkPayload::Overrun(_) => {
                        return Err(NlError::Socket("netlink reply overrun".to_string()))
                    }
                    _ => {}
                }
            }
        }
    }

    /// Reads one datagram into `buf`, growing it when the datagram is larger, and returns its
    /// length. Netlink drops the tail of a datagram that does not fit, so the length is peeked
    /// (MSG_PEEK | MSG_TRUNC) before the read.
    fn recv_datagram(&self, buf: &mut Vec<u8>) -> std::result::Result<usize, NlError> {
        let mut nothing: &mut [u8] = &mut [];
        let len = retry_eintr(|| {
            self.socket
                .recv(&mut nothing, libc::MSG_PEEK | libc::MSG_TRUNC)
        })?;
        buf.clear();
        buf.reserve(len.max(RECV_BUF));
        // recv fills the spare capacity and sets the length to what it read.
        let read = retry_eintr(|| self.socket.recv(buf, 0))?;
        if read != len {
            return Err(NlError::Socket(format!(
                "netlink datagram of {len} bytes read as {read}"
            )));
        }
        Ok(len)
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

/// An RTM_*LINK message about the link with `index` (0: none, e.g. when naming it instead).
fn link_message(index: u32) -> LinkMessage {
    let mut msg = LinkMessage::default();
    msg.header.index = index;
    msg
}

/// A message that names a link instead of giving its index.
fn link_message_named(name: &str) -> LinkMessage {
    let mut msg = LinkMessage::default();
    msg.attributes.push(LinkAttribute::IfName(name.to_string()));
    msg
}

/// Sets or clears one IFF_* flag; the change mask makes the kernel leave the others alone.
fn link_message_flag(index: u32, flag: LinkFlags, on: bool) -> LinkMessage {
    let mut msg = link_message(index);
    msg.header.flags.set(flag, on);
    msg.header.change_mask |= flag;
    msg
}

/// A link message carrying one attribute.
fn link_message_attr(index: u32, attr: LinkAttribute) -> LinkMessage {
    let mut msg = link_message(index);
    msg.attributes.push(attr);
    msg
}

// ip link
impl Netlink {
    /// `ip link show <name>`; None when there is no such link.
    pub fn link_show(&self, name: &str) -> Result<Option<Link>> {
        // Such a name cannot exist; the kernel would answer EINVAL rather than ENODEV.
        if name.is_empty() || name.len() >= IFNAMSIZ {
            return Ok(None);
        }
        self.get_link(link_message_named(name))
            .map_err(|e| Error::wrap(format!("ip link show {name}"), e))
    }

    /// `ip link show type <kind>`: every link of that kind in the namespace ("bridge", "veth",
    /// ...). The kernel filters the dump when it knows the kind; the kind is checked again here,
    /// because kernels before 4.20, and kinds whose module is not loaded, get no filter.
    pub fn link_list_kind(&self, kind: &str) -> Result<Vec<Link>> {
        let mut req = LinkMessage::default();
        req.attributes
            .push(LinkAttribute::LinkInfo(vec![LinkInfo::Kind(
                InfoKind::from(kind),
            )]));
        let replies = self
            .dump(RouteNetlinkMessage::GetLink(req))
            .map_err(|e| Error::wrap(format!("ip link show type {kind}"), e))?;
        Ok(replies
            .into_iter()
            .filter_map(|m| match m {
                RouteNetlinkMessage::NewLink(link) => Some(Link::from_message(link)),
                _ => None,
            })
            .filter(|l| l.kind.as_deref() == Some(kind))
            .collect())
    }

    /// `ip link show` by index; None when there is no such link.
    pub fn link_show_index(&self, index: u32) -> Result<Option<Link>> {
        self.get_link(link_message(index))
            .map_err(|e| Error::wrap(format!("ip link show index {index}"), e))
    }

    /// `ip link add <name> type veth peer name <peer_name> [netns N]`; returns the index of
    /// `name`. The peer is created directly in its namespace (IFLA_NET_NS_FD inside the peer's
    /// info), so it never appears, or collides, in ours.
    pub fn link_add_veth(&self, veth: &Veth) -> Result<u32> {
        self.link_add_veth_show(veth).map(|link| link.index)
    }

    /// [`Netlink::link_add_veth`], returning what `ip link show <name>` says of the new link.
    pub fn link_add_veth_show(&self, veth: &Veth) -> Result<Link> {
        let mut peer = link_message_named(veth.peer_name);
        let mut local = link_message_named(veth.name);
        if let Some(ns) = veth.peer_netns {
            peer.attributes.push(LinkAttribute::NetNsFd(ns.as_raw_fd()));
        }
        if let Some(mtu) = veth.mtu {
            peer.attributes.push(LinkAttribute::Mtu(mtu));
            local.attributes.push(LinkAttribute::Mtu(mtu));
        }
        if let Some(mac) = veth.peer_mac {
            peer.attributes
                .push(LinkAttribute::Address(mac.octets().to_vec()));
        }
        if let Some(mac) = veth.mac {
            local
                .attributes
                .push(LinkAttribute::Address(mac.octets().to_vec()));
        }
        if let Some(master) = veth.master {
            local.attributes.push(LinkAttribute::Controller(master));
        }
        if veth.up {
            local.header.flags |= LinkFlags::Up;
            local.header.change_mask |= LinkFlags::Up;
        }
        local.attributes.push(LinkAttribute::LinkInfo(vec![
            LinkInfo::Kind(InfoKind::Veth),
            LinkInfo::Data(InfoData::Veth(InfoVeth::Peer(peer))),
        ]));
        let doing = || {
            format!(
                "ip link add {} type veth peer name {}",
                veth.name, veth.peer_name
            )
        };
        match self.ack(
            RouteNetlinkMessage::NewLink(local),
            NLM_F_CREATE | NLM_F_EXCL,
        ) {
            Ok(()) => {}
            Err(e) if e.errno() == libc::EEXIST => {
                return Err(Error::wrap(format!(
                    "{}: a link named {} or {} already exists",
                    doing(),
                    veth.name,
                    veth.peer_name
                ), e));
            }
            Err(e) => return Err(Error::wrap(doing(), e)),
        }
        // RTM_NEWLINK does not return the new index (NLM_F_ECHO for it needs Linux 6.3); ask.
        match self.link_show(veth.name)? {
            Some(link) => Ok(link),
            None => Err(Error::system(format!("{}: created link vanished", doing()))),
        }
    }

    /// `ip link set <index> up`.
    pub fn link_set_up(&self, index: u32) -> Result<()> {
        self.set_link(link_message_flag(index, LinkFlags::Up, true))
            .map_err(|e| Error::wrap(format!("ip link set {index} up"), e))
    }

    /// `ip link set <index> down`.
    pub fn link_set_down(&self, index: u32) -> Result<()> {
        self.set_link(link_message_flag(index, LinkFlags::Up, false))
            .map_err(|e| Error::wrap(format!("ip link set {index} down"), e))
    }

    /// `ip link set <index> mtu <mtu>`.
    pub fn link_set_mtu(&self, index: u32, mtu: u32) -> Result<()> {
        self.set_link(link_message_attr(index, LinkAttribute::Mtu(mtu)))
            .map_err(|e| Error::wrap(format!("ip link set {index} mtu {mtu}"), e))
    }

    /// `ip link set <index> address <mac>`.
    pub fn link_set_address(&self, index: u32, mac: &MacAddr) -> Result<()> {
        let attr = LinkAttribute::Address(mac.octets().to_vec());
        self.set_link(link_message_attr(index, attr))
            .map_err(|e| Error::wrap(format!("ip link set {index} address {mac}"), e))
    }

    /// `ip link set <index> promisc on|off`.
    pub fn link_set_promisc(&self, index: u32, on: bool) -> Result<()> {
        self.set_link(link_message_flag(index, LinkFlags::Promisc, on))
            .map_err(|e| Error::wrap(format!("ip link set {index} promisc {}", on_off(on)), e))
    }

    /// `ip link set <index> allmulticast on|off`.
    pub fn link_set_allmulti(&self, index: u32, on: bool) -> Result<()> {
        self.set_link(link_message_flag(index, LinkFlags::Allmulti, on))
            .map_err(|e| Error::wrap(format!("ip link set {index} allmulticast {}", on_off(on)), e))
    }

    /// `ip link set <index> txqueuelen <len>`.
    pub fn link_set_txqlen(&self, index: u32, len: u32) -> Result<()> {
        self.set_link(link_message_attr(index, LinkAttribute::TxQueueLen(len)))
            .map_err(|e| Error::wrap(format!("ip link set {index} txqueuelen {len}"), e))
    }

    /// `ip link set <index> name <name>`.
    pub fn link_set_name(&self, index: u32, name: &str) -> Result<()> {
        let attr = LinkAttribute::IfName(name.to_string());
        self.set_link(link_message_attr(index, attr))
            .map_err(|e| Error::wrap(format!("ip link set {index} name {name}"), e))
    }

    /// `ip link set <index> alias <alias>`.
    pub fn link_set_alias(&self, index: u32, alias: &str) -> Result<()> {
        let attr = LinkAttribute::IfAlias(alias.to_string());
        self.set_link(link_message_attr(index, attr))
            .map_err(|e| Error::wrap(format!("ip link set {index} alias {alias}"), e))
    }

    /// `ip link set dev <name> up`, naming the link instead of giving its index.
    pub fn link_set_up_by_name(&self, name: &str) -> Result<()> {
        let mut msg = link_message_named(name);
        msg.header.flags.set(LinkFlags::Up, true);
        msg.header.change_mask |= LinkFlags::Up;
        self.set_link(msg)
            .map_err(|e| Error::wrap(format!("ip link set dev {name} up"), e))
    }

    /// `ip link set <index> master <master>`.
    pub fn link_set_master(&self, index: u32, master: u32) -> Result<()> {
        self.set_link(link_message_attr(index, LinkAttribute::Controller(master)))
            .map_err(|e| Error::wrap(format!("ip link set {index} master {master}"), e))
    }

    /// `ip link set <index> netns <ns>`.
    pub fn link_set_netns(&self, index: u32, ns: &NetNs) -> Result<()> {
        let attr = LinkAttribute::NetNsFd(ns.as_raw_fd());
        self.set_link(link_message_attr(index, attr))
            .map_err(|e| Error::wrap(format!("ip link set {index} netns {}", ns.path().display()), e))
    }

    /// `ip link del <index>`; a link that is already gone is not an error (DEL is idempotent).
    pub fn link_del(&self, index: u32) -> Result<()> {
        match self.ack(RouteNetlinkMessage::DelLink(link_message(index)), 0) {
            Err(e) if e.errno() != libc::ENODEV => {
                Err(Error::wrap(format!("ip link del {index}"), e))
            }
            _ => Ok(()),
        }
    }

    /// `ip link del <name>` in one request; false when there was no such link.
    pub fn link_del_by_name(&self, name: &str) -> Result<bool> {
        if name.is_empty() || name.len() >= IFNAMSIZ {
            return Ok(false);
        }
        match self.ack(RouteNetlinkMessage::DelLink(link_message_named(name)), 0) {
            Ok(()) => Ok(true),
            Err(e) if e.errno() == libc::ENODEV => Ok(false),
            Err(e) => Err(Error::wrap(format!("ip link del {name}"), e)),
        }
    }
}

// ip addr
impl Netlink {
    /// `ip addr show dev <index>`: IPv4 and IPv6 addresses with their prefix length.
    pub fn addr_list(&self, index: u32) -> Result<Vec<IpNetwork>> {
        // With strict checking the kernel filters the dump by index, instead of sending every
        // address of the namespace; the family stays unspecified for both IPv4 and IPv6.
        let mut req = AddressMessage::default();
        req.header.index = index;
        let replies = self
            .dump(RouteNetlinkMessage::GetAddress(req))
            .map_err(|e| Error::wrap(format!("ip addr show dev {index}"), e))?;
        let mut addrs = Vec::with_capacity(replies.len());
        for reply in replies {
            let RouteNetlinkMessage::NewAddress(msg) = reply else {
                continue;
            };
            // Older kernels ignore the filter.
            if msg.header.index != index {
                continue;
            }
            // IFA_LOCAL is the interface's own address; IFA_ADDRESS is the peer's on
            // point-to-point links, and the only one given for IPv6.
            let local = msg.attributes.iter().find_map(|a| match a {
                AddressAttribute::Local(ip) => Some(*ip),
                _ => None,
            });
            let address = msg.attributes.iter().find_map(|a| match a {
                AddressAttribute::Address(ip) => Some(*ip),
                _ => None,
            });
            if let Some(ip) = local.or(address) {
                let net = IpNetwork::new(ip, msg.header.prefix_len)
                    .map_err(|e| Error::system(format!("address {ip} from the kernel: {e}")))?;
                addrs.push(net);
            }
        }
        Ok(addrs)
    }

    /// `ip addr del <addr> dev <index>`.
    pub fn addr_del(&self, index: u32, addr: IpNetwork) -> Result<()> {
        let mut msg = AddressMessage::default();
        msg.header.index = index;
        msg.header.prefix_len = addr.prefix();
        msg.header.family = match addr {
            IpNetwork::V4(_) => AddressFamily::Inet,
            IpNetwork::V6(_) => AddressFamily::Inet6,
        };
        msg.attributes.push(AddressAttribute::Local(addr.ip()));
        self.ack(RouteNetlinkMessage::DelAddress(msg), 0)
            .map_err(|e| Error::wrap(format!("ip addr del {addr} dev {index}"), e))
    }

    /// `ip addr add <addr> dev <index>`. IPv4 addresses get the subnet's broadcast address, as
    /// Go's netlink.AddrAdd gives them.
    pub fn addr_add(&self, index: u32, addr: IpNetwork) -> Result<()> {
        let mut msg = AddressMessage::default();
        msg.header.index = index;
        msg.header.prefix_len = addr.prefix();
        msg.header.family = match addr {
            IpNetwork::V4(_) => AddressFamily::Inet,
            IpNetwork::V6(_) => AddressFamily::Inet6,
        };
        msg.attributes.push(AddressAttribute::Local(addr.ip()));
        msg.attributes.push(AddressAttribute::Address(addr.ip()));
        if let IpNetwork::V4(net) = addr {
            // /31 and /32 have no broadcast address (RFC 3021).
            if net.prefix() < 31 {
                msg.attributes
                    .push(AddressAttribute::Broadcast(net.broadcast()));
            }
        }
        self.ack(
            RouteNetlinkMessage::NewAddress(msg),
            NLM_F_CREATE | NLM_F_EXCL,
        )
        .map_err(|e| Error::wrap(format!("ip addr add {addr} dev {index}"), e))
    }
}

fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
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
