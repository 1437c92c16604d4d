//! `ip monitor link`: the kernel's notifications of links appearing, changing and going
//! (multicast group RTNLGRP_LINK), for a process that follows a namespace's links instead of
//! polling them.
//!
//! The socket is synchronous like [`Netlink`](super::Netlink)'s; a caller with an event loop
//! makes it non-blocking and waits for its descriptor to become readable.

use std::io;
use std::os::fd::{AsRawFd, RawFd};

use netlink_packet_core::{NetlinkBuffer, NetlinkMessage, NetlinkPayload};
use netlink_packet_route::link::LinkMessage;
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::protocols::NETLINK_ROUTE;
use netlink_sys::Socket;

use super::{align, Link, NlError, RECV_BUF};
use crate::error::{Code, Context, ContextAs, Result};
use crate::netns::NetNs;

/// RTNLGRP_LINK: RTM_NEWLINK and RTM_DELLINK of every link in the namespace.
const RTNLGRP_LINK: u32 = 1;

/// One link notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkEvent {
    /// RTM_NEWLINK: the link appeared, or something about it changed (name, master, flags,
    /// carrier...); the kernel does not say which.
    New(Link),
    /// RTM_DELLINK: the link is gone.
    Del(Link),
}

/// What one read brought.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkNotices {
    /// The notifications of one datagram (possibly none that concern links).
    Events(Vec<LinkEvent>),
    /// Notifications were lost: the socket's buffer overflowed (ENOBUFS), or one could not be
    /// decoded. Whoever follows the links has to read them afresh.
    Missed,
}

/// A NETLINK_ROUTE socket subscribed to the link notifications of one network namespace.
pub struct LinkEvents {
    socket: Socket,
    buf: Vec<u8>,
}

impl LinkEvents {
    /// Subscribes in the calling thread's namespace. Only what happens from now on is seen: a
    /// caller lists the links after subscribing, not before, to miss nothing in between.
    pub fn subscribe() -> Result<LinkEvents> {
        let open = || -> io::Result<Socket> {
            let mut socket = Socket::new(NETLINK_ROUTE)?;
            socket.bind_auto()?;
            socket.add_membership(RTNLGRP_LINK)?;
            Ok(socket)
        };
        let socket = open()
            .map_err(NlError::Socket)
            .context("subscribing to link notifications")?;
        Ok(LinkEvents {
            socket,
            buf: Vec::with_capacity(RECV_BUF),
        })
    }

    /// Subscribes in `ns`: the socket is created on a thread inside `ns` and stays there.
    pub fn subscribe_in(ns: &NetNs) -> Result<LinkEvents> {
        ns.run(LinkEvents::subscribe)
            .with_context(|| format!("link notifications in netns {}", ns.path().display()))
    }

    /// Non-blocking, [`LinkEvents::recv`] fails with `WouldBlock` when nothing is queued.
    pub fn set_nonblocking(&self, on: bool) -> Result<()> {
        // As the socket's other failures: a host failure (100), without the errno.
        self.socket
            .set_non_blocking(on)
            .context_as(Code::System, "netlink socket: O_NONBLOCK")
    }

    /// Reads one datagram of notifications, waiting for one unless non-blocking. Bridge port
    /// notifications (family AF_BRIDGE, sent to the same group when a port joins, leaves or
    /// changes VLANs) are not link events and are left out.
    pub fn recv(&mut self) -> io::Result<LinkNotices> {
        match self.recv_datagram() {
            Ok(len) => Ok(parse(&self.buf[..len])),
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => Ok(LinkNotices::Missed),
            Err(e) => Err(e),
        }
    }

    fn recv_datagram(&mut self) -> io::Result<usize> {
        super::recv_datagram(&self.socket, &mut self.buf)
    }
}

impl AsRawFd for LinkEvents {
    fn as_raw_fd(&self) -> RawFd {
        self.socket.as_raw_fd()
    }
}

/// The link events of one datagram; anything undecodable makes it [`LinkNotices::Missed`].
fn parse(mut rest: &[u8]) -> LinkNotices {
    let mut events = Vec::new();
    while !rest.is_empty() {
        let Ok(one) = NetlinkBuffer::new_checked(rest) else {
            return LinkNotices::Missed;
        };
        let len = one.length() as usize;
        let bytes = &rest[..len];
        rest = rest.get(align(len)..).unwrap_or_default();
        let Ok(msg) = NetlinkMessage::<RouteNetlinkMessage>::deserialize(bytes) else {
            return LinkNotices::Missed;
        };
        let link = |m: LinkMessage| {
            (m.header.interface_family == AddressFamily::Unspec).then(|| Link::from_message(m))
        };
        let event = match msg.payload {
            NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewLink(m)) => {
                link(m).map(LinkEvent::New)
            }
            NetlinkPayload::InnerMessage(RouteNetlinkMessage::DelLink(m)) => {
                link(m).map(LinkEvent::Del)
            }
            NetlinkPayload::Overrun(_) => return LinkNotices::Missed,
            _ => None,
        };
        events.extend(event);
    }
    LinkNotices::Events(events)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::netlink::Netlink;
    use netlink_packet_route::link::{LinkAttribute, LinkHeader};

    fn datagram(messages: Vec<RouteNetlinkMessage>) -> Vec<u8> {
        let mut out = Vec::new();
        for m in messages {
            let mut msg = NetlinkMessage::from(m);
            msg.finalize();
            let mut buf = vec![0; msg.buffer_len()];
            msg.serialize(&mut buf);
            buf.resize(align(buf.len()), 0);
            out.extend(buf);
        }
        out
    }

    fn link_message(family: AddressFamily, index: u32, name: &str) -> LinkMessage {
        let mut m = LinkMessage::default();
        m.header = LinkHeader {
            interface_family: family,
            index,
            ..LinkHeader::default()
        };
        m.attributes.push(LinkAttribute::IfName(name.to_string()));
        m
    }

    #[test]
    fn link_events_are_parsed_and_bridge_port_notices_left_out() {
        let bytes = datagram(vec![
            RouteNetlinkMessage::NewLink(link_message(AddressFamily::Unspec, 3, "br0")),
            RouteNetlinkMessage::DelLink(link_message(AddressFamily::Bridge, 4, "veth0")),
            RouteNetlinkMessage::DelLink(link_message(AddressFamily::Unspec, 5, "br1")),
        ]);
        let LinkNotices::Events(events) = parse(&bytes) else {
            panic!("events");
        };
        let names: Vec<_> = events
            .iter()
            .map(|e| match e {
                LinkEvent::New(l) => ("new", l.index, l.name.as_str()),
                LinkEvent::Del(l) => ("del", l.index, l.name.as_str()),
            })
            .collect();
        assert_eq!(names, [("new", 3, "br0"), ("del", 5, "br1")]);
    }

    #[test]
    fn an_undecodable_datagram_is_a_miss() {
        assert_eq!(parse(&[1, 2, 3]), LinkNotices::Missed);
        let mut bytes = datagram(vec![RouteNetlinkMessage::NewLink(link_message(
            AddressFamily::Unspec,
            3,
            "br0",
        ))]);
        // A length past the end of the datagram.
        bytes[0] = 0xff;
        assert_eq!(parse(&bytes), LinkNotices::Missed);
    }

    /// A namespace of the test's own, made on a throwaway thread.
    fn new_netns() -> NetNs {
        std::thread::spawn(|| {
            nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).expect("unshare");
            NetNs::current().expect("the new netns")
        })
        .join()
        .expect("unshare thread")
    }

    /// Reads until an event for `name` that `want` accepts.
    fn next_for(events: &mut LinkEvents, name: &str, want: fn(&LinkEvent) -> bool) -> LinkEvent {
        loop {
            match events.recv().expect("recv") {
                LinkNotices::Events(list) => {
                    if let Some(e) = list.into_iter().find(|e| {
                        let (LinkEvent::New(l) | LinkEvent::Del(l)) = e;
                        l.name == name && want(e)
                    }) {
                        return e;
                    }
                }
                LinkNotices::Missed => panic!("missed notifications"),
            }
        }
    }

    #[test]
    fn a_bridge_coming_and_going_is_seen_in_its_namespace_only() {
        netns_tests::skip_unless_root!();
        let ns = new_netns();
        let other = new_netns();
        let mut events = LinkEvents::subscribe_in(&ns).expect("subscribe");
        let nl = Netlink::in_netns(&ns).expect("netlink");
        let elsewhere = Netlink::in_netns(&other).expect("netlink");
        elsewhere
            .link_add_bridge("brother0", None, false)
            .expect("bridge elsewhere");
        nl.link_add_bridge("brev0", None, false).expect("bridge");
        let LinkEvent::New(added) =
            next_for(&mut events, "brev0", |e| matches!(e, LinkEvent::New(_)))
        else {
            unreachable!()
        };
        assert_eq!(added.kind.as_deref(), Some("bridge"));
        nl.link_del(added.index).expect("del");
        let gone = next_for(&mut events, "brev0", |e| matches!(e, LinkEvent::Del(_)));
        assert!(matches!(gone, LinkEvent::Del(l) if l.index == added.index));
        // Nothing of the other namespace came through, and nothing is left queued.
        events.set_nonblocking(true).expect("nonblocking");
        loop {
            match events.recv() {
                Ok(LinkNotices::Events(list)) => assert!(
                    list.iter().all(|e| {
                        let (LinkEvent::New(l) | LinkEvent::Del(l)) = e;
                        l.name != "brother0"
                    }),
                    "{list:?}"
                ),
                Ok(LinkNotices::Missed) => panic!("missed notifications"),
                Err(e) => {
                    assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "{e}");
                    break;
                }
            }
        }
    }

    #[test]
    fn an_overflowing_socket_reports_a_miss_then_goes_on() {
        netns_tests::skip_unless_root!();
        let ns = new_netns();
        let mut events = LinkEvents::subscribe_in(&ns).expect("subscribe");
        // The smallest buffer the kernel allows holds a notification or two.
        events.socket.set_rx_buf_sz(0i32).expect("SO_RCVBUF");
        let nl = Netlink::in_netns(&ns).expect("netlink");
        for i in 0..20 {
            nl.link_add_bridge(&format!("brov{i}"), None, false)
                .expect("bridge");
        }
        let mut missed = false;
        events.set_nonblocking(true).expect("nonblocking");
        loop {
            match events.recv() {
                Ok(LinkNotices::Missed) => missed = true,
                Ok(LinkNotices::Events(_)) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("recv: {e}"),
            }
        }
        assert!(missed, "20 bridges overflowed the smallest buffer");
        events.set_nonblocking(false).expect("blocking");
        nl.link_add_bridge("brafter", None, false).expect("bridge");
        next_for(&mut events, "brafter", |e| matches!(e, LinkEvent::New(_)));
    }
}
