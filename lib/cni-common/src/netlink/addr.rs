//! `ip addr`: listing, adding and deleting a link's addresses.

use ipnetwork::IpNetwork;
use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use super::Netlink;
use crate::error::{Context, Result};

// ip addr
impl Netlink {
    /// `ip addr show dev <index>`: IPv4 and IPv6 addresses with their prefix length.
    pub fn addr_list(&self, index: u32) -> Result<Vec<IpNetwork>> {
        // With strict checking the kernel filters the dump by index, instead of sending every
        // address of the namespace; the family stays unspecified for both IPv4 and IPv6.
        let addrs = self.addr_dump(index, &format!("ip addr show dev {index}"))?;
        // Older kernels ignore the filter.
        Ok(addrs
            .into_iter()
            .filter(|(i, _)| *i == index)
            .map(|(_, a)| a)
            .collect())
    }

    /// `ip addr show`: every address of the namespace in one dump, with its link's index (for
    /// whoever reads a whole node, instead of one dump per link).
    pub fn addr_list_all(&self) -> Result<Vec<(u32, IpNetwork)>> {
        self.addr_dump(0, "ip addr show")
    }

    /// One address dump (of link `index`, 0 for all): (link index, address) pairs.
    fn addr_dump(&self, index: u32, doing: &str) -> Result<Vec<(u32, IpNetwork)>> {
        let mut req = AddressMessage::default();
        req.header.index = index;
        let replies = self
            .dump(RouteNetlinkMessage::GetAddress(req))
            .context(doing)?;
        let mut addrs = Vec::with_capacity(replies.len());
        for reply in replies {
            let RouteNetlinkMessage::NewAddress(msg) = reply else {
                continue;
            };
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
                    .with_context(|| format!("address {ip} from the kernel"))?;
                addrs.push((msg.header.index, net));
            }
        }
        Ok(addrs)
    }

    /// `ip addr del <addr> dev <index>`.
    pub fn addr_del(&self, index: u32, addr: IpNetwork) -> Result<()> {
        let msg = address_message(index, addr);
        self.ack(RouteNetlinkMessage::DelAddress(msg), 0)
            .with_context(|| format!("ip addr del {addr} dev {index}"))
    }

    /// `ip addr add <addr> dev <index>`. IPv4 addresses get the subnet's broadcast address, as
    /// Go's netlink.AddrAdd gives them.
    pub fn addr_add(&self, index: u32, addr: IpNetwork) -> Result<()> {
        let mut msg = address_message(index, addr);
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
        .with_context(|| format!("ip addr add {addr} dev {index}"))
    }
}

/// A message about `addr` on link `index`: family, prefix length and IFA_LOCAL.
fn address_message(index: u32, addr: IpNetwork) -> AddressMessage {
    let mut msg = AddressMessage::default();
    msg.header.index = index;
    msg.header.prefix_len = addr.prefix();
    msg.header.family = match addr {
        IpNetwork::V4(_) => AddressFamily::Inet,
        IpNetwork::V6(_) => AddressFamily::Inet6,
    };
    msg.attributes.push(AddressAttribute::Local(addr.ip()));
    msg
}
