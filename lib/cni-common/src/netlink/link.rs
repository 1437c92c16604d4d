//! `ip link`: what a link looks like, and the requests that show, add, change and delete links.

use std::os::fd::AsRawFd;

use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::link::{
    InfoBridge, InfoData, InfoKind, InfoVeth, InfoVlan, LinkAttribute, LinkFlags, LinkInfo,
    LinkMessage, State,
};
use netlink_packet_route::RouteNetlinkMessage;

use super::{Netlink, IFNAMSIZ};
use crate::error::{Context, Error, Result};
use crate::mac::MacAddr;
use crate::netns::NetNs;

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
    pub(super) fn from_message(msg: LinkMessage) -> Link {
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

/// An RTM_*LINK message about the link with `index` (0: none, e.g. when naming it instead).
pub(super) fn link_message(index: u32) -> LinkMessage {
    let mut msg = LinkMessage::default();
    msg.header.index = index;
    msg
}

/// A message that names a link instead of giving its index.
pub(super) fn link_message_named(name: &str) -> LinkMessage {
    let mut msg = LinkMessage::default();
    msg.attributes.push(LinkAttribute::IfName(name.to_string()));
    msg
}

/// Sets or clears one IFF_* flag; the change mask makes the kernel leave the others alone.
pub(super) fn link_message_flag(index: u32, flag: LinkFlags, on: bool) -> LinkMessage {
    let mut msg = link_message(index);
    msg.header.flags.set(flag, on);
    msg.header.change_mask |= flag;
    msg
}

/// A link message carrying one attribute.
pub(super) fn link_message_attr(index: u32, attr: LinkAttribute) -> LinkMessage {
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
            .with_context(|| format!("ip link show {name}"))
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
            .with_context(|| format!("ip link show type {kind}"))?;
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
            .with_context(|| format!("ip link show index {index}"))
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
                return Err(Error::wrap(
                    format!(
                        "{}: a link named {} or {} already exists",
                        doing(),
                        veth.name,
                        veth.peer_name
                    ),
                    e,
                ));
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
            .with_context(|| format!("ip link set {index} up"))
    }

    /// `ip link set <index> down`.
    pub fn link_set_down(&self, index: u32) -> Result<()> {
        self.set_link(link_message_flag(index, LinkFlags::Up, false))
            .with_context(|| format!("ip link set {index} down"))
    }

    /// `ip link set <index> mtu <mtu>`.
    pub fn link_set_mtu(&self, index: u32, mtu: u32) -> Result<()> {
        self.set_link(link_message_attr(index, LinkAttribute::Mtu(mtu)))
            .with_context(|| format!("ip link set {index} mtu {mtu}"))
    }

    /// `ip link set <index> address <mac>`.
    pub fn link_set_address(&self, index: u32, mac: &MacAddr) -> Result<()> {
        let attr = LinkAttribute::Address(mac.octets().to_vec());
        self.set_link(link_message_attr(index, attr))
            .with_context(|| format!("ip link set {index} address {mac}"))
    }

    /// `ip link set <index> promisc on|off`.
    pub fn link_set_promisc(&self, index: u32, on: bool) -> Result<()> {
        self.set_link(link_message_flag(index, LinkFlags::Promisc, on))
            .with_context(|| format!("ip link set {index} promisc {}", on_off(on)))
    }

    /// `ip link set <index> allmulticast on|off`.
    pub fn link_set_allmulti(&self, index: u32, on: bool) -> Result<()> {
        self.set_link(link_message_flag(index, LinkFlags::Allmulti, on))
            .with_context(|| format!("ip link set {index} allmulticast {}", on_off(on)))
    }

    /// `ip link set <index> txqueuelen <len>`.
    pub fn link_set_txqlen(&self, index: u32, len: u32) -> Result<()> {
        self.set_link(link_message_attr(index, LinkAttribute::TxQueueLen(len)))
            .with_context(|| format!("ip link set {index} txqueuelen {len}"))
    }

    /// `ip link set <index> name <name>`.
    pub fn link_set_name(&self, index: u32, name: &str) -> Result<()> {
        let attr = LinkAttribute::IfName(name.to_string());
        self.set_link(link_message_attr(index, attr))
            .with_context(|| format!("ip link set {index} name {name}"))
    }

    /// `ip link set <index> alias <alias>`.
    pub fn link_set_alias(&self, index: u32, alias: &str) -> Result<()> {
        let attr = LinkAttribute::IfAlias(alias.to_string());
        self.set_link(link_message_attr(index, attr))
            .with_context(|| format!("ip link set {index} alias {alias}"))
    }

    /// `ip link set dev <name> up`, naming the link instead of giving its index.
    pub fn link_set_up_by_name(&self, name: &str) -> Result<()> {
        let mut msg = link_message_named(name);
        msg.header.flags.set(LinkFlags::Up, true);
        msg.header.change_mask |= LinkFlags::Up;
        self.set_link(msg)
            .with_context(|| format!("ip link set dev {name} up"))
    }

    /// `ip link set <index> netns <ns>`.
    pub fn link_set_netns(&self, index: u32, ns: &NetNs) -> Result<()> {
        let attr = LinkAttribute::NetNsFd(ns.as_raw_fd());
        self.set_link(link_message_attr(index, attr))
            .with_context(|| format!("ip link set {index} netns {}", ns.path().display()))
    }

    /// `ip link set <index> master <master>`.
    pub fn link_set_master(&self, index: u32, master: u32) -> Result<()> {
        self.set_link(link_message_attr(index, LinkAttribute::Controller(master)))
            .with_context(|| format!("ip link set {index} master {master}"))
    }

    /// `ip link set <index> nomaster`: IFLA_MASTER 0 releases the link from its controller.
    pub fn link_set_nomaster(&self, index: u32) -> Result<()> {
        self.set_link(link_message_attr(index, LinkAttribute::Controller(0)))
            .with_context(|| format!("ip link set {index} nomaster"))
    }

    /// `ip link add <name> type dummy`; what `ip link show` says of the new link.
    pub fn link_add_dummy(&self, name: &str) -> Result<Link> {
        self.link_add(name, None, vec![LinkInfo::Kind(InfoKind::Dummy)])
    }

    /// `ip link add link <base> name <name> type vlan id <id>`.
    pub fn link_add_vlan(&self, name: &str, base: u32, id: u16) -> Result<Link> {
        self.link_add(
            name,
            Some(base),
            vec![
                LinkInfo::Kind(InfoKind::Vlan),
                LinkInfo::Data(InfoData::Vlan(vec![InfoVlan::Id(id)])),
            ],
        )
    }

    /// `ip link add [link <base>] <name> type <kind> ...`: the one creating request every kind
    /// without a peer shares. The kernel's errno stays in the error (EOPNOTSUPP when the kind's
    /// module is missing, EEXIST for a taken name).
    pub(super) fn link_add(
        &self,
        name: &str,
        base: Option<u32>,
        info: Vec<LinkInfo>,
    ) -> Result<Link> {
        let kind = info
            .iter()
            .find_map(|i| match i {
                LinkInfo::Kind(k) => Some(k.to_string()),
                _ => None,
            })
            .unwrap_or_default();
        let doing = || match base {
            Some(base) => format!("ip link add link {base} name {name} type {kind}"),
            None => format!("ip link add {name} type {kind}"),
        };
        let mut msg = link_message_named(name);
        if let Some(base) = base {
            msg.attributes.push(LinkAttribute::Link(base));
        }
        msg.attributes.push(LinkAttribute::LinkInfo(info));
        self.ack(RouteNetlinkMessage::NewLink(msg), NLM_F_CREATE | NLM_F_EXCL)
            .with_context(doing)?;
        // RTM_NEWLINK does not return the new index (NLM_F_ECHO for it needs Linux 6.3); ask.
        match self.link_show(name)? {
            Some(link) => Ok(link),
            None => Err(Error::system(format!("{}: created link vanished", doing()))),
        }
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

fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}
