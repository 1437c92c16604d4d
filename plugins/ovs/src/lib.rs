//! The ovs plugin: a veth from the container to an Open vSwitch bridge, configured through OVSDB
//! directly, taking ovs-cni's configs.
//!
//! ADD creates the veth (container end directly in the container's namespace), then one OVSDB
//! transaction adds the Port and Interface to the bridge, tagged with the attachment in
//! `external_ids`. DEL and GC find ports by those tags, never by a file; a failed ADD undoes the
//! port, the veth and the IPAM lease. The tags and ovs-cni's cache file are also what ovs-cni
//! needs to delete the attachment, so a node can switch between the two plugins either way.

pub mod arp;
pub mod attachment;
pub mod cache;
pub mod config;
pub mod veth;
pub mod vlan;
pub mod vsctl;

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::time::Duration;

use cni_common::ipam;
use cni_common::netlink::{Link, Netlink};
use cni_common::result::{CniResult, Interface};
use cni_common::skel::{Plugin, Request};
use cni_common::version::ResultFormat;
use cni_common::{Code, Context, Error, Result, Rollback, Teardown};
use ovsdb::{Client, Endpoint};

use crate::arp::PacketSocket;
use crate::attachment::{attachment_id, Attachment};
use crate::cache::CachedNetConf;
use crate::config::{OvsConf, Settings};
use crate::veth::VethSpec;
use crate::vsctl::{NewPort, PortView};

pub const ABOUT: &str = concat!(
    "ovs CNI plugin ",
    env!("CARGO_PKG_VERSION"),
    " (CNI spec 0.1.0 to 1.1.0): attaches a veth to an Open vSwitch bridge through OVSDB; \
     takes ovs-cni configs"
);

/// Bound on connecting to OVSDB and on each request; the link-state wait adds its own time.
const OVSDB_TIMEOUT: Duration = Duration::from_secs(5);

/// Connects to OVSDB; see [`vsctl::cni_error`] for what its errors become.
fn connect(endpoint: &Endpoint) -> Result<Client> {
    Client::connect(endpoint, OVSDB_TIMEOUT).map_err(vsctl::cni_error)
}

/// Where the container interface is in our result's `interfaces` (the host veth is 0).
const CONTAINER_IFACE: usize = 1;

pub struct Ovs;

impl Plugin for Ovs {
    type Config = OvsConf;

    fn add(&self, req: &Request<OvsConf>) -> Result<CniResult> {
        let conf = config::load(&req.conf)?;
        let s = Settings::resolve(&conf, req)?;
        let ipam_type = req.conf.ipam_type();
        if ipam_type.is_none() && req.version.result_format() == ResultFormat::Legacy {
            return Err(Error::incompatible_version(format!(
                "cniVersion {} results cannot describe an interface without IP addresses: \
                 use 0.3.0 or later, or configure ipam",
                req.version
            )));
        }
        // Before anything is created: with OVSDB down, ADD fails at once and leaves nothing.
        let mut ovs = connect(&s.endpoint)?;
        let ns = req.open_netns()?;
        let att = Attachment::of(req);
        let host_nl = Netlink::current()?;
        // Each step below records its undo; a failure (an early return) undoes them all.
        let mut rollback = Rollback::new();
        // What ovs-cni's DEL needs, written first as ovs-cni does; removed again on failure.
        let cached = cache::write(
            &cache::key(&req.cmd.container_id, &req.cmd.ifname),
            &CachedNetConf::new(&req.conf, &conf, &s.bridge),
        )?;
        rollback.push("ovs-cni's cache file", move || cache::remove_file(&cached));
        // One trip into the namespace for both sockets; they stay bound to it.
        let (ctr_nl, packets) = ns.run(|| {
            let nl = Netlink::current()?;
            let packets = match ipam_type {
                Some(_) => Some(PacketSocket::open()?),
                None => None,
            };
            Ok((nl, packets))
        })?;

        // IPAM first, so an address-derived MAC can be set when the veth is created.
        let mut result = match ipam_type {
            Some(t) => ipam::exec_add(t, req, &mut rollback)?,
            None => CniResult::default(),
        };
        // As ovs-cni: from the first address, whatever its family.
        let first_ip = result.ips.first().map(|ip| ip.address.ip());
        let mac = s.mac.or(first_ip.map(config::mac_from_ip));
        let host_link = veth::create(
            &host_nl,
            &ns,
            &VethSpec {
                host_name: &att.host_veth,
                container_name: &req.cmd.ifname,
                mtu: s.mtu,
                container_mac: mac,
            },
        )?;
        let (host_index, nl) = (host_link.index, &host_nl);
        rollback.push(format!("the veth {}", host_link.name), move || {
            nl.link_del(host_index)
        });
        let ctr_link = ctr_nl.link_show(&req.cmd.ifname)?.ok_or_else(|| {
            Error::system(format!(
                "{} vanished from the container right after it was created",
                req.cmd.ifname
            ))
        })?;
        let external_ids = att.external_ids(req);
        let port = vsctl::add_port(
            &mut ovs,
            &NewPort {
                bridge: &s.bridge,
                name: &att.host_veth,
                vlan: &s.vlan,
                external_ids: &external_ids,
                interface_type: s.interface_type.as_deref(),
                iface_id: s.ovn_port.as_deref(),
                ofport_request: s.ofport_request,
            },
        )?;
        let endpoint = &s.endpoint;
        rollback.push(format!("the port {}", att.host_veth), move || {
            // The ADD's own connection is still in use: the undo opens another.
            let mut ovs = connect(endpoint)?;
            vsctl::del_ports(&mut ovs, &[&port])
        });

        {
            ctr_nl.link_set_up(ctr_link.index)?;
            if ipam_type.is_some() {
                // As ovs-cni: addresses go on once OVS forwards for the port, so the first
                // packets (DAD, the announcement below) are not lost.
                vsctl::wait_until_link_up(&mut ovs, &att.host_veth, s.link_wait)?;
                for ip in &mut result.ips {
                    ip.interface = Some(CONTAINER_IFACE as i64);
                }
                ipam::configure_iface(&ctr_nl, ctr_link.index, CONTAINER_IFACE, &result)?;
                if let (Some(packets), Some(mac)) = (&packets, ctr_link.mac) {
                    for ip in &result.ips {
                        if let IpAddr::V4(v4) = ip.address.ip() {
                            // An optimisation for neighbours' caches: not worth failing ADD.
                            if let Err(e) = packets.send_gratuitous_arp(ctr_link.index, mac, v4) {
                                tracing::info!("gratuitous ARP not sent: {e}");
                            }
                        }
                    }
                }
            }
            result.interfaces = vec![
                result_interface(&host_link, ""),
                result_interface(&ctr_link, &req.cmd.netns),
            ];
            if let Some(dns) = req.conf.dns.as_ref().filter(|d| !d.is_empty()) {
                result.dns = dns.clone();
            }
            // Fail here, while everything can still be undone, if the result cannot be printed.
            result.to_value(req.version)?;
        }
        rollback.commit();
        Ok(result)
    }

    /// Releases the address, removes the port found by its tags (this plugin's, or the one
    /// ovs-cni made for the interface) and the host veth (which takes the container end with
    /// it), then ovs-cni's cache file. Without a netns, also the ports of the bridge whose
    /// device is gone, as ovs-cni does. Succeeds when any of them is already gone, the netns
    /// included; fails (code 11) only when OVSDB cannot be reached, after the rest is done.
    fn del(&self, req: &Request<OvsConf>) -> Result<()> {
        req.conf.plugin.check_node_policy()?;
        let conf = config::load(&req.conf).unwrap_or_else(|e| {
            tracing::warn!("{e}; using the network config alone");
            req.conf.plugin.clone()
        });
        let att = Attachment::of(req);
        let mut teardown = Teardown::new();
        // IPAM first, as ovs-cni does.
        if let Some(t) = req.conf.ipam_type() {
            teardown.step(ipam::exec_del(t, req));
        }
        let mut veths = BTreeSet::from([att.host_veth.clone()]);
        let nl = Netlink::current()?;
        match conf.endpoint() {
            // ADD cannot have reached OVSDB with this config: there is nothing there to remove.
            Err(e) => tracing::info!("{e}: nothing of this attachment can be in OVSDB"),
            Ok(endpoint) => match remove_ports(&endpoint, &att, req) {
                Ok(names) => veths.extend(names),
                Err(e) => teardown.extend([e]),
            },
        }
        if req.cmd.netns.is_empty() {
            // Nothing names ovs-cni's port then; it is among those whose device is gone.
            if let (Ok(endpoint), Some(bridge)) = (conf.endpoint(), conf_bridge(&conf, req)) {
                teardown.step(remove_dead_ports(&endpoint, &bridge, &nl));
            }
        }
        for name in &veths {
            teardown.step(del_host_veth(&nl, name));
        }
        // Last, and only once the rest is done: should the node go back to ovs-cni before a
        // retry, ovs-cni's DEL still finds it.
        if teardown.is_clean() {
            teardown.step(cache::remove(&cache::key(
                &req.cmd.container_id,
                &req.cmd.ifname,
            )));
        }
        teardown.finish()
    }

    fn check(&self, req: &Request<OvsConf>) -> Result<()> {
        let prev = req.require_prev_result()?;
        let conf = config::load(&req.conf)?;
        let s = Settings::resolve(&conf, req)?;
        let att = Attachment::of(req);
        if let Some(t) = req.conf.ipam_type() {
            ipam::exec_check(t, req)?;
        }
        let mut ovs = connect(&s.endpoint)?;
        let view = vsctl::show_port(
            &mut ovs,
            &att.id,
            &req.cmd.netns,
            &req.cmd.ifname,
            &s.bridge,
        )?;
        let host_veth = check_port(&s, &att, &view)?;

        let host_nl = Netlink::current()?;
        let host = host_nl
            .link_show(&host_veth)?
            .ok_or_else(|| mismatch(format!("host veth {host_veth} does not exist")))?;
        expect_veth(&host)?;
        let ns = req.open_netns()?;
        let ctr_nl = Netlink::in_netns(&ns)?;
        let ifname = &req.cmd.ifname;
        let ctr = ctr_nl.link_show(ifname)?.ok_or_else(|| {
            mismatch(format!(
                "{ifname} does not exist in the container namespace"
            ))
        })?;
        expect_veth(&ctr)?;
        if ctr.link != Some(host.index) {
            return Err(mismatch(format!(
                "{ifname} is not the peer of host veth {host_veth}"
            )));
        }
        let pos = prev
            .interfaces
            .iter()
            .position(|i| i.name == *ifname && !i.sandbox.is_empty())
            .ok_or_else(|| mismatch(format!("prevResult does not list {ifname}")))?;
        let listed = &prev.interfaces[pos].mac;
        if !listed.is_empty() {
            let listed = cni_common::mac::MacAddr::parse(listed)?;
            if ctr.mac != Some(listed) {
                return Err(mismatch(format!(
                    "{ifname} has mac {}, prevResult lists {listed}",
                    show_mac(&ctr)
                )));
            }
        }
        if let Some(mac) = s.mac.filter(|m| ctr.mac != Some(*m)) {
            return Err(mismatch(format!(
                "{ifname} has mac {}, configured {mac}",
                show_mac(&ctr)
            )));
        }
        if let Some(mtu) = s.mtu {
            for link in [&host, &ctr] {
                if link.mtu != mtu {
                    return Err(mismatch(format!(
                        "{} has mtu {}, configured {mtu}",
                        link.name, link.mtu
                    )));
                }
            }
        }
        // Every failure of it is a host one (100), as a mismatch is.
        ipam::check_iface(&ctr_nl, ctr.index, pos, prev).context("CHECK")
    }

    /// Ready when OVSDB answers and the configured bridge exists; then asks IPAM.
    fn status(&self, req: &Request<OvsConf>) -> Result<()> {
        let conf = config::load(&req.conf)?;
        let endpoint = conf.endpoint()?;
        // Whatever kept OVSDB from answering, STATUS says the spec's "cannot serve ADD" (50).
        let unavailable = |e: Error| Error::new(Code::NotAvailable, e.msg());
        let mut ovs = connect(&endpoint).map_err(unavailable)?;
        if let Some(bridge) = conf.bridge.as_deref().filter(|b| !b.is_empty()) {
            if !vsctl::br_exists(&mut ovs, bridge).map_err(unavailable)? {
                return Err(Error::new(
                    Code::NotAvailable,
                    format!("bridge {bridge:?} does not exist in OVSDB at {endpoint}"),
                ));
            }
        }
        if let Some(t) = req.conf.ipam_type() {
            ipam::exec_status(t, req)?;
        }
        Ok(())
    }

    /// Removes this network's ports (and their host veths) whose attachment the runtime no
    /// longer has, e.g. left by an ADD that was killed or a DEL that never came; the ports
    /// ovs-cni made on the bridge whose device is gone; ovs-cni's cache files of this network's
    /// attachments the runtime no longer has. Then forwards GC to IPAM.
    fn gc(&self, req: &Request<OvsConf>) -> Result<()> {
        let conf = config::load(&req.conf)?;
        let endpoint = conf.endpoint()?;
        let mut teardown = Teardown::new();
        teardown.step(remove_stale_ports(&endpoint, req));
        if let Some(bridge) = conf_bridge(&conf, req) {
            let removed =
                Netlink::current().and_then(|nl| remove_dead_ports(&endpoint, &bridge, &nl));
            teardown.step(removed);
        }
        let keep: Vec<String> = req
            .conf
            .gc_valid_attachments()
            .iter()
            .map(|a| cache::key(&a.container_id, &a.ifname))
            .collect();
        for file in teardown
            .step(cache::remove_stale(&req.conf.name, &keep))
            .unwrap_or_default()
        {
            cni_common::log::collected(format_args!("ovs-cni cache file {file}"));
        }
        if let Some(t) = req.conf.ipam_type() {
            teardown.step(ipam::exec_gc(t, req));
        }
        teardown.finish()
    }
}

/// Removes the attachment's ports from OVSDB; returns their names (their host veths).
fn remove_ports(
    endpoint: &Endpoint,
    att: &Attachment,
    req: &Request<OvsConf>,
) -> Result<Vec<String>> {
    let mut ovs = connect(endpoint)?;
    let ports = vsctl::find_ports(&mut ovs, &att.id, &req.cmd.netns, &req.cmd.ifname)?;
    let uuids: Vec<&str> = ports.iter().map(|p| p.uuid.as_str()).collect();
    vsctl::del_ports(&mut ovs, &uuids)?;
    Ok(ports.into_iter().map(|p| p.name).collect())
}

fn remove_stale_ports(endpoint: &Endpoint, req: &Request<OvsConf>) -> Result<()> {
    let valid: BTreeSet<String> = req
        .conf
        .gc_valid_attachments()
        .iter()
        .map(|a| attachment_id(&a.container_id, &a.ifname))
        .collect();
    let mut ovs = connect(endpoint)?;
    let stale: Vec<vsctl::PortRow> = vsctl::list_ports(&mut ovs, &req.conf.name)?
        .into_iter()
        .filter(|p| p.attachment().is_none_or(|a| !valid.contains(a)))
        .collect();
    let uuids: Vec<&str> = stale.iter().map(|p| p.uuid.as_str()).collect();
    vsctl::del_ports(&mut ovs, &uuids)?;
    for port in &stale {
        cni_common::log::collected(format_args!("OVS port {}", port.name));
    }
    let nl = Netlink::current()?;
    let mut teardown = Teardown::new();
    for port in &stale {
        teardown.step(del_host_veth(&nl, &port.name));
    }
    teardown.finish()
}

/// Ports on `bridge` owned by ovs-cni (not made by this plugin, whose ports GC and DEL find by
/// their attachment) whose device no longer exists: what ovs-cni's own cleanup removes, found
/// without waiting for ovs-vswitchd to mark the interface in error.
fn remove_dead_ports(endpoint: &Endpoint, bridge: &str, nl: &Netlink) -> Result<()> {
    let mut ovs = connect(endpoint)?;
    let mut dead = Vec::new();
    for port in vsctl::owned_ports_on(&mut ovs, bridge)? {
        if !port.made_by_us() && nl.link_show(&port.name)?.is_none() {
            dead.push((port.uuid, port.name));
        }
    }
    let uuids: Vec<&str> = dead.iter().map(|(uuid, _)| uuid.as_str()).collect();
    vsctl::del_ports(&mut ovs, &uuids)?;
    for (_, name) in &dead {
        cni_common::log::collected(format_args!("ovs-cni's OVS port {name}"));
    }
    Ok(())
}

/// The bridge of a DEL or GC, from a config that may not be complete.
fn conf_bridge(conf: &OvsConf, req: &Request<OvsConf>) -> Option<String> {
    match conf.bridge.as_deref().filter(|b| !b.is_empty()) {
        Some(b) => Some(b.to_string()),
        None => config::ovn_port(req).map(|_| config::OVN_BRIDGE.to_string()),
    }
}

/// `ip link del <name>` when it is a veth; anything else of that name is not ours.
fn del_host_veth(nl: &Netlink, name: &str) -> Result<()> {
    match nl.link_show(name)? {
        Some(link) if link.kind.as_deref() == Some("veth") => nl.link_del(link.index),
        _ => Ok(()),
    }
}

/// What OVSDB says about the port, against the config; the port's name (the host veth).
fn check_port(s: &Settings, att: &Attachment, view: &PortView) -> Result<String> {
    let port = view
        .ports
        .first()
        .ok_or_else(|| mismatch(format!("OVSDB has no port for attachment {}", att.id)))?;
    // A port ovs-cni made has a random name; one of ours is named after the attachment.
    if port.made_by_us() && port.name != att.host_veth {
        return Err(mismatch(format!(
            "the attachment's port is {}, expected {}",
            port.name, att.host_veth
        )));
    }
    let name = &port.name;
    let on_bridge = view
        .bridge_ports
        .as_ref()
        .ok_or_else(|| mismatch(format!("bridge {:?} does not exist", s.bridge)))?;
    if !on_bridge.contains(&port.uuid) {
        return Err(mismatch(format!(
            "port {name} is not on bridge {:?}",
            s.bridge
        )));
    }
    match &port.vlan {
        Some(v) if *v == s.vlan => {}
        Some(v) => {
            return Err(mismatch(format!(
                "port {name} is an {v}, the config asks for an {}",
                s.vlan
            )))
        }
        None => {
            return Err(mismatch(format!(
                "port {name} has VLAN settings (vlan_mode/tag/trunks) this plugin never makes; \
                 the config asks for an {}",
                s.vlan
            )))
        }
    }
    let iface = view
        .interface
        .as_ref()
        .filter(|i| port.interfaces.contains(&i.uuid))
        .ok_or_else(|| mismatch(format!("port {name} has no interface {name}")))?;
    if let Some(error) = &iface.error {
        return Err(mismatch(format!(
            "OVS reports interface {} in error: {error}",
            iface.name
        )));
    }
    Ok(name.clone())
}

fn expect_veth(link: &Link) -> Result<()> {
    if link.kind.as_deref() == Some("veth") {
        Ok(())
    } else {
        Err(mismatch(format!(
            "{} is a {}, not a veth",
            link.name,
            link.kind.as_deref().unwrap_or("link of no kind")
        )))
    }
}

fn result_interface(link: &Link, sandbox: &str) -> Interface {
    Interface {
        name: link.name.clone(),
        mac: link.mac.map(|m| m.to_string()).unwrap_or_default(),
        mtu: Some(link.mtu),
        sandbox: sandbox.to_string(),
        ..Interface::default()
    }
}

fn show_mac(link: &Link) -> String {
    link.mac
        .map(|m| m.to_string())
        .unwrap_or_else(|| "none".into())
}

fn mismatch(msg: impl std::fmt::Display) -> Error {
    Error::system(format!("CHECK: {msg}"))
}
