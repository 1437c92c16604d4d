//! The addresses phase: each link's managed families get exactly the wanted addresses. A family
//! the target leaves out is not touched, nor are the kernel's IPv6 link-local addresses where
//! the target keeps them.

use ipnetwork::IpNetwork;
use nix::libc::{EADDRNOTAVAIL, EEXIST};

use super::Converge;
use crate::error::Error;
use crate::node::NodeState;
use crate::target::{is_link_local, LinkTarget};

impl Converge<'_> {
    pub(super) fn addresses(
        &mut self,
        targets: &[LinkTarget],
        node: &NodeState,
    ) -> Result<(), Error> {
        for t in targets.iter().filter(|t| t.exists) {
            let Some(cur) = node.links.get(&t.name) else {
                continue;
            };
            let nl = self.nl;
            let what = format!("interface {}", t.name);
            let mut want: Vec<IpNetwork> = Vec::new();
            let managed = |a: &IpNetwork| match a {
                IpNetwork::V4(_) => t.ipv4.is_some(),
                IpNetwork::V6(_) => t.ipv6.is_some() && !(t.keep_link_local && is_link_local(a)),
            };
            want.extend(t.ipv4.iter().flatten());
            want.extend(
                t.ipv6
                    .iter()
                    .flatten()
                    .filter(|a| !(t.keep_link_local && is_link_local(a))),
            );
            for a in cur
                .addresses
                .iter()
                .filter(|a| managed(a) && !want.contains(a))
            {
                // EADDRNOTAVAIL: gone with another address (an IPv4 secondary) or with the
                // link going down.
                self.wrote(
                    &what,
                    nl.addr_del(cur.index, *a),
                    &[EADDRNOTAVAIL],
                    format!("{}: address {a} removed", t.name),
                )?;
            }
            for a in want.iter().filter(|a| !cur.addresses.contains(a)) {
                // EEXIST: the kernel made it meanwhile (an IPv6 link-local address on link up).
                self.wrote(
                    &what,
                    nl.addr_add(cur.index, *a),
                    &[EEXIST],
                    format!("{}: address {a} added", t.name),
                )?;
            }
        }
        Ok(())
    }
}
