//! The tuning meta-plugin: chained after a plugin that created CNI_IFNAME, it sets sysctls and
//! link attributes, and DEL puts back every value it replaced, sysctls included.

pub mod allowlist;
pub mod backup;
pub mod config;

use std::collections::BTreeMap;
use std::path::Path;

use cni_common::netlink::{Link, Netlink};
use cni_common::netns::NetNs;
use cni_common::result::CniResult;
use cni_common::skel::{Plugin, Request};
use cni_common::state::{attachment_file_name, StateDir, UNREADABLE};
use cni_common::sysctl::{sysctl_read, sysctl_write};
use cni_common::{Code, Context, ContextAs, Error, Result, Rollback, Teardown};

use crate::allowlist::{Allowlist, ALLOWLIST_PATH};
use crate::backup::Backup;
use crate::config::{data_dir, Settings, TuningConf};

pub const ABOUT: &str = concat!(
    "tuning CNI plugin ",
    env!("CARGO_PKG_VERSION"),
    " (CNI spec 0.1.0 to 1.1.0): chained; sets sysctls, mac, mtu, promisc, allmulti, txQLen"
);

pub struct Tuning;

/// A temp file this old is a write that will never finish (a write takes microseconds).
const STALE_TEMP_FILE_AGE: std::time::Duration = std::time::Duration::from_secs(600);

impl Plugin for Tuning {
    type Config = TuningConf;

    fn add(&self, req: &Request<TuningConf>) -> Result<CniResult> {
        let prev = req.require_prev_result()?;
        // The result is prevResult again: if it cannot be printed in the config's version (an
        // L2 result before 0.3.0), that is known now, before anything changes.
        prev.to_value(req.version)?;
        let settings = settings(req)?;
        let ns = req.open_netns()?;
        let store = StateDir::ephemeral(&settings.data_dir);
        let file = attachment_file_name(&req.cmd.container_id, &req.cmd.ifname);
        let changes = settings.touches_link() || !settings.sysctls.is_empty();
        // One trip into the namespace (each costs a thread) for the socket, the interface, the
        // saved originals and the sysctls.
        let (nl, link, saved) = ns.run(|| {
            let nl = Netlink::current()?;
            let link = container_link(&nl, &req.cmd.ifname)?;
            if !changes {
                return Ok((nl, link, None));
            }
            let paths: Vec<String> = settings.sysctls.iter().map(|s| s.path.clone()).collect();
            let mut backup = Backup::capture(&settings, &link, read_sysctls(&paths)?);
            match store.read::<Backup>(&file) {
                Ok(Some(earlier)) => backup = backup.keep_originals_from(earlier),
                Ok(None) => {}
                // The originals it holds are lost to us, but not to a person: keep it aside.
                Err(e) => {
                    let aside = store.set_aside(&file)?;
                    tracing::warn!(
                        "{}; kept as {aside}, and the values now in place are saved as the \
                         originals",
                        e.msg()
                    );
                }
            }
            backup.container_id = Some(req.cmd.container_id.clone());
            backup.ifname = Some(req.cmd.ifname.clone());
            backup.network = Some(req.conf.name.clone());
            // Saved before the first change, so a crash part-way is still undone by DEL.
            store
                .write(&file, &backup)
                .context("saving the values to restore")?;
            // Still in the namespace: the sysctls are written on this trip.
            let sysctls = write_sysctls(&settings);
            Ok((nl, link, Some((backup, sysctls))))
        })?;
        let mut rollback = Rollback::new();
        if let Some((backup, sysctls)) = saved {
            let (nl, ns, store, file) = (&nl, &ns, &store, &file);
            let index = link.index;
            rollback.push("the values tuning replaced", move || {
                put_back(ns, nl, index, &backup, store, file)
            });
            sysctls?;
            set_link(nl, &link, &settings)?;
        }
        rollback.commit();

        let mut result = prev.clone();
        if let Some(mac) = settings.mac {
            for iface in result.interfaces.iter_mut().filter(|i| {
                i.name == req.cmd.ifname && (i.sandbox.is_empty() || i.sandbox == req.cmd.netns)
            }) {
                iface.mac = mac.to_string();
            }
        }
        Ok(result)
    }

    /// Restores what ADD changed. Never fails for what is already gone: no state, no netns, no
    /// link. A restore the kernel refuses is reported on stderr and the state kept for GC,
    /// because a failing DEL would stop the runtime from deleting the rest of the chain.
    fn del(&self, req: &Request<TuningConf>) -> Result<()> {
        let store = StateDir::ephemeral(data_dir(&req.conf.plugin)?);
        let file = attachment_file_name(&req.cmd.container_id, &req.cmd.ifname);
        let backup = match store.read::<Backup>(&file) {
            Ok(Some(backup)) => backup,
            Ok(None) => return Ok(()),
            // Nothing can be restored from it, yet it is the only record of the interface's
            // original settings: a person may still read them. So it stays, as does a copy an ADD
            // set aside (`<file>.unreadable`), and DEL succeeds, as the reference plugin's does.
            Err(e) => {
                tracing::warn!(
                    "{}; nothing restored, and the file is kept: it is the only record of \
                     {}'s original settings",
                    e.msg(),
                    req.cmd.ifname
                );
                return Ok(());
            }
        };
        let Some(ns) = req.open_netns_if_exists()? else {
            // The namespace and everything in it is gone: nothing left to restore.
            return store.remove(&file);
        };
        let (errors, restored) = ns.run(|| {
            let nl = Netlink::current()?;
            Ok(match nl.link_show(&req.cmd.ifname)? {
                // The interface went with its creator's DEL; namespace-wide sysctls still restore.
                None => (restore_sysctls(&backup.sysctl), true),
                Some(link) => {
                    let errors = restore(&nl, link.index, &backup);
                    let ok = errors.is_empty();
                    (errors, ok)
                }
            })
        })?;
        report("DEL", &errors);
        if restored {
            store.remove(&file)?;
        }
        Ok(())
    }

    fn check(&self, req: &Request<TuningConf>) -> Result<()> {
        let prev = req.require_prev_result()?;
        let settings = settings(req)?;
        let ns = req.open_netns()?;
        let (_nl, link, current) = enter(&ns, &req.cmd.ifname, &settings)?;
        for s in &settings.sysctls {
            let now = current.get(&s.path).map(String::as_str).unwrap_or_default();
            if now != s.value.trim() {
                return Err(mismatch(format!(
                    "sysctl {} is {now:?}, configured {:?}",
                    s.key, s.value
                )));
            }
        }
        if let Some(mac) = settings.mac {
            if link.mac != Some(mac) {
                return Err(mismatch(format!(
                    "{} has mac {}, configured {mac}",
                    link.name,
                    link.mac.map_or("none".into(), |m| m.to_string())
                )));
            }
        }
        if let Some(iface) = prev
            .interfaces
            .iter()
            .find(|i| i.name == req.cmd.ifname && !i.mac.is_empty())
        {
            let listed = cni_common::mac::MacAddr::parse(&iface.mac).ok();
            if listed != link.mac {
                return Err(mismatch(format!(
                    "{} has mac {}, prevResult lists {}",
                    link.name,
                    link.mac.map_or("none".into(), |m| m.to_string()),
                    iface.mac
                )));
            }
        }
        if let Some(mtu) = settings.mtu.filter(|m| *m != link.mtu) {
            return Err(mismatch(format!(
                "{} has mtu {}, configured {mtu}",
                link.name, link.mtu
            )));
        }
        // Only what this plugin sets is verified: promisc=false means "leave it", not "must be off".
        if settings.promisc && !link.promisc {
            return Err(mismatch(format!("{} is not promiscuous", link.name)));
        }
        if let Some(on) = settings.allmulti.filter(|on| *on != link.allmulti) {
            return Err(mismatch(format!(
                "{} has allmulticast {}, configured {on}",
                link.name, link.allmulti
            )));
        }
        if let Some(len) = settings.tx_qlen.filter(|l| *l != link.txqlen) {
            return Err(mismatch(format!(
                "{} has txqueuelen {}, configured {len}",
                link.name, link.txqlen
            )));
        }
        Ok(())
    }

    /// Ready when the state directory can be written, or made where it does not exist yet: ADD
    /// cannot save what it replaces otherwise. Creates nothing.
    fn status(&self, req: &Request<TuningConf>) -> Result<()> {
        let dir = data_dir(&req.conf.plugin)?;
        let existing = dir
            .ancestors()
            .find(|d| d.exists())
            .unwrap_or(Path::new("/"));
        let writable = match existing.is_dir() {
            true => nix::unistd::access(existing, nix::unistd::AccessFlags::W_OK)
                .map_err(std::io::Error::from),
            false => Err(std::io::Error::other(format!(
                "{} is not a directory",
                existing.display()
            ))),
        };
        // What ADD could not save in it makes the plugin unable to serve ADD (50).
        writable.with_context_as(Code::NotAvailable, || {
            format!("state directory {} is not writable", dir.display())
        })
    }

    /// Forgets the saved state of this network's attachments that the runtime no longer has.
    /// Only files this plugin wrote for this network are considered: an unreadable file's
    /// network is unknown (the directory is shared), so it is left, as DEL leaves it.
    fn gc(&self, req: &Request<TuningConf>) -> Result<()> {
        let store = StateDir::ephemeral(data_dir(&req.conf.plugin)?);
        let valid = req.conf.gc_valid_attachments();
        let mut teardown = Teardown::new();
        if let Some(swept) = teardown.step(store.sweep_temp_files(STALE_TEMP_FILE_AGE)) {
            if swept > 0 {
                cni_common::log::collected(format_args!(
                    "{swept} temp file(s) of writes that never finished"
                ));
            }
        }
        for name in store.list_attachments()? {
            if name.ends_with(UNREADABLE) {
                continue;
            }
            let backup = match store.read::<Backup>(&name) {
                Ok(Some(b)) => b,
                Ok(None) => continue,
                Err(e) => {
                    tracing::info!("{}; left for a person to read", e.msg());
                    continue;
                }
            };
            // Only this network's records: other networks share the directory.
            if backup.network.as_deref() != Some(req.conf.name.as_str()) {
                continue;
            }
            let kept = valid.iter().any(|a| {
                Some(&a.container_id) == backup.container_id.as_ref()
                    && Some(&a.ifname) == backup.ifname.as_ref()
            });
            if !kept && teardown.step(store.remove(&name)).is_some() {
                cni_common::log::collected(format_args!("tuning state {name}"));
            }
        }
        teardown.finish()
    }
}

fn settings(req: &Request<TuningConf>) -> Result<Settings> {
    let has_sysctls = !req.conf.plugin.sysctl.is_empty() || req.conf.arg("sysctl").is_some();
    let allowlist = if has_sysctls {
        Allowlist::load(Path::new(ALLOWLIST_PATH))?
    } else {
        Allowlist::none()
    };
    Settings::resolve(req, &allowlist)
}

/// One trip into the namespace (each costs a thread): the netlink socket, the interface, and the
/// current values of the configured sysctls.
fn enter(
    ns: &NetNs,
    ifname: &str,
    settings: &Settings,
) -> Result<(Netlink, Link, BTreeMap<String, String>)> {
    let paths: Vec<String> = settings.sysctls.iter().map(|s| s.path.clone()).collect();
    ns.run(|| {
        let nl = Netlink::current()?;
        let link = container_link(&nl, ifname)?;
        let sysctls = read_sysctls(&paths)?;
        Ok((nl, link, sysctls))
    })
}

fn container_link(nl: &Netlink, ifname: &str) -> Result<Link> {
    nl.link_show(ifname)?.ok_or_else(|| {
        Error::system(format!(
            "interface {ifname} does not exist in the container namespace"
        ))
    })
}

fn mismatch(msg: String) -> Error {
    Error::system(format!("CHECK: {msg}"))
}

/// Current values of sysctls, read on a thread inside the namespace. A missing file is an error:
/// it would be one on write too, and nothing has changed yet.
fn read_sysctls(paths: &[String]) -> Result<BTreeMap<String, String>> {
    paths
        .iter()
        .map(|p| {
            if !Path::new("/proc/sys").join(p).exists() {
                // The config names a setting this kernel or interface does not have.
                return Err(Error::invalid_config(format!("sysctl {p} does not exist")));
            }
            Ok((p.clone(), sysctl_read(p)?))
        })
        .collect()
}

/// Writes the configured sysctls; called inside the namespace.
fn write_sysctls(s: &Settings) -> Result<()> {
    s.sysctls.iter().try_for_each(|sc| {
        sysctl_write(&sc.path, &sc.value).with_context(|| format!("sysctl {}", sc.key))
    })
}

/// After the sysctls, in the reference plugin's order: mac, promisc, mtu, allmulti, txqueuelen.
fn set_link(nl: &Netlink, link: &Link, s: &Settings) -> Result<()> {
    let i = link.index;
    if let Some(mac) = s.mac {
        nl.link_set_address(i, &mac)
            .with_context(|| format!("setting mac of {} to {mac}", link.name))?;
    }
    if s.promisc {
        nl.link_set_promisc(i, true)
            .with_context(|| format!("setting {} promiscuous", link.name))?;
    }
    if let Some(mtu) = s.mtu {
        nl.link_set_mtu(i, mtu)
            .with_context(|| format!("setting mtu of {} to {mtu}", link.name))?;
    }
    if let Some(on) = s.allmulti {
        nl.link_set_allmulti(i, on)
            .with_context(|| format!("setting allmulticast of {} to {on}", link.name))?;
    }
    if let Some(len) = s.tx_qlen {
        nl.link_set_txqlen(i, len)
            .with_context(|| format!("setting txqueuelen of {} to {len}", link.name))?;
    }
    Ok(())
}

/// Undoes a failed ADD: restores what it changed and, only once everything is back, drops the
/// saved state (what is left stays for DEL or GC).
fn put_back(
    ns: &NetNs,
    nl: &Netlink,
    index: u32,
    backup: &Backup,
    store: &StateDir,
    file: &str,
) -> Result<()> {
    let leftovers = ns
        .run(|| Ok(restore(nl, index, backup)))
        .unwrap_or_else(|e| vec![e]);
    let mut teardown = Teardown::new();
    teardown.extend(leftovers);
    if teardown.is_clean() {
        teardown.step(store.remove(file));
    }
    teardown.finish()
}

/// Puts the saved values back, in reverse order, carrying on past failures. Called inside the
/// namespace (for the sysctls).
fn restore(nl: &Netlink, index: u32, b: &Backup) -> Vec<Error> {
    let mut errors = Vec::new();
    let mut attempt = |r: Result<()>, what: &str| {
        if let Err(e) = r {
            errors.push(Error::wrap(format!("restoring {what}"), e));
        }
    };
    if let Some(len) = b.tx_qlen {
        attempt(nl.link_set_txqlen(index, len), "txqueuelen");
    }
    if let Some(on) = b.allmulti {
        attempt(nl.link_set_allmulti(index, on), "allmulticast");
    }
    if let Some(mtu) = b.mtu {
        attempt(nl.link_set_mtu(index, mtu), "mtu");
    }
    if let Some(on) = b.promisc {
        attempt(nl.link_set_promisc(index, on), "promisc");
    }
    if let Some(mac) = &b.mac {
        let parsed = cni_common::mac::MacAddr::parse(mac).map_err(Error::from);
        attempt(parsed.and_then(|m| nl.link_set_address(index, &m)), "mac");
    }
    errors.extend(restore_sysctls(&b.sysctl));
    errors
}

/// Restores sysctls whose files still exist (per-interface ones vanish with the interface).
/// Called inside the namespace.
fn restore_sysctls(sysctl: &BTreeMap<String, String>) -> Vec<Error> {
    sysctl
        .iter()
        .filter(|(path, _)| Path::new("/proc/sys").join(path).exists())
        .filter_map(|(path, value)| {
            sysctl_write(path, value)
                .with_context(|| format!("restoring sysctl {path}"))
                .err()
        })
        .collect()
}

fn report(what: &str, errors: &[Error]) {
    for e in errors {
        tracing::warn!("{what}: {}", e.msg());
    }
}
