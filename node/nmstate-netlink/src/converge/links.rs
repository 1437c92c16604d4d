//! The phases that make and unmake links and bring them up: creating what is missing (a VLAN's
//! base first), deleting what must be absent, and bringing up what must be up (a base before
//! its VLANs, a controller before its ports).

use cni_common::netlink::Veth;
use nix::libc::EOPNOTSUPP;

use super::order::{base_of, master_of, ordered};
use super::{link, Converge};
use crate::error::Error;
use crate::node::{Kind, NodeState};
use crate::target::LinkTarget;

/// A create request's outcome; None when it was not sent (the failure is recorded).
type Sent = Option<Result<(), cni_common::Error>>;

impl Converge<'_> {
    pub(super) fn create(&mut self, targets: &[LinkTarget]) -> Result<(), Error> {
        // A VLAN's base first: it may be created here too.
        let ordered = ordered(targets, &|t| {
            t.vlan.iter().map(|(b, _)| b.clone()).collect()
        });
        for t in ordered.into_iter().filter(|t| t.exists) {
            match link(self.nl, &t.name) {
                Ok(Some(_)) => continue,
                Ok(None) => {}
                Err(e) => {
                    self.fail(e)?;
                    continue;
                }
            }
            let kind = t.kind.kernel_name().to_string();
            if let Some(result) = self.add_link(t)? {
                self.created(t, &kind, result)?;
            }
        }
        Ok(())
    }

    /// Sends the request that creates `t`, of its kind.
    fn add_link(&mut self, t: &LinkTarget) -> Result<Sent, Error> {
        let nl = self.nl;
        let result = match &t.kind {
            Kind::Bridge => nl.link_add_bridge(&t.name, None, false).map(drop),
            Kind::Dummy => nl.link_add_dummy(&t.name).map(drop),
            Kind::Bond => nl
                .link_add_bond(&t.name, &t.bond.unwrap_or_default())
                .map(drop),
            Kind::Vlan => return self.add_vlan(t),
            Kind::Veth => {
                let Some(peer) = &t.veth_peer else {
                    self.fail(Error::Step(format!(
                        "interface {}: a veth needs its peer's name",
                        t.name
                    )))?;
                    return Ok(None);
                };
                nl.link_add_veth(&Veth {
                    name: &t.name,
                    peer_name: peer,
                    ..Veth::default()
                })
                .map(drop)
            }
            other => {
                self.fail(Error::Step(format!(
                    "interface {}: a {} link cannot be created",
                    t.name,
                    other.kernel_name()
                )))?;
                return Ok(None);
            }
        };
        Ok(Some(result))
    }

    /// A VLAN is created on its base, which must be there by now.
    fn add_vlan(&mut self, t: &LinkTarget) -> Result<Sent, Error> {
        let Some((base, id)) = &t.vlan else {
            self.fail(Error::Step(format!(
                "interface {}: a vlan needs a base and an ID",
                t.name
            )))?;
            return Ok(None);
        };
        let base_link = match link(self.nl, base) {
            Ok(Some(l)) => l,
            Ok(None) => {
                self.fail(Error::Step(format!(
                    "interface {}: base interface {base} does not exist",
                    t.name
                )))?;
                return Ok(None);
            }
            Err(e) => {
                self.fail(e)?;
                return Ok(None);
            }
        };
        Ok(Some(
            self.nl
                .link_add_vlan(&t.name, base_link.index, *id)
                .map(drop),
        ))
    }

    /// Records the outcome of creating `t`, a link of `kind`.
    fn created(
        &mut self,
        t: &LinkTarget,
        kind: &str,
        result: Result<(), cni_common::Error>,
    ) -> Result<(), Error> {
        match result {
            // The kernel lacks the kind (its module is not there): it changed nothing.
            Err(e) if e.errno() == EOPNOTSUPP => {
                self.sent = true;
                self.fail(Error::Step(format!(
                    "interface {}: this kernel cannot create {kind} links (Operation not supported)",
                    t.name
                )))?;
            }
            result => {
                self.wrote(
                    &format!("interface {}", t.name),
                    result,
                    &[],
                    format!("{}: created ({kind})", t.name),
                )?;
            }
        }
        Ok(())
    }

    pub(super) fn delete(&mut self, targets: &[LinkTarget]) -> Result<(), Error> {
        for t in targets.iter().filter(|t| !t.exists) {
            if let Some(l) = self.link(&t.name)? {
                let result = self.nl.link_del(l.index);
                self.wrote(
                    &format!("interface {}", t.name),
                    result,
                    &[],
                    format!("{}: deleted", t.name),
                )?;
            }
        }
        Ok(())
    }

    /// Brings links up: a VLAN's base before the VLAN, a controller before its ports, so that
    /// a link comes up onto something that works.
    pub(super) fn raise(
        &mut self,
        targets: &[LinkTarget],
        downed: &[String],
        node: &NodeState,
    ) -> Result<(), Error> {
        let ordered = ordered(targets, &|t| {
            base_of(t, node)
                .into_iter()
                .chain(master_of(t, node))
                .collect()
        });
        for t in ordered.into_iter().filter(|t| t.exists) {
            let was_downed = downed.contains(&t.name);
            if t.up == Some(true) || (was_downed && t.up.is_none()) {
                let Some(cur) = self.link(&t.name)? else {
                    continue;
                };
                if !cur.up {
                    let result = self.nl.link_set_up(cur.index);
                    self.wrote(
                        &format!("interface {}", t.name),
                        result,
                        &[],
                        format!("{}: up", t.name),
                    )?;
                }
            }
        }
        Ok(())
    }
}
