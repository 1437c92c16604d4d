//! The macvtap plugin: gives a pod (a KubeVirt VM's virt-launcher, typically) a macvtap
//! interface named CNI_IFNAME, either the one macvtap-cni's device plugin created for it
//! (`deviceID`) or one it creates itself on a parent link (`master`), and hands /dev/tapN to
//! the VM's user. IPAM is optional.

pub mod config;
pub mod macvtap;
pub mod tap;

use cni_common::mac::MacAddr;
use cni_common::netlink::{Link, Netlink};
use cni_common::netns::NetNs;
use cni_common::result::{CniResult, Interface, IpConfig};
use cni_common::skel::{Plugin, Request};
use cni_common::version::ResultFormat;
use cni_common::{ipam, Code, Context, Error, Result, Rollback, Teardown};

use crate::config::{MacvtapConf, Settings, Source};
use crate::macvtap::{device_link_names, is_macvtap, temp_name, Claim, Namespaces};

pub const ABOUT: &str = concat!(
    "macvtap CNI plugin ",
    env!("CARGO_PKG_VERSION"),
    " (CNI spec 0.1.0 to 1.1.0): moves the device plugin's macvtap (deviceID) into the pod, or \
     creates one on master; chowns /dev/tapN"
);

pub struct Macvtap;

impl Plugin for Macvtap {
    type Config = MacvtapConf;

    fn add(&self, req: &Request<MacvtapConf>) -> Result<CniResult> {
        let settings = Settings::resolve(req)?;
        let source = settings.source()?;
        if req.version.result_format() == ResultFormat::Legacy && req.conf.ipam_type().is_none() {
            // Refused before anything changes: the result could not be printed afterwards.
            return Err(Error::incompatible_version(format!(
                "a {} result must carry an IP address and this config has no ipam: use \
                 cniVersion 0.3.0 or later",
                req.version.as_str()
            )));
        }
        let ifname = req.cmd.ifname.as_str();
        let ctr_ns = req.open_netns()?;
        let host_ns = NetNs::current()?;
        let host = Netlink::current()?;
        let ctr = Netlink::in_netns(&ctr_ns)?;
        if let Some(existing) = ctr.link_show(ifname)? {
            return Err(Error::system(format!(
                "interface {ifname} already exists in the container namespace (a {} link)",
                kind(&existing)
            )));
        }
        let ns = Namespaces {
            host: &host,
            host_ns: &host_ns,
            ctr: &ctr,
            ctr_ns: &ctr_ns,
        };

        // Each step below records its undo; a failure (an early return) undoes them all, newest
        // first: the IPAM lease, a hand-made /dev node, the macvtap itself.
        let mut rollback = Rollback::new();
        let mac = settings.mac.as_ref();
        let claim = match source {
            Source::Device(id) => Claim::take_device(ns, id, settings.mtu, mac, &mut rollback)?,
            Source::Master { master, mode } => {
                let name = temp_name(&req.cmd.container_id, ifname);
                Claim::create(ns, master, mode, &name, settings.mtu, mac, &mut rollback)?
            }
        };
        let index = claim.index();
        if settings.promisc {
            ctr.link_set_promisc(index, true)
                .with_context(|| format!("setting {} promiscuous", claim.name()))?;
        }
        // Before the rename: the name the macvtap has now is unique on the node, which is how
        // its character device is told apart from other namespaces'.
        let node = tap::ensure_node(
            claim.name(),
            index,
            settings.owner,
            settings.group,
            &mut rollback,
        )?;
        ctr.link_set_name(index, ifname)
            .with_context(|| format!("renaming {} to {ifname}", claim.name()))?;
        ctr.link_set_up(index)
            .with_context(|| format!("setting {ifname} up"))?;

        let mut result = CniResult {
            interfaces: vec![Interface {
                name: ifname.to_string(),
                sandbox: req.cmd.netns.clone(),
                ..Interface::default()
            }],
            ..CniResult::default()
        };
        match req.conf.ipam_type() {
            None => {} // opening it failed: teardown has the error
            Some(ipam_type) => {
                let ipam_result = ipam::exec_add(ipam_type, req, &mut rollback)?;
                result.ips = ipam_result
                    .ips
                    .into_iter()
                    .map(|ip| IpConfig {
                        interface: Some(0),
                        ..ip
                    })
                    .collect();
                result.routes = ipam_result.routes;
                result.dns = ipam_result.dns;
                ipam::configure_iface(&ctr, index, 0, &result)
                    .with_context(|| format!("configuring {ifname} with the IPAM result"))?;
            }
        }
        // The config's DNS wins over IPAM's, as in the reference plugins.
        if let Some(dns) = req.conf.dns.as_ref().filter(|d| !d.is_empty()) {
            result.dns = dns.clone();
        }
        let link = ctr.link_show_index(index)?.ok_or_else(|| {
            Error::system(format!("{ifname} vanished from the container namespace"))
        })?;
        if let Some(iface) = result.interfaces.first_mut() {
            iface.mac = link.mac.map(|m| m.to_string()).unwrap_or_default();
            iface.mtu = Some(link.mtu);
        }
        if node.made_by_hand() {
            tracing::warn!(
                "devtmpfs made no {} for {ifname} (the name was taken when it \
                 registered); made it by hand",
                node.path().display()
            );
        }

        rollback.commit();
        Ok(result)
    }

    /// Releases the address, then deletes the macvtap (which takes its /dev/tapN with it) and
    /// whatever a crashed ADD of this attachment left. Nothing gone is an error: not the
    /// namespace, not the interface.
    fn del(&self, req: &Request<MacvtapConf>) -> Result<()> {
        let mut teardown = Teardown::new();
        // IPAM first, while the interface still exists (the dhcp plugin releases through it).
        if let Some(ipam_type) = req.conf.ipam_type() {
            teardown.step(ipam::exec_del(ipam_type, req));
        }
        let own = &req.conf.plugin;
        let ifname = req.cmd.ifname.as_str();
        let temp = temp_name(&req.cmd.container_id, ifname);
        match teardown.step(req.open_netns_if_exists()) {
            // The macvtap died with its namespace: a node made for it by hand is left over.
            Some(None) => {
                teardown.step(tap::remove_stale_nodes());
            }
            Some(Some(ctr_ns)) => {
                if let Some(ctr) = teardown.step(Netlink::in_netns(&ctr_ns)) {
                    let device_id = req
                        .conf
                        .runtime_config
                        .device_id
                        .as_deref()
                        .or(own.device_id.lenient().map(String::as_str));
                    // The names it has before the rename, should a crashed ADD have stopped there.
                    let mut names = vec![ifname.to_string(), temp.clone()];
                    names.extend(device_id.map(device_link_names).unwrap_or_default());
                    for name in &names {
                        teardown.step(delete_macvtap(&ctr, name));
                    }
                }
            }
            None => {} // opening it failed: teardown has the error
        }
        if own.master.lenient().is_some() {
            // A crashed ADD may have stopped before moving it out of the host namespace.
            teardown.step(Netlink::current().and_then(|nl| delete_macvtap(&nl, &temp)));
        }
        teardown.finish()
    }

    fn check(&self, req: &Request<MacvtapConf>) -> Result<()> {
        let prev = req.require_prev_result()?;
        let settings = Settings::resolve(req)?;
        let source = settings.source()?;
        let ifname = req.cmd.ifname.as_str();
        let ctr_ns = req.open_netns()?;
        let ctr = Netlink::in_netns(&ctr_ns)?;
        let link = ctr.link_show(ifname)?.ok_or_else(|| {
            mismatch(format!(
                "interface {ifname} does not exist in the container namespace"
            ))
        })?;
        if !is_macvtap(&link) {
            return Err(mismatch(format!(
                "{ifname} is a {} link, not a macvtap",
                kind(&link)
            )));
        }
        let pos = prev
            .interfaces
            .iter()
            .position(|i| i.name == ifname && (i.sandbox.is_empty() || i.sandbox == req.cmd.netns))
            .ok_or_else(|| {
                mismatch(format!(
                    "prevResult lists no interface {ifname} in {}",
                    req.cmd.netns
                ))
            })?;
        let listed = &prev.interfaces[pos];
        if !listed.mac.is_empty() {
            let mac = MacAddr::parse(&listed.mac).context("prevResult")?;
            check_mac(&link, mac, "prevResult lists")?;
        }
        if let Some(mtu) = listed.mtu {
            check_mtu(&link, mtu, "prevResult lists")?;
        }
        if let Some(mac) = settings.mac {
            check_mac(&link, mac, "configured")?;
        }
        if let Some(mtu) = settings.mtu {
            check_mtu(&link, mtu, "configured")?;
        }
        // Only what this plugin sets: promiscMode false means "leave it", not "must be off".
        if settings.promisc && !link.promisc {
            return Err(mismatch(format!("{ifname} is not promiscuous")));
        }
        if let Source::Master { master, mode } = source {
            let parent = Netlink::current()?.link_show(master)?.ok_or_else(|| {
                mismatch(format!(
                    "master {master} does not exist in the host network namespace"
                ))
            })?;
            if link.link != Some(parent.index) {
                return Err(mismatch(format!("{ifname} is not a macvtap on {master}")));
            }
            let actual = ctr.macvtap_mode(link.index)?;
            if actual != Some(mode) {
                return Err(mismatch(format!(
                    "{ifname} is in mode {}, configured {mode}",
                    actual.unwrap_or("none")
                )));
            }
        }
        tap::check_node(ifname, link.index, settings.owner, settings.group).context("CHECK")?;
        if let Some(ipam_type) = req.conf.ipam_type() {
            ipam::exec_check(ipam_type, req)?;
            ipam::check_iface(&ctr, link.index, pos, prev).context("CHECK")?;
        }
        Ok(())
    }

    /// Not ready when the configured master is missing (ADD would fail), or when IPAM is not.
    fn status(&self, req: &Request<MacvtapConf>) -> Result<()> {
        let settings = Settings::resolve(req)?;
        if let Some(Source::Master { master, .. }) = &settings.source {
            if Netlink::current()?.link_show(master)?.is_none() {
                return Err(Error::new(
                    Code::NotAvailable,
                    format!("master {master} does not exist in the host network namespace"),
                ));
            }
        }
        match req.conf.ipam_type() {
            Some(ipam_type) => ipam::exec_status(ipam_type, req),
            None => Ok(()),
        }
    }

    /// Macvtaps die with their namespace, but a /dev/tapN made by hand outlives its device, and
    /// IPAM may hold leases for attachments the runtime no longer has.
    fn gc(&self, req: &Request<MacvtapConf>) -> Result<()> {
        let mut teardown = Teardown::new();
        teardown.step(tap::remove_stale_nodes());
        if let Some(ipam_type) = req.conf.ipam_type() {
            teardown.step(ipam::exec_gc(ipam_type, req));
        }
        teardown.finish()
    }
}

/// `ip link del <name>` for a macvtap, and its /dev node if that outlives it. Links of other
/// kinds are not ours and stay.
fn delete_macvtap(nl: &Netlink, name: &str) -> Result<()> {
    let Some(link) = nl.link_show(name)? else {
        return Ok(());
    };
    if !is_macvtap(&link) {
        tracing::warn!(
            "leaving {name} alone: it is a {} link, not a macvtap",
            kind(&link)
        );
        return Ok(());
    }
    let node = tap::node_of(&link.name, link.index);
    nl.link_del(link.index)?;
    match node {
        Some(node) => node.remove_if_left_over(),
        None => Ok(()),
    }
}

fn kind(link: &Link) -> &str {
    link.kind.as_deref().unwrap_or("kind-less")
}

fn check_mac(link: &Link, want: MacAddr, source: &str) -> Result<()> {
    if link.mac == Some(want) {
        return Ok(());
    }
    Err(mismatch(format!(
        "{} has mac {}, {source} {want}",
        link.name,
        link.mac.map(|m| m.to_string()).unwrap_or_default()
    )))
}

fn check_mtu(link: &Link, want: u32, source: &str) -> Result<()> {
    if link.mtu == want {
        return Ok(());
    }
    Err(mismatch(format!(
        "{} has mtu {}, {source} {want}",
        link.name, link.mtu
    )))
}

fn mismatch(msg: String) -> Error {
    Error::system(format!("CHECK: {msg}"))
}
