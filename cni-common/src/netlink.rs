//! A synchronous facade over rtnetlink: one method per `ip` command, one netlink request each.
//!
//! CNI plugins are one-shot processes, so the plugin code stays synchronous. A [`Netlink`] owns
//! one rtnetlink socket bound to one namespace; every method `block_on`s its request on a
//! process-wide current-thread runtime, which also drives the socket's connection task.

use std::future::Future;
use std::os::fd::AsRawFd;
use std::pin::pin;
use std::sync::OnceLock;

use futures::TryStreamExt;
use ipnetwork::IpNetwork;
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{
    InfoData, InfoVeth, LinkAttribute, LinkFlags, LinkInfo, LinkMessage, State,
};
use rtnetlink::{Handle, LinkUnspec, LinkVeth};
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;

use crate::error::{Context, Error, Result};
use crate::mac::MacAddr;
use crate::netns::NetNs;

/// Longest interface name plus the NUL (IFNAMSIZ).
const IFNAMSIZ: usize = 16;

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

fn runtime() -> Result<&'static Runtime> {
    if let Some(rt) = RUNTIME.get() {
        return Ok(rt);
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .context("starting the netlink runtime")?;
    // Another thread may have won the race; its runtime serves us as well.
    Ok(RUNTIME.get_or_init(|| rt))
}

impl From<rtnetlink::Error> for Error {
    fn from(e: rtnetlink::Error) -> Self {
        match e {
            // The kernel's errno text, e.g. "File exists (os error 17)".
            rtnetlink::Error::NetlinkError(msg) => Error::system(msg.to_string()),
            other => Error::system(other.to_string()),
        }
    }
}

/// The errno of a kernel error reply, 0 for anything else.
fn errno(e: &rtnetlink::Error) -> i32 {
    match e {
        rtnetlink::Error::NetlinkError(msg) => -msg.raw_code(),
        _ => 0,
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
                LinkAttribute::LinkInfo(infos) => {
                    for info in infos {
                        if let LinkInfo::Kind(kind) = info {
                            link.kind = Some(kind.to_string());
                        }
                    }
                }
                _ => {}
            }
        }
        link
    }
}

/// A veth pair to create: `ip link add <name> [mtu M] [address A] type veth peer name <peer_name>
/// [mtu M] [address A] [netns N]`.
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
}

/// A netlink socket bound to one network namespace.
pub struct Netlink {
    handle: Handle,
    connection: JoinHandle<()>,
    rt: &'static Runtime,
}

impl Netlink {
    /// A socket in the calling thread's namespace.
    pub fn current() -> Result<Netlink> {
        let rt = runtime()?;
        // The socket registers with the runtime's reactor, so the runtime must be entered.
        let _guard = rt.enter();
        let (connection, handle, _) =
            rtnetlink::new_connection_with_strict_check().context("opening a netlink socket")?;
        Ok(Netlink {
            handle,
            connection: rt.spawn(connection),
            rt,
        })
    }

    /// A socket in `ns`. A netlink socket stays in the namespace it was created in, so it is
    /// created on a thread inside `ns`; the caller's thread never moves.
    pub fn in_netns(ns: &NetNs) -> Result<Netlink> {
        ns.run(Netlink::current)
            .with_context(|| format!("netlink socket in netns {}", ns.path().display()))
    }

    fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    fn change(&self, msg: LinkMessage) -> std::result::Result<(), rtnetlink::Error> {
        self.block_on(self.handle.link().change(msg).execute())
    }

    /// One RTM_GETLINK (not a dump): the kernel answers with one link or ENODEV.
    fn get_link(&self, req: rtnetlink::LinkGetRequest) -> Result<Option<Link>> {
        let result = self.block_on(async {
            let mut replies = pin!(req.execute());
            replies.try_next().await
        });
        match result {
            Ok(msg) => Ok(msg.map(Link::from_message)),
            Err(e) if errno(&e) == libc::ENODEV => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

// ip link
impl Netlink {
    /// `ip link show <name>`; None when there is no such link.
    pub fn link_show(&self, name: &str) -> Result<Option<Link>> {
        // Such a name cannot exist; the kernel would answer EINVAL rather than ENODEV.
        if name.is_empty() || name.len() >= IFNAMSIZ {
            return Ok(None);
        }
        self.get_link(self.handle.link().get().match_name(name))
            .with_context(|| format!("ip link show {name}"))
    }

    /// `ip link show` by index; None when there is no such link.
    pub fn link_show_index(&self, index: u32) -> Result<Option<Link>> {
        self.get_link(self.handle.link().get().match_index(index))
            .with_context(|| format!("ip link show index {index}"))
    }

    /// `ip link add <name> type veth peer name <peer_name> [netns N]`; returns the index of
    /// `name`. The peer is created directly in its namespace (IFLA_NET_NS_FD inside the peer's
    /// info), so it never appears, or collides, in ours.
    pub fn link_add_veth(&self, veth: &Veth) -> Result<u32> {
        let mut peer = LinkUnspec::new_with_name(veth.peer_name);
        let mut local = LinkVeth::new(veth.name, veth.peer_name);
        if let Some(ns) = veth.peer_netns {
            peer = peer.setns_by_fd(ns.as_raw_fd());
        }
        if let Some(mtu) = veth.mtu {
            peer = peer.mtu(mtu);
            local = local.mtu(mtu);
        }
        if let Some(mac) = veth.peer_mac {
            peer = peer.address(mac.octets().to_vec());
        }
        if let Some(mac) = veth.mac {
            local = local.address(mac.octets().to_vec());
        }
        let msg = local
            .set_info_data(InfoData::Veth(InfoVeth::Peer(peer.build())))
            .build();
        let doing = || {
            format!(
                "ip link add {} type veth peer name {}",
                veth.name, veth.peer_name
            )
        };
        match self.block_on(self.handle.link().add(msg).execute()) {
            Ok(()) => {}
            Err(e) if errno(&e) == libc::EEXIST => {
                return Err(Error::from(e).context(format!(
                    "{}: a link named {} or {} already exists",
                    doing(),
                    veth.name,
                    veth.peer_name
                )));
            }
            Err(e) => return Err(Error::from(e).context(doing())),
        }
        // RTM_NEWLINK does not return the new index; ask for it.
        match self.link_show(veth.name)? {
            Some(link) => Ok(link.index),
            None => Err(Error::system(format!("{}: created link vanished", doing()))),
        }
    }

    /// `ip link set <index> up`.
    pub fn link_set_up(&self, index: u32) -> Result<()> {
        self.change(LinkUnspec::new_with_index(index).up().build())
            .with_context(|| format!("ip link set {index} up"))
    }

    /// `ip link set <index> down`.
    pub fn link_set_down(&self, index: u32) -> Result<()> {
        self.change(LinkUnspec::new_with_index(index).down().build())
            .with_context(|| format!("ip link set {index} down"))
    }

    /// `ip link set <index> mtu <mtu>`.
    pub fn link_set_mtu(&self, index: u32, mtu: u32) -> Result<()> {
        self.change(LinkUnspec::new_with_index(index).mtu(mtu).build())
            .with_context(|| format!("ip link set {index} mtu {mtu}"))
    }

    /// `ip link set <index> address <mac>`.
    pub fn link_set_address(&self, index: u32, mac: &MacAddr) -> Result<()> {
        let msg = LinkUnspec::new_with_index(index)
            .address(mac.octets().to_vec())
            .build();
        self.change(msg)
            .with_context(|| format!("ip link set {index} address {mac}"))
    }

    /// `ip link set <index> promisc on|off`.
    pub fn link_set_promisc(&self, index: u32, on: bool) -> Result<()> {
        self.change(LinkUnspec::new_with_index(index).promiscuous(on).build())
            .with_context(|| format!("ip link set {index} promisc {}", on_off(on)))
    }

    /// `ip link set <index> allmulticast on|off`.
    pub fn link_set_allmulti(&self, index: u32, on: bool) -> Result<()> {
        self.change(LinkUnspec::new_with_index(index).allmulticast(on).build())
            .with_context(|| format!("ip link set {index} allmulticast {}", on_off(on)))
    }

    /// `ip link set <index> txqueuelen <len>`.
    pub fn link_set_txqlen(&self, index: u32, len: u32) -> Result<()> {
        self.change(LinkUnspec::new_with_index(index).txqueuelen(len).build())
            .with_context(|| format!("ip link set {index} txqueuelen {len}"))
    }

    /// `ip link set <index> name <name>`.
    pub fn link_set_name(&self, index: u32, name: &str) -> Result<()> {
        self.change(LinkUnspec::new_with_index(index).name(name).build())
            .with_context(|| format!("ip link set {index} name {name}"))
    }

    /// `ip link set <index> master <master>`.
    pub fn link_set_master(&self, index: u32, master: u32) -> Result<()> {
        self.change(LinkUnspec::new_with_index(index).controller(master).build())
            .with_context(|| format!("ip link set {index} master {master}"))
    }

    /// `ip link set <index> netns <ns>`.
    pub fn link_set_netns(&self, index: u32, ns: &NetNs) -> Result<()> {
        let msg = LinkUnspec::new_with_index(index)
            .setns_by_fd(ns.as_raw_fd())
            .build();
        self.change(msg)
            .with_context(|| format!("ip link set {index} netns {}", ns.path().display()))
    }

    /// `ip link del <index>`; a link that is already gone is not an error (DEL is idempotent).
    pub fn link_del(&self, index: u32) -> Result<()> {
        match self.block_on(self.handle.link().del(index).execute()) {
            Err(e) if errno(&e) != libc::ENODEV => {
                Err(Error::from(e).context(format!("ip link del {index}")))
            }
            _ => Ok(()),
        }
    }

    /// `ip link del <name>` in one request; false when there was no such link.
    pub fn link_del_by_name(&self, name: &str) -> Result<bool> {
        if name.is_empty() || name.len() >= IFNAMSIZ {
            return Ok(false);
        }
        let msg = LinkUnspec::new_with_name(name).build();
        match self.block_on(self.handle.link().del_with_message(msg).execute()) {
            Ok(()) => Ok(true),
            Err(e) if errno(&e) == libc::ENODEV => Ok(false),
            Err(e) => Err(Error::from(e).context(format!("ip link del {name}"))),
        }
    }
}

// ip addr
impl Netlink {
    /// `ip addr show dev <index>`: IPv4 and IPv6 addresses with their prefix length.
    pub fn addr_list(&self, index: u32) -> Result<Vec<IpNetwork>> {
        let mut req = self.handle.address().get().set_link_index_filter(index);
        // With strict checking the kernel filters the dump by index too, instead of sending
        // every address of the namespace.
        req.message_mut().header.index = index;
        let msgs: Vec<AddressMessage> = self
            .block_on(req.execute().try_collect())
            .with_context(|| format!("ip addr show dev {index}"))?;
        let mut addrs = Vec::with_capacity(msgs.len());
        for msg in msgs {
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

    /// `ip addr add <addr> dev <index>`.
    pub fn addr_add(&self, index: u32, addr: IpNetwork) -> Result<()> {
        let req = self.handle.address().add(index, addr.ip(), addr.prefix());
        self.block_on(req.execute())
            .with_context(|| format!("ip addr add {addr} dev {index}"))
    }
}

// `bridge vlan` / `bridge link` helpers belong in their own `impl Netlink` block here.

impl Drop for Netlink {
    fn drop(&mut self) {
        // The connection task owns the socket, and a socket pins its namespace. Cancel the
        // task now rather than whenever the runtime next runs, so the socket closes with us.
        self.connection.abort();
        let _ = self.rt.block_on(&mut self.connection);
    }
}

fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}
