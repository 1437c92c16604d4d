//! The bridge plugin: attaches a container to a Linux bridge on the node through a veth pair,
//! with VLAN filtering (access, trunk, native VLAN), optional IPAM with the bridge as gateway,
//! masquerade and a MAC spoof check. Config-compatible with the reference bridge plugin (v1.9).

pub mod bridge;
pub mod config;
pub mod gateway;
pub mod ipmasq;
pub mod nft;
pub mod reference;
pub mod spoofchk;
pub mod tool;
pub mod veth;
pub mod vlan;

use std::collections::HashSet;
use std::time::Duration;

use cni_common::ipam::{self, check_iface, configure_iface};
use cni_common::mac::MacAddr;
use cni_common::naming::{network_hash, AttachmentKey};
use cni_common::netlink::{BridgePort, Link, Netlink};
use cni_common::netns::NetNs;
use cni_common::result::{CniResult, Interface};
use cni_common::skel::{Plugin, Request};
use cni_common::sysctl::sysctl_write_if_present;
use cni_common::version::{ResultFormat, SpecVersion};
use cni_common::{Code, Context, Error, Result, Rollback, Teardown};
use ipnetwork::IpNetwork;

use crate::bridge::{ensure_bridge, unenforced_vlans_warning};
use crate::config::{BridgeConf, Settings};
use crate::gateway::{assign_gateways, enable_ip_forward, ensure_addr, ensure_vlan_interface};
use crate::ipmasq::{ipmasq_setup, ipmasq_teardown, ReferenceNames};
use crate::spoofchk::{spoofchk_check, spoofchk_setup, spoofchk_teardown};
use crate::veth::{add_port_veth, alias_key};
use crate::vlan::{port_vlans, set_port_vlans};

pub const ABOUT: &str = concat!(
    "bridge CNI plugin ",
    env!("CARGO_PKG_VERSION"),
    " (CNI spec 0.1.0 to 1.1.0): Linux bridge with VLAN filtering, IPAM, gateway, ipMasq, macspoofchk"
);

/// Position of the container's interface in the result: after the bridge and the host veth.
const CONTAINER_IFACE: usize = 2;

/// How long the host end may take to come up after the pair is created, in growing steps:
/// the kernel reports the carrier from a work queue, so it is rarely there at once.
const PORT_UP_WAIT: &[u64] = &[0, 1, 2, 5, 10, 20, 50, 100, 250, 500, 1000, 1000];

pub struct Bridge;

impl Plugin for Bridge {
    type Config = BridgeConf;

    fn add(&self, req: &Request<BridgeConf>) -> Result<CniResult> {
        let s = Settings::resolve(req)?;
        refuse_what_cannot_succeed(req)?;
        let ns = req.open_netns()?;
        let nl = Netlink::current()?;
        let key = attachment_key(req);
        let mut rollback = Rollback::new();
        let result = add_attachment(req, &s, &ns, &nl, &key, &mut rollback)?;
        rollback.commit();
        Ok(result)
    }

    fn del(&self, req: &Request<BridgeConf>) -> Result<()> {
        let s = Settings::resolve(req)?;
        let nl = Netlink::current()?;
        let key = attachment_key(req);
        let (container_id, ifname) = (req.cmd.container_id.as_str(), req.cmd.ifname.as_str());
        // Every step runs even when an earlier one fails: a failed IPAM DEL must not leave the
        // spoof-check and masquerade rules behind.
        let mut teardown = Teardown::new();
        // The host end is named after the attachment; deleting it takes the container end
        // with it, without entering the container's namespace.
        let host_veth = key.host_veth_name();
        // Our spoof check goes first: the kernel's cleanup of that transaction then overlaps the
        // port's deletion instead of holding up the exit.
        if s.spoofchk {
            teardown.step(spoofchk_teardown(&key, &host_veth));
        }
        let mut ours = false;
        if let Some(Some(link)) = teardown.step(nl.link_show(&host_veth)) {
            if alias_key(&link) == Some(key) {
                ours = true;
                teardown.step(nl.link_del(link.index));
            }
        }
        // An attachment made by another implementation (the reference plugin names its host
        // end at random): delete the container end, which takes the host end with it.
        if !ours {
            if let Some(Some(ns)) = teardown.step(req.open_netns_if_exists()) {
                teardown.step(ns.run(|| Netlink::current()?.link_del_by_name(ifname).map(drop)));
            }
        }
        if let Some(ipam_type) = req.conf.ipam_type() {
            teardown.step(ipam::exec_del(ipam_type, req));
        }
        // What the reference plugin made exists only for an attachment that is not ours, which
        // is also the case to assume when the namespace (and our veth with it) is gone.
        if s.spoofchk && !ours {
            teardown.step(reference::spoofchk_teardown(container_id, ifname));
        }
        if s.ip_masq && req.conf.ipam_type().is_some() {
            teardown.step(ipmasq_teardown(&key, &reference_names(req)));
            if !ours {
                teardown.step(reference::ipmasq_nft_teardown(
                    &req.conf.name,
                    ifname,
                    container_id,
                ));
            }
        }
        teardown.finish()
    }

    fn check(&self, req: &Request<BridgeConf>) -> Result<()> {
        let s = Settings::resolve(req)?;
        let prev = req.require_prev_result()?;
        // An L2 attachment has no IPAM to ask (the reference fails here).
        if let Some(ipam_type) = req.conf.ipam_type() {
            ipam::exec_check(ipam_type, req)?;
        }
        let nl = Netlink::current()?;
        let key = attachment_key(req);
        check_attachment(req, &s, prev, &nl, &key)
    }

    fn status(&self, req: &Request<BridgeConf>) -> Result<()> {
        Settings::resolve(req)?;
        match req.conf.ipam_type() {
            Some(ipam_type) => ipam::exec_status(ipam_type, req),
            None => Ok(()),
        }
    }

    fn gc(&self, req: &Request<BridgeConf>) -> Result<()> {
        let s = Settings::resolve(req)?;
        // GC lists host-local's leases itself: a refused dataDir refuses the whole GC.
        ipam::check_node_policy(req)?;
        let network = network_hash(&req.conf.name);
        let valid: HashSet<u64> = req
            .conf
            .gc_valid_attachments()
            .iter()
            .map(|a| AttachmentKey::new(&req.conf.name, &a.container_id, &a.ifname).attachment)
            .collect();
        let keep = |k: &AttachmentKey| k.network != network || valid.contains(&k.attachment);
        let nl = Netlink::current()?;
        // One attachment that cannot be collected must not keep the others.
        let mut teardown = Teardown::new();
        if let Some(Some(bridge)) = teardown.step(nl.link_show(&s.bridge)) {
            for port in teardown
                .step(nl.link_list_ports(bridge.index))
                .unwrap_or_default()
            {
                if alias_key(&port).is_some_and(|k| !keep(&k))
                    && teardown.step(nl.link_del(port.index)).is_some()
                {
                    cni_common::log::collected(format_args!("port {}", port.name));
                }
            }
        }
        for (what, table) in [
            ("spoof check", &spoofchk::TABLE),
            ("masquerade", &ipmasq::TABLE),
        ] {
            for key in teardown.step(table.remove_unless(keep)).unwrap_or_default() {
                cni_common::log::collected(format_args!("{what} of attachment {key}"));
            }
        }
        // What the reference plugin left of attachments that are gone.
        let attachments: Vec<(String, String)> = req
            .conf
            .gc_valid_attachments()
            .iter()
            .map(|a| (a.container_id.clone(), a.ifname.clone()))
            .collect();
        let containers: HashSet<&str> = attachments.iter().map(|(c, _)| c.as_str()).collect();
        teardown.step(reference::spoofchk_gc(&nl));
        teardown.step(reference::ipmasq_iptables_gc(&req.conf.name, &containers));
        teardown.step(reference::ipmasq_nft_gc(&req.conf.name, &attachments));
        if let Some(ipam_type) = req.conf.ipam_type() {
            teardown.step(ipam::exec_gc(ipam_type, req));
        }
        teardown.finish()
    }
}

/// What would fail only after the node has changed, refused before anything changes.
fn refuse_what_cannot_succeed(req: &Request<BridgeConf>) -> Result<()> {
    match req.conf.ipam_type() {
        // Results before 0.3.0 are an IPv4 and an IPv6 address: an L2 attachment has none to
        // print ("cniVersion" "" or missing reads as 0.1.0).
        None if req.version.result_format() == ResultFormat::Legacy => {
            let read_as = if req.version == SpecVersion::V0_1_0 {
                " (what a config without cniVersion, or with \"\", is read as)"
            } else {
                ""
            };
            Err(Error::incompatible_version(format!(
                "a result in cniVersion {}{read_as} is made of IP addresses, and an attachment \
                 without IPAM has none: use cniVersion 0.3.0 or later",
                req.version.as_str()
            )))
        }
        None => Ok(()),
        Some(ipam_type) => ipam::find_in_path(ipam_type, &req.cmd.path).map(drop),
    }
}

fn reference_names<C>(req: &Request<C>) -> ReferenceNames<'_> {
    ReferenceNames {
        network: &req.conf.name,
        container_id: &req.cmd.container_id,
    }
}

fn attachment_key<C>(req: &Request<C>) -> AttachmentKey {
    AttachmentKey::new(&req.conf.name, &req.cmd.container_id, &req.cmd.ifname)
}

/// Each change to the node records its undo in `rollback`, for the caller to commit.
fn add_attachment<'a>(
    req: &'a Request<BridgeConf>,
    s: &Settings,
    ns: &NetNs,
    nl: &'a Netlink,
    key: &'a AttachmentKey,
    rollback: &mut Rollback<'a>,
) -> Result<CniResult> {
    let ifname = req.cmd.ifname.as_str();
    let bridge::Bridge {
        link: bridge,
        vlans_enforced,
    } = ensure_bridge(nl, s)?;
    let mac = match s.mac {
        Some(mac) => mac,
        None => MacAddr::random_local()?,
    };
    let label = format!("{}/{}/{}", req.conf.name, req.cmd.container_id, ifname);
    // The check goes in before the port exists (its name follows from the attachment): the
    // kernel finishes the transaction's cleanup while the port is made, so the nf_tables
    // connection's release at exit need not wait for it.
    if s.spoofchk {
        let host_veth = key.host_veth_name();
        spoofchk_setup(key, &host_veth, &mac, &label)?;
        rollback.push("the MAC spoof check", move || {
            spoofchk_teardown(key, &host_veth)
        });
    }
    let host = add_port_veth(nl, ns, ifname, key, bridge.index, s, mac)?;
    let port = host.index;
    rollback.push(format!("the port {}", host.name), move || nl.link_del(port));
    set_port_vlans(nl, host.index, &bridge, s)?;
    if !vlans_enforced {
        tracing::warn!("{}", unenforced_vlans_warning(&bridge.name, &host.name, s));
    }
    nl.bridge_link_set(
        host.index,
        &BridgePort {
            hairpin: s.hairpin.then_some(true),
            isolated: s.port_isolation.then_some(true),
        },
    )?;
    // The bridge's MAC may have changed with its first port: read it again for the result and
    // before a gateway address pins it.
    let bridge = nl.link_show_index(bridge.index)?.unwrap_or(bridge);

    let mut result = CniResult::default();
    let mut extra_interfaces = Vec::new();
    let mut gateways = Vec::new();
    let with_ipam = req.conf.ipam_type().is_some();
    if let Some(ipam_type) = req.conf.ipam_type() {
        let ipam_result = ipam::exec_add(ipam_type, req, rollback)?;
        if ipam_result.ips.is_empty() {
            return Err(Error::new(
                Code::Ipam,
                "the IPAM plugin returned no IP addresses",
            ));
        }
        result.ips = ipam_result.ips;
        result.routes = ipam_result.routes;
        result.dns = ipam_result.dns;
        for ip in &mut result.ips {
            ip.interface = Some(CONTAINER_IFACE as i64);
        }
        if s.is_gateway {
            gateways = assign_gateways(&mut result, s.is_default_gateway);
        }
    }
    // One trip into the pod's namespace: its end's sysctls (before any address), up, and the
    // IPAM addresses and routes. The host end comes up after it, so the bridge enables the port
    // once (each enable walks every port of the bridge).
    if !s.disable_container_interface {
        let (enable_dad, configured) = (s.enable_dad, &result);
        ns.run(|| {
            let cnl = Netlink::current()?;
            if !with_ipam {
                return cnl.link_set_up_by_name(ifname);
            }
            container_sysctls(ifname, enable_dad)?;
            let link = cnl
                .link_show(ifname)?
                .ok_or_else(|| Error::system(format!("{ifname} vanished from the container")))?;
            configure_iface(&cnl, link.index, CONTAINER_IFACE, configured)
        })?;
    }
    nl.link_set_up(host.index)?;
    if with_ipam {
        if s.is_gateway {
            let holder = match s.vlan {
                Some(vid) => {
                    let vlan_iface =
                        ensure_vlan_interface(nl, &bridge, vid, s, host.index, rollback)?;
                    extra_interfaces.push(interface(&vlan_iface));
                    vlan_iface
                }
                None => bridge.clone(),
            };
            for gw in &gateways {
                ensure_addr(nl, &holder, *gw, s.force_address)?;
            }
            enable_ip_forward(&gateways)?;
        }
        if s.ip_masq {
            let addrs: Vec<IpNetwork> = result.ips.iter().map(|ip| ip.address).collect();
            rollback.push("the masquerade rules", move || {
                ipmasq_teardown(key, &reference_names(req))
            });
            ipmasq_setup(key, &addrs, &label, &reference_names(req))?;
        }
    }
    if let Some(dns) = req.conf.dns.as_ref().filter(|d| !d.is_empty()) {
        result.dns = dns.clone();
    }
    if !s.disable_container_interface {
        wait_port_up(nl, &host)?;
    }
    let mut interfaces = vec![
        interface(&bridge),
        interface(&host),
        Interface {
            name: ifname.to_string(),
            mac: mac.to_string(),
            mtu: s.mtu,
            sandbox: req.cmd.netns.clone(),
            ..Interface::default()
        },
    ];
    interfaces.extend(extra_interfaces);
    result.interfaces = interfaces;
    // Printing the result is the last step that can fail: it must not fail after this call has
    // returned and nothing can be rolled back any more.
    result.to_value(req.version)?;
    Ok(result)
}

fn interface(link: &Link) -> Interface {
    Interface {
        name: link.name.clone(),
        mac: link.mac.map(|m| m.to_string()).unwrap_or_default(),
        ..Interface::default()
    }
}

/// The container end's IPv6 DAD and ARP behaviour, set before its addresses. Keys that do not
/// exist (IPv6 disabled, a kernel without enhanced DAD) are skipped, as in the reference plugin;
/// a key that exists and refuses the value fails the ADD.
fn container_sysctls(ifname: &str, enable_dad: bool) -> Result<()> {
    if enable_dad {
        sysctl_write_if_present(&format!("net/ipv6/conf/{ifname}/enhanced_dad"), "1")?;
        sysctl_write_if_present(&format!("net/ipv6/conf/{ifname}/accept_dad"), "1")?;
    } else {
        sysctl_write_if_present(&format!("net/ipv6/conf/{ifname}/accept_dad"), "0")?;
    }
    sysctl_write_if_present(&format!("net/ipv4/conf/{ifname}/arp_notify"), "1").map(drop)
}

/// Waits for the host end to be operationally up, which the bridge needs to forward.
fn wait_port_up(nl: &Netlink, host: &Link) -> Result<()> {
    for ms in PORT_UP_WAIT {
        std::thread::sleep(Duration::from_millis(*ms));
        match nl.link_show_index(host.index)? {
            Some(link) if link.oper_up => return Ok(()),
            Some(_) => {}
            None => {
                return Err(Error::system(format!("bridge port {} vanished", host.name)));
            }
        }
    }
    Err(Error::system(format!(
        "bridge port {} in error state: it did not come up",
        host.name
    )))
}

fn check_attachment(
    req: &Request<BridgeConf>,
    s: &Settings,
    prev: &CniResult,
    nl: &Netlink,
    key: &AttachmentKey,
) -> Result<()> {
    let ifname = req.cmd.ifname.as_str();
    let bridge = nl
        .link_show(&s.bridge)?
        .ok_or_else(|| Error::system(format!("bridge {} does not exist", s.bridge)))?;
    if bridge.kind.as_deref() != Some("bridge") {
        return Err(Error::system(format!("{} is not a bridge", s.bridge)));
    }
    if s.promisc && !bridge.promisc {
        return Err(Error::system(format!(
            "bridge {} is not promiscuous",
            s.bridge
        )));
    }
    let pos = prev
        .interfaces
        .iter()
        .position(|i| i.name == ifname && !i.sandbox.is_empty());
    let expected_mac = pos
        .and_then(|p| prev.interfaces.get(p))
        .and_then(|i| MacAddr::parse(&i.mac).ok());
    let ns = req.open_netns()?;
    let container = ns.run(|| {
        let cnl = Netlink::current()?;
        let link = cnl
            .link_show(ifname)?
            .ok_or_else(|| Error::system(format!("{ifname} does not exist in the container")))?;
        if let Some(pos) = pos {
            check_iface(&cnl, link.index, pos, prev)
                .with_context(|| format!("{ifname} in the container"))?;
        }
        Ok(link)
    })?;
    if container.kind.as_deref() != Some("veth") {
        return Err(Error::system(format!(
            "{ifname} in the container is not a veth"
        )));
    }
    if let Some(mac) = expected_mac {
        if container.mac != Some(mac) {
            return Err(Error::system(format!(
                "{ifname} has MAC {}, the result says {mac}",
                container.mac.map_or("none".into(), |m| m.to_string())
            )));
        }
    }
    if let Some(mtu) = s.mtu {
        if container.mtu != mtu {
            return Err(Error::system(format!(
                "{ifname} has MTU {}, not {mtu}",
                container.mtu
            )));
        }
    }
    let host = container
        .link
        .and_then(|peer| nl.link_show_index(peer).transpose())
        .transpose()?
        .ok_or_else(|| Error::system(format!("the host end of {ifname} does not exist")))?;
    if host.master != Some(bridge.index) {
        return Err(Error::system(format!(
            "the host end {} of {ifname} is not a port of {}",
            host.name, s.bridge
        )));
    }
    if s.wants_vlans() {
        // The reference plugin before 1.3 keeps the default VLAN on the ports it makes (it has no
        // preserveDefaultVlan), and our host ends carry our alias.
        let keeps_default = s.preserve_default_vlan || alias_key(&host) != Some(*key);
        check_port_vlans(nl, &host, &bridge, s, keeps_default)?;
    }
    if s.spoofchk {
        let mac = container
            .mac
            .ok_or_else(|| Error::system(format!("{ifname} has no MAC")))?;
        // Ours, or the reference plugin's for an attachment it made.
        spoofchk_check(key, &host.name, &mac).or_else(|e| {
            reference::spoofchk_check(&req.cmd.container_id, ifname, &host.name, &mac)
                .map_err(|_| e)
        })?;
    }
    Ok(())
}

/// The port carries exactly the configured VLANs, plus the bridge's default one when
/// `keeps_default`.
fn check_port_vlans(
    nl: &Netlink,
    host: &Link,
    bridge: &Link,
    s: &Settings,
    keeps_default: bool,
) -> Result<()> {
    let mut want = port_vlans(s);
    let mut have = nl.bridge_vlan_show(host.index)?;
    if keeps_default {
        let default = bridge.vlan_default_pvid.unwrap_or(1);
        have.retain(|v| v.vid != default || want.iter().any(|w| w.vid == default));
    }
    want.sort_unstable();
    if have != want {
        return Err(Error::system(format!(
            "port {} has VLANs {}, the config asks for {}",
            host.name,
            ipam::list_or_none(&have),
            ipam::list_or_none(&want)
        )));
    }
    Ok(())
}
