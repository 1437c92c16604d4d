//! The Open_vSwitch database operations this plugin needs, each one transaction and each named
//! after the `ovs-vsctl` command it replaces.
//!
//! Ports and Interfaces are not root rows in the schema: removing a Port's UUID from its
//! Bridge's `ports` makes OVSDB delete the Port and its Interfaces, as `ovs-vsctl del-port` does.

use std::collections::BTreeMap;
use std::time::Duration;

use cni_common::{Code, Error, Result};
use ovsdb::{Client, Reply};
use serde_json::{json, Map, Value};

use crate::attachment::{KEY_ATTACHMENT, KEY_IFACE, KEY_NETNS, KEY_NETWORK, KEY_OWNER, OWNER};
use crate::vlan::PortVlan;

/// A port to create: the host veth as an OVS system interface.
#[derive(Debug, Clone)]
pub struct NewPort<'a> {
    pub bridge: &'a str,
    /// Port and Interface name (the host veth).
    pub name: &'a str,
    pub vlan: &'a PortVlan,
    pub external_ids: &'a BTreeMap<String, String>,
    /// `Interface.type`; None for an ordinary system interface.
    pub interface_type: Option<&'a str>,
    /// `Interface.external_ids:iface-id`, the OVN logical port.
    pub iface_id: Option<&'a str>,
    pub ofport_request: Option<u16>,
}

/// A Port row as this plugin reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortRow {
    pub uuid: String,
    pub name: String,
    /// None when the VLAN columns hold something this plugin never writes.
    pub vlan: Option<PortVlan>,
    pub interfaces: Vec<String>,
    pub external_ids: BTreeMap<String, String>,
}

impl PortRow {
    fn from_row(row: &Value) -> Option<PortRow> {
        Some(PortRow {
            uuid: row.get("_uuid").and_then(ovsdb::uuid_of)?.to_string(),
            name: row.get("name")?.as_str()?.to_string(),
            vlan: PortVlan::from_row(row),
            interfaces: row
                .get("interfaces")
                .map(ovsdb::set_items)
                .unwrap_or_default()
                .into_iter()
                .filter_map(ovsdb::uuid_of)
                .map(str::to_string)
                .collect(),
            external_ids: row
                .get("external_ids")
                .map(ovsdb::map_items)
                .unwrap_or_default(),
        })
    }

    /// `external_ids:cni-attachment`.
    pub fn attachment(&self) -> Option<&str> {
        self.external_ids.get(KEY_ATTACHMENT).map(String::as_str)
    }

    /// Made by this plugin (it has `cni-attachment`), not by ovs-cni.
    pub fn made_by_us(&self) -> bool {
        self.attachment().is_some()
    }
}

/// An Interface row as CHECK reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfaceRow {
    pub uuid: String,
    pub name: String,
    /// Set by ovs-vswitchd when it cannot use the interface (e.g. the device is gone).
    pub error: Option<String>,
}

const PORT_COLUMNS: [&str; 7] = [
    "_uuid",
    "name",
    "vlan_mode",
    "tag",
    "trunks",
    "interfaces",
    "external_ids",
];

/// An OVSDB error as a CNI error: a server that cannot be reached or stopped answering is code
/// 11 (try again later; OVS restarting is the usual cause), anything else a system error.
pub fn cni_error(e: ovsdb::Error) -> Error {
    if e.is_transient() {
        Error::new(Code::TryAgainLater, e.report())
    } else {
        Error::system(e.report())
    }
}

fn transact(ovs: &mut Client, ops: &[Value], extra: Duration) -> Result<Reply> {
    ovs.transact(ops, extra).map_err(cni_error)
}

/// The per-operation results of a transaction that committed; else its failure, as `doing`'s.
fn committed(reply: Reply, doing: &str) -> Result<Vec<Value>> {
    reply.into_results(doing).map_err(cni_error)
}

fn name_is(name: &str) -> Value {
    json!([["name", "==", name]])
}

/// `where` clause: Ports whose `external_ids` include every pair of `ids`.
fn external_ids_include(ids: &[(&str, &str)]) -> Value {
    let ids: BTreeMap<String, String> = ids
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    json!([["external_ids", "includes", ovsdb::map(&ids)]])
}

/// Fails the transaction unless bridge `name` exists.
fn wait_bridge(name: &str) -> Value {
    json!({
        "op": "wait", "timeout": 0, "table": "Bridge", "where": name_is(name),
        "columns": ["name"], "until": "==", "rows": [{"name": name}]
    })
}

fn select(table: &str, r#where: Value, columns: &[&str]) -> Value {
    json!({"op": "select", "table": table, "where": r#where, "columns": columns})
}

/// `ovs-vsctl add-port <bridge> <name> -- set Port <name> <vlan> external_ids:... -- set
/// Interface <name> ...`, as one transaction that fails cleanly when the bridge is missing.
/// Returns the new Port's UUID.
pub fn add_port(ovs: &mut Client, port: &NewPort) -> Result<String> {
    let mut iface = Map::new();
    iface.insert("name".into(), json!(port.name));
    if let Some(t) = port.interface_type {
        iface.insert("type".into(), json!(t));
    }
    if let Some(id) = port.iface_id {
        let ids: BTreeMap<String, String> = [("iface-id".to_string(), id.to_string())].into();
        iface.insert("external_ids".into(), ovsdb::map(&ids));
    }
    if let Some(n) = port.ofport_request {
        iface.insert("ofport_request".into(), json!(n));
    }
    let mut row = Map::new();
    row.insert("name".into(), json!(port.name));
    row.insert("interfaces".into(), ovsdb::named_uuid("iface"));
    row.insert("external_ids".into(), ovsdb::map(port.external_ids));
    for (col, value) in port.vlan.columns() {
        row.insert(col.into(), value);
    }
    let ops = [
        wait_bridge(port.bridge),
        json!({"op": "insert", "table": "Interface", "row": iface, "uuid-name": "iface"}),
        json!({"op": "insert", "table": "Port", "row": row, "uuid-name": "port"}),
        json!({
            "op": "mutate", "table": "Bridge", "where": name_is(port.bridge),
            "mutations": [["ports", "insert", ovsdb::set([ovsdb::named_uuid("port")])]]
        }),
    ];
    let doing = format!("ovs-vsctl add-port {} {}", port.bridge, port.name);
    let reply = transact(ovs, &ops, Duration::ZERO)?;
    match reply.failure() {
        Some(f) if f.index == 0 => {
            return Err(Error::system(format!(
                "{doing}: bridge {:?} does not exist in OVSDB at {}",
                port.bridge,
                ovs.endpoint()
            )))
        }
        Some(f) if f.error == "constraint violation" => {
            return Err(Error::system(format!(
                "{doing}: a port or interface named {} already exists ({})",
                port.name, f.details
            )))
        }
        _ => {}
    }
    let results = committed(reply, &doing)?;
    results
        .get(2)
        .and_then(|r| r.get("uuid"))
        .and_then(ovsdb::uuid_of)
        .map(str::to_string)
        .ok_or_else(|| Error::system(format!("{doing}: OVSDB did not return the port's UUID")))
}

/// `ovs-vsctl del-port` for each of `ports` (by UUID), in one transaction; a port that is
/// already gone is not an error.
pub fn del_ports(ovs: &mut Client, ports: &[&str]) -> Result<()> {
    if ports.is_empty() {
        return Ok(());
    }
    let ops: Vec<Value> = ports
        .iter()
        .map(|id| {
            json!({
                "op": "mutate", "table": "Bridge",
                "where": [["ports", "includes", ovsdb::set([ovsdb::uuid(id)])]],
                "mutations": [["ports", "delete", ovsdb::set([ovsdb::uuid(id)])]]
            })
        })
        .collect();
    committed(transact(ovs, &ops, Duration::ZERO)?, "ovs-vsctl del-port").map(drop)
}

/// The Ports of one attachment, in one transaction: this plugin's (`ovs-vsctl find Port
/// external_ids:cni-attachment=<id>`, whatever their owner, so earlier versions' ports too) and,
/// when `netns` is known, the one ovs-cni made for the same interface (`ovs-vsctl find Port
/// external_ids:owner=ovs-cni.network.kubevirt.io external_ids:contNetns=<netns>
/// external_ids:contIface=<ifname>`, the lookup ovs-cni's DEL does). Each port once.
pub fn find_ports(
    ovs: &mut Client,
    attachment: &str,
    netns: &str,
    ifname: &str,
) -> Result<Vec<PortRow>> {
    let mut ops = vec![select(
        "Port",
        external_ids_include(&[(KEY_ATTACHMENT, attachment)]),
        &PORT_COLUMNS,
    )];
    if !netns.is_empty() {
        ops.push(select(
            "Port",
            external_ids_include(&[(KEY_OWNER, OWNER), (KEY_NETNS, netns), (KEY_IFACE, ifname)]),
            &PORT_COLUMNS,
        ));
    }
    let results = committed(transact(ovs, &ops, Duration::ZERO)?, "ovs-vsctl find Port")?;
    let mut ports: Vec<PortRow> = Vec::new();
    for port in results
        .iter()
        .take(ops.len())
        .flat_map(ovsdb::rows)
        .filter_map(PortRow::from_row)
    {
        if !ports.iter().any(|p| p.uuid == port.uuid) {
            ports.push(port);
        }
    }
    Ok(ports)
}

/// This plugin's ports of `network` (`ovs-vsctl find Port external_ids:cni-network=<network>`),
/// whichever bridge they are on.
pub fn list_ports(ovs: &mut Client, network: &str) -> Result<Vec<PortRow>> {
    let filter = external_ids_include(&[(KEY_NETWORK, network)]);
    let ops = [select("Port", filter, &PORT_COLUMNS)];
    let results = committed(transact(ovs, &ops, Duration::ZERO)?, "ovs-vsctl find Port")?;
    Ok(results
        .first()
        .map(ovsdb::rows)
        .unwrap_or_default()
        .iter()
        .filter_map(PortRow::from_row)
        .collect())
}

/// The ports on `bridge` owned by ovs-cni or this plugin (`owner=ovs-cni.network.kubevirt.io`):
/// the ones among them whose device is gone are what ovs-cni's cleanup removes.
pub fn owned_ports_on(ovs: &mut Client, bridge: &str) -> Result<Vec<PortRow>> {
    let ops = [
        select("Bridge", name_is(bridge), &["ports"]),
        select(
            "Port",
            external_ids_include(&[(KEY_OWNER, OWNER)]),
            &PORT_COLUMNS,
        ),
    ];
    let results = committed(transact(ovs, &ops, Duration::ZERO)?, "ovs-vsctl list-ports")?;
    let on_bridge = results
        .first()
        .map(ovsdb::rows)
        .unwrap_or_default()
        .first()
        .map(uuids_of_ports)
        .unwrap_or_default();
    Ok(results
        .get(1)
        .map(ovsdb::rows)
        .unwrap_or_default()
        .iter()
        .filter_map(PortRow::from_row)
        .filter(|p| on_bridge.contains(&p.uuid))
        .collect())
}

fn uuids_of_ports(bridge_row: &Value) -> Vec<String> {
    bridge_row
        .get("ports")
        .map(ovsdb::set_items)
        .unwrap_or_default()
        .into_iter()
        .filter_map(ovsdb::uuid_of)
        .map(str::to_string)
        .collect()
}

/// `ovs-vsctl br-exists <bridge>`.
pub fn br_exists(ovs: &mut Client, bridge: &str) -> Result<bool> {
    let ops = [select("Bridge", name_is(bridge), &["name"])];
    let results = committed(transact(ovs, &ops, Duration::ZERO)?, "ovs-vsctl br-exists")?;
    Ok(!results
        .first()
        .map(ovsdb::rows)
        .unwrap_or_default()
        .is_empty())
}

/// `ovs-vsctl --timeout=T wait-until Interface <name> link_state=up`: ovsdb-server holds the
/// transaction until ovs-vswitchd reports the link up, so nothing is polled from here.
pub fn wait_until_link_up(ovs: &mut Client, iface: &str, timeout: Duration) -> Result<()> {
    let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
    let ops = [json!({
        "op": "wait", "timeout": ms, "table": "Interface", "where": name_is(iface),
        "columns": ["link_state"], "until": "==", "rows": [{"link_state": "up"}]
    })];
    let reply = transact(ovs, &ops, timeout)?;
    if reply.failure().is_some() {
        return Err(Error::system(format!(
            "OVS did not report interface {iface} up within {} ms \
             (link_state_check_retries x link_state_check_interval)",
            timeout.as_millis()
        )));
    }
    committed(reply, "ovs-vsctl wait-until").map(drop)
}

/// What CHECK compares with the config.
#[derive(Debug, Clone, Default)]
pub struct PortView {
    /// The attachment's ports: this plugin's when there are any, else the one ovs-cni made
    /// (one, unless something went wrong).
    pub ports: Vec<PortRow>,
    /// The configured bridge's ports; None when the bridge does not exist.
    pub bridge_ports: Option<Vec<String>>,
    /// The Interface named after the first port.
    pub interface: Option<InterfaceRow>,
}

/// `ovs-vsctl find Port ... -- list Bridge <bridge>`, then `list Interface <port>`.
pub fn show_port(
    ovs: &mut Client,
    attachment: &str,
    netns: &str,
    ifname: &str,
    bridge: &str,
) -> Result<PortView> {
    let found = find_ports(ovs, attachment, netns, ifname)?;
    let ours: Vec<PortRow> = found.iter().filter(|p| p.made_by_us()).cloned().collect();
    let ports = if ours.is_empty() { found } else { ours };
    let mut ops = vec![select("Bridge", name_is(bridge), &["ports"])];
    if let Some(port) = ports.first() {
        ops.push(select(
            "Interface",
            name_is(&port.name),
            &["_uuid", "name", "error"],
        ));
    }
    let results = committed(
        transact(ovs, &ops, Duration::ZERO)?,
        "ovs-vsctl list Bridge",
    )?;
    let rows = |i: usize| results.get(i).map(ovsdb::rows).unwrap_or_default();
    let bridge_ports = rows(0).first().map(uuids_of_ports);
    let interface = rows(1).first().and_then(|r| {
        Some(InterfaceRow {
            uuid: r.get("_uuid").and_then(ovsdb::uuid_of)?.to_string(),
            name: r.get("name")?.as_str()?.to_string(),
            error: r
                .get("error")
                .map(ovsdb::set_items)
                .unwrap_or_default()
                .first()
                .and_then(|v| v.as_str())
                .map(str::to_string),
        })
    });
    Ok(PortView {
        ports,
        bridge_ports,
        interface,
    })
}
