//! The results rule ("truthful result"): what an ADD result lists must exist in the namespaces,
//! and what DEL must leave behind (no interface, no host-local reservation).

use crate::host_local::reservations;
use crate::sandbox::Sandbox;
use crate::suite::Suite;
use crate::validate::summary::summarize;
use crate::validate::versions::{family, Family};
use serde_json::Value;

impl Suite {
    /// After DEL, CNI_IFNAME is gone from the container. Not asked of a chained plugin: the
    /// suite made that interface, not the plugin.
    pub(super) fn iface_gone(&self, sb: &Sandbox) -> Result<(), String> {
        if self.opts.chained {
            return Ok(());
        }
        match sb.ctr.link(&self.opts.ifname)? {
            Some(_) => Err(format!(
                "{} still exists in the container netns after DEL",
                self.opts.ifname
            )),
            None => Ok(()),
        }
    }

    /// host-local holds no address for the container any more.
    pub(super) fn reservation_gone(&self, sb: &Sandbox) -> Result<(), String> {
        let left = reservations(&sb.ipam_dir(), &sb.cid);
        if left.is_empty() {
            Ok(())
        } else {
            let names: Vec<String> = left
                .iter()
                .filter_map(|p| p.file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .collect();
            Err(format!(
                "host-local still holds {names:?} for the container"
            ))
        }
    }

    /// Compare a result with what really exists in the namespaces.
    pub(super) fn verify_live(
        &self,
        sb: &Sandbox,
        version: &str,
        result: &Value,
    ) -> Result<(), String> {
        let s = summarize(result);
        let ifname = self.opts.ifname.as_str();
        let ctr_links = sb.ctr.links()?;
        let host_links = sb.host.links()?;
        let Some(live) = ctr_links.iter().find(|l| l.name == ifname) else {
            return Err(format!(
                "{ifname} does not exist in the container netns after ADD"
            ));
        };
        let mut problems = Vec::new();
        if family(version) == Some(Family::V02) {
            for ip in &s.ips {
                if !live.addrs.contains(&ip.address) {
                    problems.push(format!(
                        "address {} of the result is not assigned to {ifname}",
                        ip.text
                    ));
                }
            }
        } else {
            if !s
                .interfaces
                .iter()
                .any(|i| i.name == ifname && i.sandbox.as_deref() == Some(sb.ctr_path.as_str()))
            {
                problems.push(format!(
                    "result lists no interface {ifname} with sandbox {}",
                    sb.ctr_path
                ));
            }
            for iface in &s.interfaces {
                let (links, place) = match iface.sandbox.as_deref() {
                    None => (&host_links, "host netns"),
                    Some(p) if p == sb.ctr_path => (&ctr_links, "container netns"),
                    Some(p) => {
                        problems.push(format!(
                            "interface {} has sandbox {p}, which is not CNI_NETNS",
                            iface.name
                        ));
                        continue;
                    }
                };
                match links.iter().find(|l| l.name == iface.name) {
                    None => problems.push(format!(
                        "interface {} of the result does not exist in the {place}",
                        iface.name
                    )),
                    Some(l) => {
                        if let Some(mac) = &iface.mac {
                            if !mac.eq_ignore_ascii_case(&l.mac) {
                                problems.push(format!(
                                    "interface {} reports mac {mac}, its live mac is {}",
                                    iface.name, l.mac
                                ));
                            }
                        }
                    }
                }
            }
            for ip in &s.ips {
                let Some(iface) = ip.interface.and_then(|i| s.interfaces.get(i)) else {
                    continue;
                };
                if iface.sandbox.as_deref() != Some(sb.ctr_path.as_str()) {
                    continue;
                }
                if let Some(l) = ctr_links.iter().find(|l| l.name == iface.name) {
                    if !l.addrs.contains(&ip.address) {
                        problems.push(format!(
                            "address {} of the result is not assigned to {}",
                            ip.text, iface.name
                        ));
                    }
                }
            }
        }
        if !s.routes.is_empty() {
            let live_routes = sb.ctr.routes()?;
            for (text, dst, gw) in &s.routes {
                let found = live_routes
                    .iter()
                    .any(|r| r.dst == *dst && (gw.is_none() || r.gw == *gw));
                if !found {
                    let via = gw.map(|g| format!(" via {g}")).unwrap_or_default();
                    problems.push(format!(
                        "route {text}{via} of the result is not in the container's routing tables"
                    ));
                }
            }
        }
        if self.host_local() && !s.ips.is_empty() && self.reservation_count(sb) == 0 {
            problems.push("host-local recorded no reservation in the suite's dataDir".into());
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }
}
