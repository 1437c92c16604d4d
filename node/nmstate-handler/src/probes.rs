//! The checks after an apply that decide whether the node keeps the change: its default
//! gateway still answers (when it answered before), the API server still answers, and the Node
//! is still Ready. Each is retried every second until the probe timeout. Unlike upstream's,
//! which are fixed, the set and the timeout are flags of `node-agent nmstate`.

use std::fmt;
use std::io;
use std::mem;
use std::net::{IpAddr, Ipv4Addr};
use std::str::FromStr;
use std::time::{Duration, Instant};

use cni_common::netlink::{Netlink, RouteInfo, RT_TABLE_MAIN};
use error_context::report;
use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use kube::Client;
use tracing::warn;

use crate::error::{Context, Error, Result};

/// Upstream's probe timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// One attempt of a probe: an API request or an echo that has not answered by then is a miss.
const ATTEMPT: Duration = Duration::from_secs(3);
const RETRY: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Probe {
    /// ICMP echo to the IPv4 default gateway, kept only when it answered before the change.
    Gateway,
    /// `GET /version` of the API server.
    ApiServer,
    /// The node's Ready condition is True.
    NodeReady,
}

pub const ALL: [Probe; 3] = [Probe::Gateway, Probe::ApiServer, Probe::NodeReady];

impl Probe {
    pub fn as_str(self) -> &'static str {
        match self {
            Probe::Gateway => "gateway",
            Probe::ApiServer => "api-server",
            Probe::NodeReady => "node-ready",
        }
    }
}

impl fmt::Display for Probe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Probe {
    type Err = UnknownProbe;
    fn from_str(s: &str) -> std::result::Result<Probe, UnknownProbe> {
        ALL.into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| UnknownProbe(s.to_string()))
    }
}

/// A name that is no probe's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown probe {0:?}: expected gateway, api-server or node-ready")]
pub struct UnknownProbe(String);

/// The probes to run after an apply, with what they compare against.
pub struct Plan {
    probes: Vec<Probe>,
    gateway: Option<Ipv4Addr>,
}

/// Before the change: the gateway probe is kept only if the gateway answers now (a node whose
/// gateway never answers pings must not roll back every policy).
pub async fn before(probes: &[Probe]) -> Plan {
    let mut kept: Vec<Probe> = probes.to_vec();
    let mut gateway = None;
    if probes.contains(&Probe::Gateway) {
        match answering_gateway().await {
            Ok(gw) => gateway = Some(gw),
            Err(why) => {
                warn!("probe {} dropped: {}", Probe::Gateway, report(&why));
                kept.retain(|p| *p != Probe::Gateway);
            }
        }
    }
    Plan {
        probes: kept,
        gateway,
    }
}

/// The default gateway if it answers an echo now; otherwise why the gateway probe is dropped.
async fn answering_gateway() -> Result<Ipv4Addr> {
    let gw = default_gateway()
        .context("the node's routes could not be read")?
        .ok_or_else(|| {
            Error::Probe("no IPv4 default route through a gateway in the main table".to_string())
        })?;
    tokio::task::spawn_blocking(move || ping(gw, ATTEMPT))
        .await
        .with_context(|| format!("pinging the default gateway {gw}"))?
        .with_context(|| format!("the default gateway {gw} does not answer an echo"))?;
    Ok(gw)
}

impl Plan {
    pub fn probes(&self) -> &[Probe] {
        &self.probes
    }

    /// Runs every probe until it passes or `timeout` passed since the first; the first that
    /// fails is named with its last error.
    pub async fn run(&self, client: &Client, node: &str, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        for probe in &self.probes {
            let mut last;
            loop {
                let attempt = tokio::time::timeout(ATTEMPT, self.once(*probe, client, node)).await;
                last = match attempt {
                    Ok(Ok(())) => break,
                    Ok(Err(e)) => e,
                    Err(_) => Error::Probe(format!("no answer in {}s", ATTEMPT.as_secs())),
                };
                if Instant::now() + RETRY >= deadline {
                    return Err(Error::wrap(
                        format!("probe {probe} failed for {}s", timeout.as_secs()),
                        last,
                    ));
                }
                tokio::time::sleep(RETRY).await;
            }
        }
        Ok(())
    }

    async fn once(&self, probe: Probe, client: &Client, node: &str) -> Result<()> {
        match probe {
            Probe::Gateway => {
                let gw = self
                    .gateway
                    .ok_or_else(|| Error::Probe("no default gateway".to_string()))?;
                tokio::task::spawn_blocking(move || ping(gw, ATTEMPT))
                    .await?
                    .with_context(|| format!("ping {gw}"))
            }
            Probe::ApiServer => client
                .apiserver_version()
                .await
                .map(|_| ())
                .context("GET /version"),
            Probe::NodeReady => {
                let api: Api<Node> = Api::all(client.clone());
                let node = api
                    .get(node)
                    .await
                    .with_context(|| format!("GET node {node}"))?;
                let ready = node
                    .status
                    .and_then(|s| s.conditions)
                    .unwrap_or_default()
                    .into_iter()
                    .find(|c| c.type_ == "Ready");
                match ready {
                    Some(c) if c.status == "True" => Ok(()),
                    Some(c) => Err(Error::Probe(format!("node is not Ready ({})", c.status))),
                    None => Err(Error::Probe("node has no Ready condition".to_string())),
                }
            }
        }
    }
}

/// The IPv4 default route's gateway in the main table (`ip route show default`), in this
/// process's network namespace: the node's, since the handler runs on the host network. None
/// when there is no such route or it has no gateway.
pub fn default_gateway() -> cni_common::Result<Option<Ipv4Addr>> {
    let routes = Netlink::current()?.route_list_family(false)?;
    Ok(gateway_of(&routes))
}

fn gateway_of(routes: &[RouteInfo]) -> Option<Ipv4Addr> {
    routes
        .iter()
        .filter(|r| r.table == RT_TABLE_MAIN && r.dst.prefix() == 0)
        .find_map(|r| match r.gw {
            Some(IpAddr::V4(gw)) => Some(gw),
            _ => None,
        })
}

/// One ICMP echo to `to` over a raw socket (the handler is privileged), waiting up to `wait`.
pub fn ping(to: Ipv4Addr, wait: Duration) -> io::Result<()> {
    // SAFETY: plain socket calls on a descriptor this function owns and closes.
    let fd = unsafe {
        libc::socket(
            libc::AF_INET,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::IPPROTO_ICMP,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let socket = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let fd = std::os::fd::AsRawFd::as_raw_fd(&socket);
    // The raw socket sees every echo reply on the node: ours is told by an identifier and a
    // sequence number that change with every probe, and by its payload.
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default()
        ^ std::process::id();
    let (id, seq) = ((nonce >> 16) as u16, nonce as u16);
    let packet = echo_request(id, seq);
    let addr = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from(to).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: `addr` and `packet` outlive the call; the lengths are theirs.
    let sent = unsafe {
        libc::sendto(
            fd,
            packet.as_ptr().cast(),
            packet.len(),
            0,
            (&raw const addr).cast(),
            mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    let deadline = Instant::now() + wait;
    let mut buf = [0u8; 1500];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "no echo reply"));
        }
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = i32::try_from(left.as_millis()).unwrap_or(i32::MAX).max(1);
        // SAFETY: one pollfd, owned here.
        let ready = unsafe { libc::poll(&raw mut pfd, 1, ms) };
        if ready < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if ready == 0 {
            continue;
        }
        // SAFETY: `buf` is writable for its length.
        let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let reply = &buf[..usize::try_from(n).unwrap_or(0)];
        if is_echo_reply(reply, to, &packet) {
            return Ok(());
        }
    }
}

/// An ICMP echo request: type 8, code 0, checksum, identifier, sequence, a little payload.
fn echo_request(id: u16, seq: u16) -> Vec<u8> {
    let mut p = vec![8, 0, 0, 0];
    p.extend_from_slice(&id.to_be_bytes());
    p.extend_from_slice(&seq.to_be_bytes());
    p.extend_from_slice(b"nmstate-probe");
    let sum = checksum(&p);
    p[2..4].copy_from_slice(&sum.to_be_bytes());
    p
}

fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c.get(1).copied().unwrap_or(0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// A raw IPv4 socket hands over the IP header too: the source must be `from`, the ICMP type
/// an echo reply (0), and identifier, sequence and payload those of `request`.
fn is_echo_reply(packet: &[u8], from: Ipv4Addr, request: &[u8]) -> bool {
    let Some(first) = packet.first() else {
        return false;
    };
    let header = usize::from(first & 0x0f) * 4;
    let source = packet
        .get(12..16)
        .map(|s| Ipv4Addr::new(s[0], s[1], s[2], s[3]));
    let icmp = packet.get(header..);
    match (source, icmp) {
        (Some(source), Some(icmp)) if icmp.len() == request.len() => {
            source == from && icmp[0] == 0 && icmp[4..] == request[4..]
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests;
