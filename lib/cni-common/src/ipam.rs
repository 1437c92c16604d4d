//! Delegation to an IPAM plugin found on CNI_PATH (spec section 4).
//!
//! The delegate gets the same environment and the whole config, with only CNI_COMMAND changed.
//! A successful IPAM ADD records its DEL in the caller's [`Rollback`], so a failed ADD leaves
//! no reservation behind.

use std::io::Write;
use std::net::IpAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};

use serde_json::Value;

use crate::env::CmdArgs;
use crate::error::{Code, Context, ContextAs, Error, Result};
use crate::netlink::{Netlink, NewRoute};
use crate::node_policy::{NodePolicy, HOST_LOCAL_LEASE_DIR};
use crate::result::CniResult;
use crate::rollback::Rollback;
use crate::skel::Request;
use crate::version::Command;

/// Finds `plugin` as a regular file in `path`, as libcni's FindInPath does.
pub fn find_in_path(plugin: &str, path: &[PathBuf]) -> Result<PathBuf> {
    if plugin.is_empty() {
        return Err(Error::invalid_config("no IPAM plugin name provided"));
    }
    crate::config::check_plugin_name(plugin)?;
    if path.is_empty() {
        return Err(Error::invalid_env(format!(
            "CNI_PATH is empty: cannot find IPAM plugin {plugin:?}"
        )));
    }
    path.iter()
        .map(|dir| dir.join(plugin))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            Error::new(
                Code::Ipam,
                format!("failed to find IPAM plugin {plugin:?} in path {path:?}"),
            )
        })
}

/// Runs the delegate for `verb` with the request's environment and config.
fn exec<C>(ipam_type: &str, verb: Command, req: &Request<C>) -> Result<String> {
    let binary = find_in_path(ipam_type, &req.cmd.path)?;
    run_delegate(&binary, verb, &req.cmd, &req.stdin)
        .with_context(|| format!("IPAM plugin {ipam_type:?} {}", verb.as_str()))
}

fn run_delegate(binary: &Path, verb: Command, cmd: &CmdArgs, stdin: &[u8]) -> Result<String> {
    let cni_args = cmd
        .args
        .pairs()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(";");
    // CNI_PATH is the runtime's: a directory it cannot hold is a bad environment (4).
    let cni_path =
        std::env::join_paths(&cmd.path).context_as(Code::InvalidEnvironment, "CNI_PATH")?;
    let mut child = Process::new(binary)
        .env("CNI_COMMAND", verb.as_str())
        .env("CNI_CONTAINERID", &cmd.container_id)
        .env("CNI_NETNS", &cmd.netns)
        .env("CNI_IFNAME", &cmd.ifname)
        .env("CNI_ARGS", cni_args)
        .env("CNI_PATH", cni_path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| delegate_failed(format!("starting {}", binary.display()), e))?;
    if let Some(mut pipe) = child.stdin.take() {
        // A delegate that exits without reading its stdin closes the pipe; its exit status and
        // stdout tell what happened, so a write error here is not the interesting one.
        let _ = pipe.write_all(stdin);
    }
    let out = child
        .wait_with_output()
        .map_err(|e| delegate_failed(format!("waiting for {}", binary.display()), e))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        return Ok(stdout);
    }
    Err(delegate_error(
        &stdout,
        &String::from_utf8_lossy(&out.stderr),
    ))
}

/// Running the delegate or reading its answer failed: whatever the cause, the IPAM step failed
/// (101), not the plugin's own I/O (5) or decoding (6).
fn delegate_failed(
    context: String,
    cause: impl Into<Box<dyn std::error::Error + Send + Sync>>,
) -> Error {
    Error::classified(Code::Ipam, context, cause)
}

/// A failed delegate's error object keeps its own code; anything else becomes code 101.
fn delegate_error(stdout: &str, stderr: &str) -> Error {
    if let Ok(v) = serde_json::from_str::<Value>(stdout) {
        if let (Some(code), Some(msg)) = (v.get("code").and_then(Value::as_u64), v.get("msg")) {
            let msg = msg.as_str().unwrap_or_default();
            let mut e = Error::new(Code::from_u32(u32::try_from(code).unwrap_or(101)), msg);
            if let Some(d) = v
                .get("details")
                .and_then(Value::as_str)
                .filter(|d| !d.is_empty())
            {
                e = e.with_details(d);
            }
            return e;
        }
    }
    let text = if stderr.trim().is_empty() {
        stdout
    } else {
        stderr
    };
    Error::new(
        Code::Ipam,
        format!("failed without an error object: {}", text.trim()),
    )
}

/// IPAM ADD; `rollback` releases the address again unless the ADD is committed.
pub fn exec_add<'r, C>(
    ipam_type: &str,
    req: &'r Request<C>,
    rollback: &mut Rollback<'r>,
) -> Result<CniResult> {
    let stdout = exec(ipam_type, Command::Add, req)?;
    let owned_type = ipam_type.to_string();
    rollback.push(format!("the {ipam_type} address"), move || {
        exec_del(&owned_type, req)
    });
    let value: Value = serde_json::from_str(&stdout).map_err(|e| {
        delegate_failed(
            format!("IPAM plugin {ipam_type:?} printed an invalid result"),
            e,
        )
    })?;
    let result = CniResult::from_value(&value, req.version)
        .with_context(|| format!("IPAM plugin {ipam_type:?} result"))?;
    Ok(result)
}

pub fn exec_del<C>(ipam_type: &str, req: &Request<C>) -> Result<()> {
    exec(ipam_type, Command::Del, req).map(drop)
}

pub fn exec_check<C>(ipam_type: &str, req: &Request<C>) -> Result<()> {
    exec(ipam_type, Command::Check, req).map(drop)
}

pub fn exec_status<C>(ipam_type: &str, req: &Request<C>) -> Result<()> {
    if !delegate_knows_1_1(ipam_type, req)? {
        return Ok(());
    }
    exec(ipam_type, Command::Status, req).map(drop)
}

/// IPAM GC, when the delegate knows GC; for host-local, also the leases it keeps of
/// attachments that are gone (see [`release_lost_host_local_leases`]).
pub fn exec_gc<C>(ipam_type: &str, req: &Request<C>) -> Result<()> {
    let leases = host_local_leases(req)?;
    if delegate_knows_1_1(ipam_type, req)? {
        exec(ipam_type, Command::Gc, req)?;
    }
    if let Some(dir) = leases {
        release_lost_host_local_leases(req, &dir)?;
    }
    Ok(())
}

/// Refuses what this config's IPAM section names that the plugin itself would read on the node
/// (host-local's `dataDir`, whose leases GC lists), before anything is touched.
pub fn check_node_policy<C>(req: &Request<C>) -> Result<()> {
    host_local_leases(req).map(drop)
}

const HOST_LOCAL: &str = "host-local";
/// A lease file holds a container ID and an interface name: a few hundred bytes at most.
const MAX_LEASE_FILE: u64 = 4096;

/// With host-local, the directory of this network's leases, `<dataDir>/<network>`, where the
/// node policy allows `dataDir`.
fn host_local_leases<C>(req: &Request<C>) -> Result<Option<PathBuf>> {
    if req.conf.ipam_type() != Some(HOST_LOCAL) {
        return Ok(None);
    }
    let data_dir = req
        .conf
        .ipam
        .as_ref()
        .and_then(|i| i.rest.get("dataDir"))
        .and_then(Value::as_str)
        .filter(|d| !d.is_empty())
        .unwrap_or(HOST_LOCAL_LEASE_DIR);
    let dir = NodePolicy::load()?.lease_dir("ipam.dataDir", data_dir)?;
    Ok(Some(dir.join(&req.conf.name)))
}

/// host-local keeps one file per leased address, `<dataDir>/<network>/<address>`, holding the
/// container ID and the interface name, and its GC (through 1.9.1, and before 1.1.0 it has
/// none) leaves them all: a lease whose DEL never came would be taken for good. So the leases
/// of this network whose attachment is not among the valid ones are released with host-local's
/// own DEL, as the lost DEL would have. Files that are not leases (`lock`, `last_reserved_ip.*`)
/// and leases of the old one-line format (no interface name to match) are left alone.
fn release_lost_host_local_leases<C>(req: &Request<C>, dir: &Path) -> Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::wrap(format!("listing {}", dir.display()), e)),
    };
    let valid: std::collections::HashSet<(&str, &str)> = req
        .conf
        .gc_valid_attachments()
        .iter()
        .map(|a| (a.container_id.as_str(), a.ifname.as_str()))
        .collect();
    let mut stdin = req.raw.clone();
    // Every host-local release from 1.0 on speaks 1.0.0; DEL needs nothing newer.
    stdin["cniVersion"] = Value::from("1.0.0");
    if let Some(conf) = stdin.as_object_mut() {
        conf.remove(crate::config::VALID_ATTACHMENTS);
    }
    let stdin = stdin.to_string();
    let binary = find_in_path(HOST_LOCAL, &req.cmd.path)?;
    let mut errors = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(address) = name.to_str().filter(|n| n.parse::<IpAddr>().is_ok()) else {
            continue;
        };
        let Some((container_id, ifname)) = read_lease(&entry.path()) else {
            continue;
        };
        if valid.contains(&(container_id.as_str(), ifname.as_str())) {
            continue;
        }
        // What a file says becomes host-local's environment: only what a runtime could pass.
        if let Err(e) = crate::env::validate_container_id(&container_id)
            .and_then(|()| crate::env::validate_ifname(&ifname))
        {
            tracing::warn!(
                "{}: not a lease host-local wrote ({}); left",
                entry.path().display(),
                e.msg()
            );
            continue;
        }
        let cmd = CmdArgs {
            command: Command::Del,
            container_id: container_id.clone(),
            netns: String::new(),
            ifname: ifname.clone(),
            args: Default::default(),
            path: req.cmd.path.clone(),
        };
        match run_delegate(&binary, Command::Del, &cmd, stdin.as_bytes()) {
            Ok(_) => crate::log::collected(format_args!(
                "host-local lease of {address} ({container_id}, {ifname})"
            )),
            Err(e) => errors.push(Error::wrap(format!("releasing the lease of {address}"), e)),
        }
    }
    match errors.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// A lease's container ID and interface name (`<id>\r\n<ifname>`, or `\n`); None for anything
/// else.
fn read_lease(path: &Path) -> Option<(String, String)> {
    use std::io::Read;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(MAX_LEASE_FILE).read_to_string(&mut text).ok()?;
    let mut lines = text.lines().map(str::trim);
    let container_id = lines.next().filter(|l| !l.is_empty())?.to_string();
    let ifname = lines.next().filter(|l| !l.is_empty())?.to_string();
    Some((container_id, ifname))
}

/// Whether the delegate speaks spec 1.1.0, which brought STATUS and GC. An older delegate
/// (Debian's host-local 1.1.1 is one) does not know the verbs and would fail on them as if they
/// were a malformed ADD; for it there is nothing to report or collect, as libcni also decides.
fn delegate_knows_1_1<C>(ipam_type: &str, req: &Request<C>) -> Result<bool> {
    let binary = find_in_path(ipam_type, &req.cmd.path)?;
    let out = run_delegate(
        &binary,
        Command::Version,
        &req.cmd,
        br#"{"cniVersion":"1.1.0"}"#,
    )
    .with_context(|| format!("IPAM plugin {ipam_type:?} VERSION"))?;
    let versions: Value = serde_json::from_str(&out).map_err(|e| {
        delegate_failed(
            format!("IPAM plugin {ipam_type:?} VERSION: undecodable answer"),
            e,
        )
    })?;
    Ok(versions
        .get("supportedVersions")
        .and_then(Value::as_array)
        .is_some_and(|v| v.iter().any(|v| v.as_str() == Some("1.1.0"))))
}

/// `a, b, c` as a person reads it, or `none`.
pub fn list_or_none<T: std::fmt::Display>(items: &[T]) -> String {
    if items.is_empty() {
        return "none".into();
    }
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The gateways of the result's addresses on interface `pos`: the first IPv4 and IPv6 one.
fn gateways(result: &CniResult, pos: usize) -> (Option<IpAddr>, Option<IpAddr>) {
    let mut v4 = None;
    let mut v6 = None;
    for ip in result
        .ips
        .iter()
        .filter(|ip| on_interface(ip.interface, pos))
    {
        match ip.gateway {
            Some(gw @ IpAddr::V4(_)) if v4.is_none() => v4 = Some(gw),
            Some(gw @ IpAddr::V6(_)) if v6.is_none() => v6 = Some(gw),
            _ => {}
        }
    }
    (v4, v6)
}

fn on_interface(interface: Option<i64>, pos: usize) -> bool {
    interface.and_then(|i| usize::try_from(i).ok()) == Some(pos)
}

/// Puts the result's addresses for interface `pos` on link `index` and adds every route
/// through it, as the reference plugins' ConfigureIface does: a route without a gateway
/// goes via the gateway of an address of its family, if any. Runs in the container's
/// namespace; the link is set up first so that routes via a gateway can be added.
pub fn configure_iface(nl: &Netlink, index: u32, pos: usize, result: &CniResult) -> Result<()> {
    nl.link_set_up(index)?;
    for ip in result
        .ips
        .iter()
        .filter(|ip| on_interface(ip.interface, pos))
    {
        nl.addr_add(index, ip.address)?;
    }
    let (v4, v6) = gateways(result, pos);
    for route in &result.routes {
        let gw = route.gw.or(match route.dst {
            ipnetwork::IpNetwork::V4(_) => v4,
            ipnetwork::IpNetwork::V6(_) => v6,
        });
        let scope = route.scope.and_then(|s| u8::try_from(s).ok());
        nl.route_add(
            index,
            &NewRoute {
                dst: route.dst,
                gw,
                mtu: route.mtu,
                advmss: route.advmss,
                priority: route.priority,
                table: route.table,
                scope,
            },
        )?;
    }
    Ok(())
}

/// CHECK's half of [`configure_iface`]: every address of interface `pos` is on link `index`
/// and every route is there (same destination, and gateway when the result names one).
pub fn check_iface(nl: &Netlink, index: u32, pos: usize, result: &CniResult) -> Result<()> {
    let addrs = nl.addr_list(index)?;
    for ip in result
        .ips
        .iter()
        .filter(|ip| on_interface(ip.interface, pos))
    {
        if !addrs.contains(&ip.address) {
            return Err(Error::system(format!(
                "address {} is not on the interface (it has {})",
                ip.address,
                list_or_none(&addrs)
            )));
        }
    }
    let mut have = Vec::new();
    for ipv6 in [false, true] {
        if result.routes.iter().any(|r| r.dst.is_ipv6() == ipv6) {
            have.extend(nl.route_list(index, ipv6)?);
        }
    }
    let (v4, v6) = gateways(result, pos);
    for route in &result.routes {
        let dst = ipnetwork::IpNetwork::new(route.dst.network(), route.dst.prefix())
            .with_context(|| format!("route {}", route.dst))?;
        let gw = route.gw.or(if dst.is_ipv4() { v4 } else { v6 });
        let found = have
            .iter()
            .any(|r| r.dst == dst && (gw.is_none() || r.gw == gw));
        if !found {
            let via = gw.map(|g| format!(" via {g}")).unwrap_or_default();
            return Err(Error::system(format!(
                "route {dst}{via} is not on the interface"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_in_path_refuses_names_with_a_path() {
        let path = vec![PathBuf::from("/usr/lib/cni")];
        for bad in ["", "../host-local", "/bin/sh", ".."] {
            assert!(find_in_path(bad, &path).is_err(), "{bad}");
        }
    }

    #[test]
    fn find_in_path_reports_a_missing_plugin_with_the_path() {
        let dir = std::env::temp_dir();
        let e = find_in_path("no-such-ipam-plugin", &[dir]).expect_err("missing");
        assert_eq!(e.code(), Code::Ipam);
        assert!(e.msg().contains("no-such-ipam-plugin"));
    }

    #[test]
    fn delegate_error_objects_keep_their_code() {
        let e = delegate_error(r#"{"code":11,"msg":"busy","details":"retry"}"#, "");
        assert_eq!(e.code(), Code::TryAgainLater);
        assert_eq!(e.details(), Some("retry"));
        let e = delegate_error("", "panic: boom\n");
        assert_eq!(e.code(), Code::Ipam);
        assert!(e.msg().contains("panic: boom"));
    }
}
