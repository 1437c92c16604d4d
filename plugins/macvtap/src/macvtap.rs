//! Getting a macvtap into the container namespace, and out again when ADD fails.
//!
//! A macvtap is always created in the host namespace and moved: its ifindex is then unique on
//! the node and survives the move (unless the container already uses it), and so does the name
//! of its /dev/tapN. One created directly in the container would get a small ifindex that every
//! other pod's macvtap has too.

use cni_common::env::validate_ifname;
use cni_common::mac::MacAddr;
use cni_common::naming::stable_hash;
use cni_common::netlink::{Link, Netlink};
use cni_common::netns::NetNs;
use std::cell::Cell;
use std::rc::Rc;

use cni_common::{Context, Error, Result, Rollback, Teardown};

/// The kind the kernel reports for a macvtap.
pub const KIND: &str = "macvtap";

/// The name of a macvtap created on `master` until it is renamed to CNI_IFNAME in the
/// container: `mvtap` and 10 hex digits of a hash of the attachment, so that concurrent ADDs do
/// not collide and a DEL finds what a crashed ADD of the same attachment left.
pub fn temp_name(container_id: &str, ifname: &str) -> String {
    // Stable across builds, since the DEL may be run by a newer binary than the ADD.
    let hash = stable_hash(&[container_id, ifname]);
    format!("mvtap{:010x}", hash >> 24)
}

/// The name macvtap-cni's device plugin (its releases since April 2026) gives the macvtap it
/// creates for `device_id`: `mvt` and the low 48 bits of xxHash64 (seed 0) of the device ID in
/// 12 lower-case hex digits, so that a long resource name still fits IFNAMSIZ.
pub fn device_plugin_name(device_id: &str) -> String {
    let hash = xxhash_rust::xxh64::xxh64(device_id.as_bytes(), 0);
    format!("mvt{:012x}", hash & 0xffff_ffff_ffff)
}

/// The names the device plugin's macvtap for `device_id` can have in the host namespace, in
/// the order they are tried: the hashed name of today's device plugin, then the device ID
/// itself, which older releases used (when it is a valid interface name at all).
pub fn device_link_names(device_id: &str) -> Vec<String> {
    let mut names = vec![device_plugin_name(device_id)];
    if validate_ifname(device_id).is_ok() && device_id != names[0] {
        names.push(device_id.to_string());
    }
    names
}

pub fn is_macvtap(link: &Link) -> bool {
    link.kind.as_deref() == Some(KIND)
}

/// The host namespace (the plugin's own) and the container's, with a netlink socket in each.
#[derive(Clone, Copy)]
pub struct Namespaces<'a> {
    pub host: &'a Netlink,
    pub host_ns: &'a NetNs,
    pub ctr: &'a Netlink,
    pub ctr_ns: &'a NetNs,
}

/// A macvtap's MTU cannot exceed its parent's; the kernel says only "Invalid argument".
fn check_mtu_fits(mtu: Option<u32>, parent: &Link) -> Result<()> {
    match mtu {
        Some(mtu) if mtu > parent.mtu => Err(Error::invalid_config(format!(
            "mtu {mtu} is above the mtu {} of the parent link {}: a macvtap's cannot exceed it",
            parent.mtu, parent.name
        ))),
        _ => Ok(()),
    }
}

/// A macvtap this ADD put into the container namespace. The rollback undoes that: the device
/// plugin's macvtap goes back to the host namespace under its name and with its attributes (the
/// device plugin expects to find it there), ours is deleted.
pub struct Claim<'a> {
    ns: Namespaces<'a>,
    /// Shared with the rollback step, which undoes the claim from wherever it got to.
    place: Rc<Cell<Place>>,
    name: String,
}

#[derive(Clone)]
enum Origin {
    /// The device plugin's macvtap as it was in the host namespace.
    DevicePlugin(Link),
    /// Created by this ADD.
    Created,
}

/// Where the macvtap is, by index.
#[derive(Clone, Copy)]
enum Place {
    Host(u32),
    /// Moved into the container, not yet looked up there (the move may renumber it).
    Moved,
    Container(u32),
}

impl<'a> Claim<'a> {
    /// deviceID mode: `ip link set <name> netns <container>`, then the MTU and MAC. The
    /// device plugin's macvtap is found under either name it may have (see
    /// [`device_link_names`]).
    pub fn take_device(
        ns: Namespaces<'a>,
        id: &str,
        mtu: Option<u32>,
        mac: Option<&MacAddr>,
        rollback: &mut Rollback<'a>,
    ) -> Result<Claim<'a>> {
        let names = device_link_names(id);
        let mut found = None;
        for name in &names {
            if let Some(link) = ns.host.link_show(name)? {
                found = Some(link);
                break;
            }
        }
        let original = found.ok_or_else(|| {
            Error::system(format!(
                "deviceID {id}: neither {} exists in the host network namespace (the device \
                 plugin creates it when it allocates the device to the pod)",
                names.join(" nor ")
            ))
        })?;
        let name = original.name.clone();
        if !is_macvtap(&original) {
            // Moving anything else (a NIC, a veth) into the pod would take it from the host.
            return Err(Error::invalid_config(format!(
                "deviceID {id}: {name} is a {} link, not a macvtap",
                original.kind.as_deref().unwrap_or("kind-less")
            )));
        }
        if let Some(parent) = original.link {
            if let Some(parent) = ns.host.link_show_index(parent)? {
                check_mtu_fits(mtu, &parent)?;
            }
        }
        let host_index = original.index;
        // The device plugin handed the pod /dev/tap<index>: the index must survive the move,
        // which it does unless the pod uses it already (the device would come back with
        // another).
        if let Some(taken) = ns.ctr.link_show_index(host_index)? {
            return Err(Error::system(format!(
                "the container's {} has ifindex {host_index}, which {name} needs to keep \
                 /dev/tap{host_index}, the node the device plugin gave the pod",
                taken.name
            )));
        }
        ns.host
            .link_set_netns(host_index, ns.ctr_ns)
            .with_context(|| format!("moving {name} into the container"))?;
        let claim = Claim::record(
            ns,
            Origin::DevicePlugin(original),
            Place::Moved,
            &name,
            rollback,
        );
        let index = claim.locate()?;
        if index != host_index {
            // Something took the index between the check and the move.
            return Err(Error::system(format!(
                "moving {name} into the container changed its ifindex from {host_index} to \
                 {index}, so /dev/tap{host_index}, which the device plugin gave the pod, is not \
                 its node"
            )));
        }
        claim.set_mtu_mac(mtu, mac)?;
        Ok(claim)
    }

    /// Standalone mode: `ip link add <name> link <master> [mtu M] [address A] type macvtap
    /// mode <mode>` in the host namespace, then `ip link set <name> netns <container>`.
    pub fn create(
        ns: Namespaces<'a>,
        master: &str,
        mode: &str,
        name: &str,
        mtu: Option<u32>,
        mac: Option<&MacAddr>,
        rollback: &mut Rollback<'a>,
    ) -> Result<Claim<'a>> {
        let parent = ns.host.link_show(master)?.ok_or_else(|| {
            Error::invalid_config(format!(
                "master {master} does not exist in the host network namespace"
            ))
        })?;
        check_mtu_fits(mtu, &parent)?;
        let index = ns
            .host
            .link_add_macvtap(name, parent.index, mode, mtu, mac)
            .with_context(|| format!("creating a macvtap on {master}"))?;
        let claim = Claim::record(ns, Origin::Created, Place::Host(index), name, rollback);
        ns.host
            .link_set_netns(index, ns.ctr_ns)
            .with_context(|| format!("moving {name} into the container"))?;
        claim.place.set(Place::Moved);
        claim.locate()?;
        Ok(claim)
    }

    /// A macvtap this ADD now holds, at `place`; `rollback` gives it back from wherever it is
    /// by then.
    fn record(
        ns: Namespaces<'a>,
        origin: Origin,
        place: Place,
        name: &str,
        rollback: &mut Rollback<'a>,
    ) -> Claim<'a> {
        let claim = Claim {
            ns,
            place: Rc::new(Cell::new(place)),
            name: name.to_string(),
        };
        let (at, name) = (Rc::clone(&claim.place), claim.name.clone());
        rollback.push(format!("the macvtap {name}"), move || {
            give_up(ns, &origin, &name, at.get())
        });
        claim
    }

    /// The index in the container namespace (a claim is only handed out once it is there).
    pub fn index(&self) -> u32 {
        match self.place.get() {
            Place::Container(i) => i,
            Place::Host(_) | Place::Moved => 0,
        }
    }

    /// The name it had when it entered the container, unique on the node.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Finds the macvtap in the container after the move: the kernel keeps the index unless
    /// the container uses it, and keeps the name.
    fn locate(&self) -> Result<u32> {
        let link = self.ns.ctr.link_show(&self.name)?.ok_or_else(|| {
            Error::system(format!(
                "{} is not in the container after moving it there",
                self.name
            ))
        })?;
        self.place.set(Place::Container(link.index));
        Ok(link.index)
    }

    fn set_mtu_mac(&self, mtu: Option<u32>, mac: Option<&MacAddr>) -> Result<()> {
        let index = self.index();
        if let Some(mtu) = mtu {
            self.ns
                .ctr
                .link_set_mtu(index, mtu)
                .with_context(|| format!("setting the mtu of {} to {mtu}", self.name))?;
        }
        if let Some(mac) = mac {
            self.ns
                .ctr
                .link_set_address(index, mac)
                .with_context(|| format!("setting the mac of {} to {mac}", self.name))?;
        }
        Ok(())
    }
}

/// Puts the device plugin's macvtap back as it was; carries on past failures.
fn give_back(ns: Namespaces, original: &Link, index: u32) -> Vec<Error> {
    {
        let mut errors = Vec::new();
        let mut attempt = |r: Result<()>| {
            if let Err(e) = r {
                errors.push(e);
            }
        };
        // A link must be down to be renamed; the move takes it down anyway.
        attempt(ns.ctr.link_set_down(index));
        attempt(ns.ctr.link_set_name(index, &original.name));
        attempt(ns.ctr.link_set_netns(index, ns.host_ns));
        let back = match ns.host.link_show(&original.name) {
            Ok(Some(link)) => link,
            Ok(None) => {
                errors.push(Error::system(format!(
                    "{} is not back in the host namespace",
                    original.name
                )));
                return errors;
            }
            Err(e) => {
                errors.push(e);
                return errors;
            }
        };
        let i = back.index;
        if back.mtu != original.mtu {
            attempt(ns.host.link_set_mtu(i, original.mtu));
        }
        if let Some(mac) = original.mac.filter(|m| back.mac != Some(*m)) {
            attempt(ns.host.link_set_address(i, &mac));
        }
        if back.promisc != original.promisc {
            attempt(ns.host.link_set_promisc(i, original.promisc));
        }
        if original.up {
            attempt(ns.host.link_set_up(i));
        }
        errors
    }
}

/// Undoes a claim from where it got to: a macvtap this ADD created is deleted, the device
/// plugin's is put back in the host namespace as it was.
fn give_up(ns: Namespaces, origin: &Origin, name: &str, place: Place) -> Result<()> {
    let place = match place {
        Place::Moved => match ns.ctr.link_show(name)? {
            Some(link) => Place::Container(link.index),
            None => return Err(Error::system(format!("{name} is nowhere to be found"))),
        },
        place => place,
    };
    let mut teardown = Teardown::new();
    match (origin, place) {
        (Origin::Created, Place::Host(i)) => {
            teardown.step(ns.host.link_del(i));
        }
        (Origin::Created, Place::Container(i)) => {
            teardown.step(ns.ctr.link_del(i));
        }
        // The move itself failed: the device never left.
        (Origin::DevicePlugin(_), Place::Host(_)) | (_, Place::Moved) => {}
        (Origin::DevicePlugin(original), Place::Container(i)) => {
            teardown.extend(give_back(ns, original, i))
        }
    }
    teardown.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checked against the reference xxHash library (python-xxhash 3, XXH64, seed 0): the
    /// published vectors for "", "a" and "abc", device IDs as the device plugin makes them, one
    /// whose hash needs zero padding, and the long ID of macvtap-cni's own test.
    #[test]
    fn device_plugin_names_are_mvt_and_48_bits_of_xxhash64() {
        for (id, name) in [
            ("", "mvtdb3751d8e999"),
            ("a", "mvtc4f1a98c6e5b"),
            ("abc", "mvt2cf5ad770999"),
            ("dataplaneMvp7", "mvtd41534302cb4"),
            ("eth0Mvp83", "mvtf19ca79529c8"),
            ("dataplaneMvp7397", "mvt0001c768789f"),
            (
                "a-very-long-device-id-that-would-overflow-ifname",
                "mvt8ac8386c48ba",
            ),
        ] {
            assert_eq!(device_plugin_name(id), name, "{id:?}");
            assert_eq!(name.len(), 15);
        }
    }

    #[test]
    fn device_links_are_looked_for_hashed_then_as_the_id() {
        assert_eq!(
            device_link_names("eth0Mvp83"),
            vec!["mvtf19ca79529c8".to_string(), "eth0Mvp83".to_string()]
        );
        // Too long for an interface name: only today's device plugin can have made it.
        assert_eq!(
            device_link_names("dataplanelongMvp12"),
            vec![device_plugin_name("dataplanelongMvp12")]
        );
    }

    #[test]
    fn temp_names_fit_ifnamsiz_and_differ_per_attachment() {
        let a = temp_name("c1", "net1");
        assert_eq!(a.len(), 15);
        assert!(a.starts_with("mvtap"));
        assert_eq!(a, temp_name("c1", "net1"));
        assert_ne!(a, temp_name("c1", "net2"));
        assert_ne!(a, temp_name("c2", "net1"));
        // The separator keeps ("ab", "c") and ("a", "bc") apart.
        assert_ne!(temp_name("ab", "c"), temp_name("a", "bc"));
    }
}
