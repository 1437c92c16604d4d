//! What wakes the bridge marker and the nmstate handler between their ticks: the kernel's link
//! notifications in the agent's network namespace (RTNLGRP_LINK). A link that appears, goes, or
//! changes its name, kind or master may change the list of bridges, Linux or Open vSwitch
//! (whose bridges have a netdev in the kernel too), or the node's state, so they look again at
//! once instead of at the next tick. Carrier and flag changes do not. A spurious round costs
//! one listing: the API server is asked only when what was listed changed.
//!
//! The socket is non-blocking and waited on with tokio's `AsyncFd` rather than read on a
//! blocking thread: the runtime's one thread never waits in `recv`, and dropping the watch (a
//! signal ending `run`) closes the socket, with no thread left blocked in the kernel.

use std::collections::HashMap;
use std::time::Duration;

use cni_common::netlink::{LinkEvent, LinkEvents, LinkNotices};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

use crate::error::{Context, Result};

/// What the marker's listings depend on, per link index: name, kind, master.
type Identity = (String, Option<String>, Option<u32>);

/// Which notifications change what a marker lists. Links are learnt from their first
/// notification (a first sight counts as a change: the link may be new).
#[derive(Debug, Default)]
pub struct Seen {
    links: HashMap<u32, Identity>,
    /// Every notification counts (the node's network state report shows addresses, MTUs and
    /// flags too).
    every: bool,
}

impl Seen {
    /// Takes in one read's notifications; whether any of them may change the bridges.
    pub fn note(&mut self, notices: LinkNotices) -> bool {
        if self.every {
            return true;
        }
        match notices {
            LinkNotices::Missed => {
                // Whatever was lost may have been anything: learn the links afresh.
                self.links.clear();
                true
            }
            LinkNotices::Events(events) => {
                // Every one is taken in, also after a change.
                let mut changed = false;
                for event in events {
                    changed |= self.note_one(event);
                }
                changed
            }
        }
    }

    fn note_one(&mut self, event: LinkEvent) -> bool {
        match event {
            LinkEvent::New(link) => {
                let identity = (link.name, link.kind, link.master);
                self.links.insert(link.index, identity.clone()) != Some(identity)
            }
            LinkEvent::Del(link) => {
                self.links.remove(&link.index);
                true
            }
        }
    }
}

/// The link notifications of the namespace the agent runs in.
pub struct LinkWatch {
    socket: AsyncFd<LinkEvents>,
    seen: Seen,
}

impl LinkWatch {
    /// Subscribes in the calling thread's namespace; inside the runtime.
    pub fn open() -> Result<LinkWatch> {
        LinkWatch::subscribe(Seen::default())
    }

    /// As `open`, with every notification a change.
    pub fn open_every() -> Result<LinkWatch> {
        LinkWatch::subscribe(Seen {
            every: true,
            ..Seen::default()
        })
    }

    fn subscribe(seen: Seen) -> Result<LinkWatch> {
        let events = LinkEvents::subscribe().context("link notifications")?;
        events.set_nonblocking(true).context("link notifications")?;
        // SAFETY: `LinkEvents` owns its socket for as long as it lives and always answers the
        // same descriptor; it is only ever read through `get_mut`, never replaced.
        let socket = unsafe { AsyncFd::register_with_interest(events, Interest::READABLE) }
            // A failed registration hands the socket back beside its error.
            .map_err(std::io::Error::from)
            .context("waiting for link notifications")?;
        Ok(LinkWatch { socket, seen })
    }

    /// Returns when a link appeared, went, or changed its name, kind or master, or when
    /// notifications were lost. Cancel-safe: what it read before being dropped was only
    /// notifications that changed nothing.
    pub async fn changed(&mut self) -> Result<()> {
        loop {
            let mut ready = self
                .socket
                .readable_mut()
                .await
                .context("waiting for link notifications")?;
            // Reads until the socket is empty (WouldBlock clears the readiness) or a change.
            while let Ok(read) = ready.try_io(|socket| socket.get_mut().recv()) {
                let notices = read.context("reading link notifications")?;
                if self.seen.note(notices) {
                    return Ok(());
                }
            }
        }
    }

    /// Takes in what else comes within `window`, so that a burst (a bridge, its ports, their
    /// state changes) makes one round.
    pub async fn settle(&mut self, window: Duration) -> Result<()> {
        let until = tokio::time::Instant::now() + window;
        while let Ok(read) = tokio::time::timeout_at(until, self.changed()).await {
            read?;
        }
        Ok(())
    }
}

/// Returns when a link changed (or notifications were lost), once the burst has settled for
/// `settle`; never without notifications. A socket that fails is dropped, after a warning that
/// ends with `otherwise` (what the caller falls back to).
pub async fn next_change(links: &mut Option<LinkWatch>, settle: Duration, otherwise: &str) {
    let Some(watch) = links else {
        return std::future::pending().await;
    };
    let changed = match watch.changed().await {
        Ok(()) => watch.settle(settle).await,
        Err(e) => Err(e),
    };
    if let Err(e) = changed {
        tracing::warn!("{}; {otherwise}", e.report());
        *links = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cni_common::netlink::Link;

    fn link(index: u32, name: &str, kind: &str, master: Option<u32>) -> Link {
        Link {
            index,
            name: name.to_string(),
            kind: Some(kind.to_string()),
            mac: None,
            mtu: 1500,
            up: false,
            promisc: false,
            allmulti: false,
            txqlen: 1000,
            master,
            link: None,
            oper_up: false,
            alias: None,
            vlan_filtering: None,
            vlan_default_pvid: None,
        }
    }

    fn new(l: &Link) -> LinkNotices {
        LinkNotices::Events(vec![LinkEvent::New(l.clone())])
    }

    #[test]
    fn links_coming_going_renamed_or_moved_are_changes_flags_and_carrier_are_not() {
        let mut seen = Seen::default();
        let br = link(3, "br0", "bridge", None);
        assert!(seen.note(new(&br)), "a link first seen");
        assert!(!seen.note(new(&br)), "the same again");
        let up = Link {
            up: true,
            oper_up: true,
            mtu: 9000,
            ..br.clone()
        };
        assert!(!seen.note(new(&up)), "flags, carrier, MTU");
        assert!(seen.note(new(&Link {
            name: "br1".to_string(),
            ..up.clone()
        })));
        let port = link(4, "veth0", "veth", None);
        assert!(seen.note(new(&port)));
        assert!(seen.note(new(&Link {
            master: Some(3),
            ..port.clone()
        })));
        assert!(seen.note(new(&port)), "left its bridge");
        assert!(seen.note(LinkNotices::Events(vec![LinkEvent::Del(port.clone())])));
        assert!(!seen.note(LinkNotices::Events(vec![])));
        // The index is reused by a link of another kind.
        assert!(seen.note(new(&link(4, "veth0", "dummy", None))));
        // One change among several notices is a change.
        assert!(seen.note(LinkNotices::Events(vec![
            LinkEvent::New(link(4, "veth0", "dummy", None)),
            LinkEvent::Del(link(9, "br9", "bridge", None)),
        ])));
    }

    #[test]
    fn lost_notifications_are_a_change_and_links_are_learnt_again() {
        let mut seen = Seen::default();
        let br = link(3, "br0", "bridge", None);
        assert!(seen.note(new(&br)));
        assert!(seen.note(LinkNotices::Missed));
        assert!(seen.note(new(&br)), "forgotten after a loss");
        assert!(!seen.note(new(&br)));
    }
}
