//! The expressions nft compiles its match syntax into, so that rules made here are the very
//! rules `nft add rule` makes from the same text (and `nft list` prints them back as that text).

use std::net::IpAddr;

use crate::expr::{CmpOp, Expr, MetaKey, PayloadBase, REG_1, REG_VERDICT};

/// Which address of an IP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Addr {
    Source,
    Destination,
}

/// `meta nfproto ipv4|ipv6`: in an inet table, nft puts this before every `ip`/`ip6` match.
pub fn nfproto(ipv4: bool) -> Vec<Expr> {
    let proto: u8 = if ipv4 { 2 } else { 10 };
    vec![
        Expr::Meta {
            key: MetaKey::Nfproto,
            dreg: REG_1,
        },
        Expr::Cmp {
            op: CmpOp::Eq,
            sreg: REG_1,
            data: vec![proto],
        },
    ]
}

/// `iifname vmap @<map>`
pub fn iifname_vmap(map: &str) -> Vec<Expr> {
    vec![
        Expr::Meta {
            key: MetaKey::Iifname,
            dreg: REG_1,
        },
        vmap(map),
    ]
}

/// `ether saddr <mac>`
pub fn ether_saddr(mac: [u8; 6]) -> Vec<Expr> {
    vec![
        Expr::Payload {
            base: PayloadBase::LinkLayer,
            offset: 6,
            len: 6,
            dreg: REG_1,
        },
        Expr::Cmp {
            op: CmpOp::Eq,
            sreg: REG_1,
            data: mac.to_vec(),
        },
    ]
}

fn addr_offset(ipv4: bool, which: Addr) -> u32 {
    match (ipv4, which) {
        (true, Addr::Source) => 12,
        (true, Addr::Destination) => 16,
        (false, Addr::Source) => 8,
        (false, Addr::Destination) => 24,
    }
}

fn octets(ip: IpAddr) -> Vec<u8> {
    match ip {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

/// `ip|ip6 saddr|daddr <addr>/<prefix>` (`!=` with `CmpOp::Neq`). As nft does, a prefix on a
/// byte boundary loads only the bytes it covers; any other prefix loads the whole address and
/// masks it.
pub fn ip_addr(which: Addr, addr: IpAddr, prefix: u8, op: CmpOp) -> Vec<Expr> {
    let full = octets(addr);
    let bits = full.len() * 8;
    let prefix = usize::from(prefix).min(bits);
    let offset = addr_offset(addr.is_ipv4(), which);
    let load = |len: usize| Expr::Payload {
        base: PayloadBase::Network,
        offset,
        len: len as u32,
        dreg: REG_1,
    };
    let mask: Vec<u8> = (0..full.len())
        .map(|i| {
            let covered = prefix.saturating_sub(i * 8).min(8);
            (0xff_u16 << (8 - covered)) as u8
        })
        .collect();
    let net: Vec<u8> = full.iter().zip(&mask).map(|(a, m)| a & m).collect();
    let cmp = |data: Vec<u8>| Expr::Cmp {
        op,
        sreg: REG_1,
        data,
    };
    if prefix == bits {
        vec![load(full.len()), cmp(net)]
    } else if prefix > 0 && prefix % 8 == 0 {
        let len = prefix / 8;
        vec![load(len), cmp(net[..len].to_vec())]
    } else {
        vec![
            load(full.len()),
            Expr::Bitwise {
                sreg: REG_1,
                dreg: REG_1,
                xor: vec![0; full.len()],
                mask,
            },
            cmp(net),
        ]
    }
}

/// `ip|ip6 saddr|daddr vmap @<map>`, the map keyed by addresses of that family.
pub fn ip_addr_vmap(which: Addr, ipv4: bool, map: &str) -> Vec<Expr> {
    vec![
        Expr::Payload {
            base: PayloadBase::Network,
            offset: addr_offset(ipv4, which),
            len: if ipv4 { 4 } else { 16 },
            dreg: REG_1,
        },
        vmap(map),
    ]
}

/// `vmap @<map>` on what the previous expression loaded.
pub fn vmap(map: &str) -> Expr {
    Expr::Lookup {
        set: map.to_string(),
        sreg: REG_1,
        dreg: Some(REG_VERDICT),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(offset: u32, len: u32) -> Expr {
        Expr::Payload {
            base: PayloadBase::Network,
            offset,
            len,
            dreg: REG_1,
        }
    }

    fn cmp(op: CmpOp, data: &[u8]) -> Expr {
        Expr::Cmp {
            op,
            sreg: REG_1,
            data: data.to_vec(),
        }
    }

    // The expected expressions are what `nft --debug=netlink` prints for the same matches.

    #[test]
    fn a_byte_aligned_prefix_loads_only_its_bytes() {
        let e = ip_addr(
            Addr::Destination,
            "10.1.0.0".parse().expect("ip"),
            24,
            CmpOp::Neq,
        );
        assert_eq!(e, vec![payload(16, 3), cmp(CmpOp::Neq, &[10, 1, 0])]);
    }

    #[test]
    fn another_prefix_is_masked() {
        let e = ip_addr(
            Addr::Destination,
            "224.0.0.0".parse().expect("ip"),
            4,
            CmpOp::Eq,
        );
        assert_eq!(
            e,
            vec![
                payload(16, 4),
                Expr::Bitwise {
                    sreg: REG_1,
                    dreg: REG_1,
                    mask: vec![0xf0, 0, 0, 0],
                    xor: vec![0; 4],
                },
                cmp(CmpOp::Eq, &[224, 0, 0, 0]),
            ]
        );
    }

    #[test]
    fn a_whole_address_is_compared_without_a_mask() {
        let e = ip_addr(Addr::Source, "fd00::2".parse().expect("ip"), 128, CmpOp::Eq);
        let mut addr = [0u8; 16];
        addr[0] = 0xfd;
        addr[15] = 2;
        assert_eq!(e, vec![payload(8, 16), cmp(CmpOp::Eq, &addr)]);
    }

    #[test]
    fn the_host_bits_of_a_network_are_cleared() {
        let e = ip_addr(
            Addr::Destination,
            "10.1.7.9".parse().expect("ip"),
            20,
            CmpOp::Neq,
        );
        assert_eq!(e.last(), Some(&cmp(CmpOp::Neq, &[10, 1, 0, 0])));
    }
}
