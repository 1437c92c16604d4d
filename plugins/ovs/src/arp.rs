//! Gratuitous ARP from the container interface once its IPv4 addresses are in place, as ovs-cni
//! sends: neighbours that cached another MAC for a reused address (a pod replaced by one with a
//! different MAC) learn the new one at once instead of after their cache times out.
//!
//! The kernel's `arp_notify` only announces addresses present when the link comes up, and
//! IPAM configuration adds them after that, so the announcement is sent here: one ARP request
//! for the address itself, broadcast on a packet socket opened in the container's namespace.

use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use cni_common::mac::MacAddr;
use cni_common::{Error, Result};

const ETH_P_ARP: u16 = 0x0806;
const ETH_P_IP: u16 = 0x0800;
const ARPHRD_ETHER: u16 = 1;
const ARPOP_REQUEST: u16 = 1;
const BROADCAST: [u8; 6] = [0xff; 6];

/// An AF_PACKET socket that only sends (protocol 0: the kernel queues nothing on it). A packet
/// socket stays in the namespace it was created in, like a netlink socket.
pub struct PacketSocket {
    fd: OwnedFd,
}

impl PacketSocket {
    /// Opens the socket in the calling thread's namespace.
    pub fn open() -> Result<PacketSocket> {
        // SAFETY: socket(2) with constant arguments; the result is checked before use.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(Error::system(format!(
                "opening a packet socket for gratuitous ARP: {}",
                std::io::Error::last_os_error()
            )));
        }
        // SAFETY: fd is a freshly opened descriptor that nothing else owns.
        Ok(PacketSocket {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Broadcasts "who has `ip`? tell `ip`" from `mac` on link `ifindex`.
    pub fn send_gratuitous_arp(&self, ifindex: u32, mac: MacAddr, ip: Ipv4Addr) -> Result<()> {
        let frame = gratuitous_arp(mac, ip);
        // SAFETY: sockaddr_ll is plain data; every field the kernel reads is set below.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = ETH_P_ARP.to_be();
        addr.sll_ifindex = i32::try_from(ifindex)
            .map_err(|_| Error::system(format!("link index {ifindex} out of range")))?;
        addr.sll_halen = 6;
        addr.sll_addr[..6].copy_from_slice(&BROADCAST);
        // SAFETY: the buffer and the address are valid for the lengths passed.
        let sent = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                frame.as_ptr().cast(),
                frame.len(),
                0,
                std::ptr::addr_of!(addr).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if sent < 0 {
            return Err(Error::system(format!(
                "sending gratuitous ARP for {ip}: {}",
                std::io::Error::last_os_error()
            )));
        }
        Ok(())
    }
}

/// The 28-byte ARP payload (the kernel adds the Ethernet header): sender and target protocol
/// address are both `ip`, the target hardware address is zero, as Linux's own announcements are.
fn gratuitous_arp(mac: MacAddr, ip: Ipv4Addr) -> [u8; 28] {
    let mut p = [0u8; 28];
    p[0..2].copy_from_slice(&ARPHRD_ETHER.to_be_bytes());
    p[2..4].copy_from_slice(&ETH_P_IP.to_be_bytes());
    p[4] = 6;
    p[5] = 4;
    p[6..8].copy_from_slice(&ARPOP_REQUEST.to_be_bytes());
    p[8..14].copy_from_slice(&mac.octets());
    p[14..18].copy_from_slice(&ip.octets());
    p[24..28].copy_from_slice(&ip.octets());
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn announcement_names_the_address_as_sender_and_target() {
        let mac = MacAddr([0x0a, 0x58, 10, 1, 2, 3]);
        let p = gratuitous_arp(mac, Ipv4Addr::new(10, 1, 2, 3));
        assert_eq!(&p[..8], &[0, 1, 8, 0, 6, 4, 0, 1]);
        assert_eq!(&p[8..14], &mac.octets());
        assert_eq!(&p[14..18], &[10, 1, 2, 3]);
        assert_eq!(&p[18..24], &[0; 6]);
        assert_eq!(&p[24..28], &[10, 1, 2, 3]);
    }
}
