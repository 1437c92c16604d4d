//! `ip link add ... type macvtap`: macvtap links on a parent, and their mode.
//!
//! Modes are the words `ip` takes (`bridge`, `vepa`, `private`, `passthru`); `source` is left
//! out because it needs a list of allowed senders.

use netlink_packet_core::{NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::link::{
    InfoData, InfoKind, InfoMacVtap, LinkAttribute, LinkInfo, MacVtapMode,
};
use netlink_packet_route::RouteNetlinkMessage;

use super::link::{link_message, link_message_named};
use super::Netlink;
use crate::error::{Context, Error, Result};
use crate::mac::MacAddr;

/// The modes [`Netlink::link_add_macvtap`] accepts.
const MODES: [(&str, MacVtapMode); 4] = [
    ("bridge", MacVtapMode::Bridge),
    ("vepa", MacVtapMode::Vepa),
    ("private", MacVtapMode::Private),
    ("passthru", MacVtapMode::Passthrough),
];

fn parse_mode(mode: &str) -> Result<MacVtapMode> {
    MODES
        .iter()
        .find(|(name, _)| *name == mode)
        .map(|(_, m)| *m)
        .ok_or_else(|| {
            Error::invalid_config(format!(
                "unknown macvtap mode {mode:?} (bridge, vepa, private or passthru)"
            ))
        })
}

/// The word `ip -d link show` prints for a mode.
fn mode_name(mode: MacVtapMode) -> &'static str {
    match mode {
        MacVtapMode::Source => "source",
        other => MODES
            .iter()
            .find(|(_, m)| *m == other)
            .map_or("unknown", |(name, _)| *name),
    }
}

impl Netlink {
    /// `ip link add <name> link <parent> [mtu M] [address A] type macvtap mode <mode>`; returns
    /// the new link's index. The kernel refuses an MTU above the parent's.
    pub fn link_add_macvtap(
        &self,
        name: &str,
        parent: u32,
        mode: &str,
        mtu: Option<u32>,
        mac: Option<&MacAddr>,
    ) -> Result<u32> {
        let doing = || {
            let mtu = mtu.map(|m| format!(" mtu {m}")).unwrap_or_default();
            let mac = mac.map(|m| format!(" address {m}")).unwrap_or_default();
            format!("ip link add {name} link {parent}{mtu}{mac} type macvtap mode {mode}")
        };
        let kernel_mode = parse_mode(mode).with_context(doing)?;
        let mut msg = link_message_named(name);
        msg.attributes.push(LinkAttribute::Link(parent));
        if let Some(mtu) = mtu {
            msg.attributes.push(LinkAttribute::Mtu(mtu));
        }
        if let Some(mac) = mac {
            msg.attributes
                .push(LinkAttribute::Address(mac.octets().to_vec()));
        }
        msg.attributes.push(LinkAttribute::LinkInfo(vec![
            LinkInfo::Kind(InfoKind::MacVtap),
            LinkInfo::Data(InfoData::MacVtap(vec![InfoMacVtap::Mode(kernel_mode)])),
        ]));
        match self.ack(RouteNetlinkMessage::NewLink(msg), NLM_F_CREATE | NLM_F_EXCL) {
            Ok(()) => {}
            Err(e) if e.errno() == libc::EEXIST => {
                return Err(Error::wrap(
                    format!("{}: a link named {name} already exists", doing()),
                    e,
                ));
            }
            Err(e) => return Err(Error::wrap(doing(), e)),
        }
        // RTM_NEWLINK does not return the new index (NLM_F_ECHO for it needs Linux 6.3); ask.
        match self.link_show(name)? {
            Some(link) => Ok(link.index),
            None => Err(Error::system(format!("{}: created link vanished", doing()))),
        }
    }

    /// The mode `ip -d link show <index>` prints for a macvtap; None when there is no such link
    /// or it is not a macvtap.
    pub fn macvtap_mode(&self, index: u32) -> Result<Option<&'static str>> {
        let replies =
            match self.request(RouteNetlinkMessage::GetLink(link_message(index)), NLM_F_ACK) {
                Ok(replies) => replies,
                Err(e) if e.errno() == libc::ENODEV => return Ok(None),
                Err(e) => return Err(Error::wrap(format!("ip -d link show {index}"), e)),
            };
        let infos = replies
            .into_iter()
            .filter_map(|reply| match reply {
                RouteNetlinkMessage::NewLink(msg) => Some(msg.attributes),
                _ => None,
            })
            .flatten()
            .filter_map(|attr| match attr {
                LinkAttribute::LinkInfo(infos) => Some(infos),
                _ => None,
            })
            .flatten();
        let mut is_macvtap = false;
        let mut mode = None;
        for info in infos {
            match info {
                LinkInfo::Kind(InfoKind::MacVtap) => is_macvtap = true,
                LinkInfo::Data(InfoData::MacVtap(data)) => {
                    mode = data.into_iter().find_map(|d| match d {
                        InfoMacVtap::Mode(m) => Some(mode_name(m)),
                        _ => None,
                    });
                }
                _ => {}
            }
        }
        // The kernel always reports the mode of a macvtap; bridge is its default.
        Ok(is_macvtap.then(|| mode.unwrap_or("bridge")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_name_round_trips() {
        for (name, _) in MODES {
            let mode = parse_mode(name).expect("known mode");
            assert_eq!(mode_name(mode), name);
        }
    }

    #[test]
    fn source_and_unknown_modes_are_invalid_config() {
        for bad in ["source", "Bridge", "", "bridge "] {
            let e = parse_mode(bad).expect_err(bad);
            assert_eq!(e.code(), crate::Code::InvalidConfig, "{bad}");
        }
    }

    #[test]
    fn kernel_modes_without_a_creatable_name_still_print() {
        assert_eq!(mode_name(MacVtapMode::Source), "source");
        assert_eq!(mode_name(MacVtapMode::Other(99)), "unknown");
    }
}
