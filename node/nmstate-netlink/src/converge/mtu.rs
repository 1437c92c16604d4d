//! The MTU phase: a lowering pass upper links first, then a raising pass lower links first.

use super::order::{lower_links, ordered};
use super::Converge;
use crate::error::Error;
use crate::node::NodeState;
use crate::target::LinkTarget;

impl Converge<'_> {
    /// Sets the MTUs: lowered on upper links (VLANs, controllers) before the links they sit on,
    /// raised on the lower links first, so that an upper link never needs more than its lower
    /// link has.
    pub(super) fn mtu(&mut self, targets: &[LinkTarget], node: &NodeState) -> Result<(), Error> {
        let lower_first = ordered(targets, &|t| lower_links(t, targets, node));
        for raising in [false, true] {
            let pass: Vec<&LinkTarget> = if raising {
                lower_first.clone()
            } else {
                lower_first.iter().rev().copied().collect()
            };
            for t in pass.into_iter().filter(|t| t.exists) {
                let Some(want) = t.mtu else { continue };
                // Read now: lowering a base may have lowered the VLANs on it already.
                let Some(cur) = self.link(&t.name)? else {
                    continue;
                };
                if (raising && want > cur.mtu) || (!raising && want < cur.mtu) {
                    let result = self.nl.link_set_mtu(cur.index, want);
                    self.wrote(
                        &format!("interface {}", t.name),
                        result,
                        &[],
                        format!("{}: mtu {} -> {want}", t.name, cur.mtu),
                    )?;
                }
            }
        }
        Ok(())
    }
}
