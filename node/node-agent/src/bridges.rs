//! The bridges that exist on the node: Linux bridges from a netlink dump (the DaemonSet runs in
//! the host's network namespace), Open vSwitch bridges from the `Bridge` table of OVSDB.

use std::collections::BTreeSet;
use std::time::Duration;

use cni_common::netlink::Netlink;
use ovsdb::{Client, Endpoint};
use serde_json::json;

use crate::error::{Context, Error, Result};
use crate::marker::Mark;

/// Bounds each OVSDB connect and request.
const OVSDB_TIMEOUT: Duration = Duration::from_secs(5);

/// `ip link show type bridge`: names of the Linux bridges in `nl`'s namespace.
pub fn linux_bridges(nl: &Netlink) -> Result<BTreeSet<String>> {
    Ok(nl
        .link_list_kind("bridge")
        .context("listing Linux bridges")?
        .into_iter()
        .map(|l| l.name)
        .collect())
}

/// `ovs-vsctl list-br`: the `name` of every row of table `Bridge`.
pub fn ovs_bridges(ovs: &mut Client) -> Result<BTreeSet<String>> {
    let ops = [json!({"op": "select", "table": "Bridge", "where": [], "columns": ["name"]})];
    let results = ovs
        .transact(&ops, Duration::ZERO)
        .and_then(|r| r.into_results("ovs-vsctl list-br"))
        .with_context(|| format!("listing Open vSwitch bridges at {}", ovs.endpoint()))?;
    let rows = results.first().map(ovsdb::rows).unwrap_or_default();
    let mut names = BTreeSet::new();
    for row in rows {
        match row.get("name").and_then(|n| n.as_str()) {
            Some(name) => names.insert(name.to_string()),
            None => {
                return Err(Error::msg(format!(
                    "OVSDB at {}: a Bridge row without a name: {row}",
                    ovs.endpoint()
                )))
            }
        };
    }
    Ok(names)
}

/// Where one kind of bridge is listed from.
pub enum Source {
    /// A netlink socket in the namespace the agent started in.
    Linux(Netlink),
    /// OVSDB, connected afresh each round: OVS restarts must not need ours.
    Ovs(Endpoint),
}

impl Source {
    /// `ovsdb` is the OVSDB endpoint (`unix:PATH` or `tcp:IP:PORT`), used for [`Mark::Ovs`].
    pub fn open(mark: Mark, ovsdb: &str) -> Result<Source> {
        match mark {
            Mark::LinuxBridge => Ok(Source::Linux(
                Netlink::current().context("opening a netlink socket")?,
            )),
            Mark::Ovs => Ok(Source::Ovs(Endpoint::parse(ovsdb).context("--ovsdb")?)),
        }
    }

    pub fn list(&self) -> Result<BTreeSet<String>> {
        match self {
            Source::Linux(nl) => linux_bridges(nl),
            Source::Ovs(endpoint) => {
                // Its error names the endpoint already.
                let mut client = Client::connect(endpoint, OVSDB_TIMEOUT)?;
                ovs_bridges(&mut client)
            }
        }
    }
}
