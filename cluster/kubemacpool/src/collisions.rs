//! Collisions: one MAC used by more than one running VirtualMachineInstance or pod. Users make
//! them (restores, imports, the same MAC requested twice); they never block a create, they are
//! reported: the gauge `kmp_mac_collisions{mac}` (how many objects use it, only while more
//! than one does), and a Warning event `MACCollision` on each object involved, as upstream
//! (`MAC x: Collision between vmi/ns/a, pod/ns/b`).
//!
//! Users: a VMI in phase `Running` with the MACs of its `status.interfaces` (a migrating VMI is
//! one object, so its source and target count once; the two VMIs of a decentralized migration
//! share its migration's UID and are no collision, as upstream); a pod as [`pod_uses`] counts
//! it.
//!
//! Only users in namespaces KubeMacPool manages for their kind count ([`OptMode`], from the live
//! webhook configuration), as upstream counts them.
//!
//! The gauge and the events come from one replica, the reporter: the one whose allocator
//! identity sorts first among the live ones. So an object gets one event per collision, and a
//! sum or count over the gauge counts each collision once, however many replicas run (during a
//! failover, for up to one check of the reporter, a query may see it twice or not at all). The
//! other replicas serve the gauge's HELP and TYPE without samples. An event's name
//! is made from the collision it reports ([`event_name`]), so a replica that becomes the
//! reporter after a failover, and reports again what its peer already reported, is answered
//! "already exists" instead of adding a second event.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use net_types::MacAddr;
use tracing::{debug, warn};

use crate::events::{self, EventName};
use crate::opt_mode::{Managed, OptMode};
use crate::pod::{self, NETWORKS, NETWORK_STATUS};

pub const REASON: &str = "MACCollision";
/// The label KubeVirt puts on a VM's launcher pod.
pub const LAUNCHER_LABEL: (&str, &str) = ("kubevirt.io", "virt-launcher");

/// An object using MACs: kind (`vmi`, `pod`), namespace, name, uid.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct User {
    pub kind: &'static str,
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

impl User {
    fn label(&self) -> String {
        format!("{}/{}/{}", self.kind, self.namespace, self.name)
    }
}

#[derive(Default)]
pub struct Collisions {
    users: Mutex<Users>,
    /// Which namespaces count, for each kind.
    pub opt_mode: OptMode,
    /// Whether this replica is the reporter, as last checked.
    reporting: AtomicBool,
}

/// The migration a VMI takes part in: the UIDs of its `status.migrationState` source and target.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Migration {
    pub source: Option<String>,
    pub target: Option<String>,
}

impl Migration {
    /// A VMI's, from `status.migrationState.{sourceState,targetState}.migrationUID`.
    pub fn of_vmi(vmi: &serde_json::Value) -> Migration {
        let uid = |side: &str| {
            let at = format!("/status/migrationState/{side}/migrationUID");
            vmi.pointer(&at)
                .and_then(serde_json::Value::as_str)
                .filter(|u| !u.is_empty())
                .map(str::to_string)
        };
        Migration {
            source: uid("sourceState"),
            target: uid("targetState"),
        }
    }

    /// Whether two VMIs are the two ends of one migration: the same source or target UID.
    fn shared_with(&self, other: &Migration) -> bool {
        let same = |a: &Option<String>, b: &Option<String>| a.is_some() && a == b;
        same(&self.source, &other.source) || same(&self.target, &other.target)
    }
}

/// The MACs a pod counts with, as upstream counts them: only while it runs (phase `Running`)
/// and once Multus has attached it (it carries network-status), never for a VM's launcher pod
/// (its VMI counts); the MACs are those of its networks annotation.
pub fn pod_uses(phase: Option<&str>, meta: &ObjectMeta) -> Vec<MacAddr> {
    let launcher = meta
        .labels
        .as_ref()
        .and_then(|l| l.get(LAUNCHER_LABEL.0))
        .is_some_and(|v| v == LAUNCHER_LABEL.1);
    let annotations = meta.annotations.as_ref();
    let attached = annotations.is_some_and(|a| a.contains_key(NETWORK_STATUS));
    if launcher || phase != Some("Running") || !attached {
        return Vec::new();
    }
    let networks = annotations.and_then(|a| a.get(NETWORKS));
    networks.map(|n| pod::held_macs(n)).unwrap_or_default()
}

#[derive(Default)]
struct Users {
    macs: HashMap<User, (Vec<MacAddr>, Migration)>,
    /// The collisions already reported by event, so each is reported once.
    reported: BTreeMap<MacAddr, BTreeSet<User>>,
}

impl Collisions {
    /// Records what `user` uses now (nothing: it stopped using MACs or is gone).
    pub fn set(&self, user: User, macs: Vec<MacAddr>) {
        self.set_migrating(user, macs, Migration::default());
    }

    /// Records what a VMI uses now, and the migration it takes part in.
    pub fn set_migrating(&self, user: User, macs: Vec<MacAddr>, migration: Migration) {
        let mut users = self.users.lock().unwrap_or_else(|e| e.into_inner());
        if macs.is_empty() {
            users.macs.remove(&user);
        } else {
            users.macs.insert(user, (macs, migration));
        }
    }

    /// Drops every user of `kind` not in `keep` (after a relist).
    pub fn retain(&self, kind: &str, keep: &BTreeSet<User>) {
        let mut users = self.users.lock().unwrap_or_else(|e| e.into_inner());
        users.macs.retain(|u, _| u.kind != kind || keep.contains(u));
    }

    /// Every MAC with more than one user, and its users.
    pub fn current(&self) -> BTreeMap<MacAddr, BTreeSet<User>> {
        let users = self.users.lock().unwrap_or_else(|e| e.into_inner());
        let mut by_mac: BTreeMap<MacAddr, BTreeSet<&User>> = BTreeMap::new();
        for (user, (macs, _)) in users.macs.iter().filter(|(u, _)| self.counts(u)) {
            for mac in macs {
                by_mac.entry(*mac).or_default().insert(user);
            }
        }
        let migration = |u: &User| &users.macs[u].1;
        by_mac
            .into_iter()
            .filter_map(|(mac, sharing)| {
                // A user collides with any other that is not the far end of its migration.
                let colliding: BTreeSet<User> = sharing
                    .iter()
                    .filter(|u| {
                        let them = migration(u);
                        sharing
                            .iter()
                            .any(|v| v != *u && !them.shared_with(migration(v)))
                    })
                    .map(|u| (*u).clone())
                    .collect();
                (colliding.len() > 1).then_some((mac, colliding))
            })
            .collect()
    }

    fn counts(&self, user: &User) -> bool {
        let kind = if user.kind == "vmi" {
            Managed::Vms
        } else {
            Managed::Pods
        };
        self.opt_mode.manages(kind, &user.namespace)
    }

    /// Whether a collision is not reported yet; changes nothing.
    pub fn has_unreported(&self) -> bool {
        let now = self.current();
        let users = self.users.lock().unwrap_or_else(|e| e.into_inner());
        now.iter()
            .any(|(mac, set)| users.reported.get(mac) != Some(set))
    }

    /// The collisions not reported yet (a new one, or one with another set of users); forgets
    /// the ones that ended.
    pub fn unreported(&self) -> Vec<(MacAddr, BTreeSet<User>)> {
        let now = self.current();
        let mut users = self.users.lock().unwrap_or_else(|e| e.into_inner());
        let fresh = now
            .iter()
            .filter(|(mac, set)| users.reported.get(mac) != Some(set))
            .map(|(m, s)| (*m, s.clone()))
            .collect();
        users.reported = now;
        fresh
    }

    /// Makes this replica the reporter, or not.
    pub fn set_reporting(&self, reporting: bool) {
        self.reporting.store(reporting, Ordering::Relaxed);
    }

    pub fn is_reporting(&self) -> bool {
        self.reporting.load(Ordering::Relaxed)
    }

    /// The gauge, in Prometheus' text format: its samples only from the reporter.
    pub fn render(&self) -> String {
        let mut out = String::from(
            "# HELP kmp_mac_collisions How many running VMIs and pods use one MAC, while more than one does.\n\
             # TYPE kmp_mac_collisions gauge\n",
        );
        if !self.is_reporting() {
            return out;
        }
        for (mac, users) in self.current() {
            let _ = writeln!(out, "kmp_mac_collisions{{mac=\"{mac}\"}} {}", users.len());
        }
        out
    }
}

/// `MAC x: Collision between vmi/ns/a, pod/ns/b`.
pub fn message(mac: &MacAddr, users: &BTreeSet<User>) -> String {
    let names: Vec<String> = users.iter().map(User::label).collect();
    format!("MAC {mac}: Collision between {}", names.join(", "))
}

/// The name of the event that reports `message` on `user`: `<name>.<16 hex digits>`, as
/// client-go names events, but from a digest of what it reports instead of the time. The same
/// collision reported twice (by two replicas, one after the other) makes one name; a collision
/// whose users change makes another, and is reported again.
pub fn event_name(user: &User, message: &str) -> String {
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        format!("{}\n{}\n{message}", user.label(), user.uid).as_bytes(),
    );
    let hex: String = digest.as_ref()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    // An event's name is a DNS subdomain of at most 253 characters; an object's name may be
    // that long already. A cut name must still end in a letter or digit before the dot.
    let mut name: String = user.name.chars().take(253 - 1 - hex.len()).collect();
    while name.ends_with(|c: char| !c.is_ascii_alphanumeric()) {
        name.pop();
    }
    format!("{name}.{hex}")
}

/// One Warning event on each user of a collision.
pub async fn report(client: &Client, mac: &MacAddr, users: &BTreeSet<User>) {
    let text = message(mac, users);
    for user in users {
        let about = ObjectReference {
            api_version: Some(
                if user.kind == "vmi" {
                    "kubevirt.io/v1"
                } else {
                    "v1"
                }
                .to_string(),
            ),
            kind: Some(
                if user.kind == "vmi" {
                    "VirtualMachineInstance"
                } else {
                    "Pod"
                }
                .to_string(),
            ),
            namespace: Some(user.namespace.clone()),
            name: Some(user.name.clone()),
            uid: Some(user.uid.clone()).filter(|u| !u.is_empty()),
            ..ObjectReference::default()
        };
        let name = EventName::Exactly(event_name(user, &text));
        match events::record(client, &events::warning(about, name, REASON, text.clone())).await {
            Ok(()) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {
                debug!(user = %user.label(), "{REASON} already reported");
            }
            Err(e) => warn!(error = %e, user = %user.label(), "recording a {REASON} event"),
        }
    }
}

#[cfg(test)]
mod tests;
