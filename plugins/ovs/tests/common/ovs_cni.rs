//! What ovs-cni does, step by step, against a test's own Open vSwitch: the links, OVSDB rows and
//! cache file its ADD leaves (veth path, ovs-cni's pkg/veth, pkg/ovsdb and pkg/utils), its DEL,
//! which reads that cache file and looks the port up by `external_ids`, and its cleanup of the
//! ports whose interface OVS reports in error. The OVSDB operations are the ones ovs-cni sends.

use std::path::Path;
use std::time::Duration;

use ovsdb::Client;
use serde_json::{json, Value};

use super::{OvsNode, PluginNode, Pod, BRIDGE, IFNAME};

pub const OWNER: &str = "ovs-cni.network.kubevirt.io";

/// An attachment ovs-cni made.
pub struct GoAttachment {
    /// The host veth: `veth` and 8 random hex digits, also the Port and Interface name.
    pub port: String,
    pub host_mac: String,
    pub container_mac: String,
}

/// ovs-cni's ADD of an L2 attachment (no IPAM) on `br0` with `vlan` (an access port) or none (a
/// trunk of every VLAN): the cache file first, then the veth created from the pod's side with
/// both ends up, then one transaction inserting the Interface and the Port and adding the Port
/// to the bridge.
pub fn add(node: &OvsNode, pod: &Pod, vlan: Option<u16>, pod_uid: &str) -> GoAttachment {
    let conf = node.config(match vlan {
        Some(v) => json!({"vlan": v}),
        None => json!({}),
    });
    write_cache(node, &pod.container_id, &conf, false);

    let port = random_veth_name();
    node.add_veth(&port, pod);
    node.host
        .netns()
        .exec_ok("ip", &["link", "set", &port, "up"]);
    pod.ns.exec_ok("ip", &["link", "set", IFNAME, "up"]);

    let iface_name = format!("Intf{port}");
    let mut row = json!({
        "name": port,
        "interfaces": ["set", [["named-uuid", iface_name]]],
        "external_ids": ["map", [
            ["contPodUid", pod_uid],
            ["contNetns", pod.ns.path_str()],
            ["contIface", IFNAME],
            ["owner", OWNER],
        ]],
    });
    match vlan {
        Some(tag) => {
            row["vlan_mode"] = json!("access");
            row["tag"] = json!(tag);
        }
        None => row["vlan_mode"] = json!("trunk"),
    }
    let ops = [
        json!({"op": "insert", "table": "Interface", "row": {"name": port},
               "uuid-name": iface_name}),
        json!({"op": "insert", "table": "Port", "row": row, "uuid-name": port}),
        json!({"op": "mutate", "table": "Bridge", "where": [["name", "==", BRIDGE]],
               "mutations": [["ports", "insert", ["set", [["named-uuid", port]]]]]}),
    ];
    transact(&mut node.ovsdb(), &ops).expect("ovs-cni's CreatePort");
    let host_mac = node
        .host
        .link(&port)
        .and_then(|l| l.mac())
        .expect("host veth");
    let container_mac = pod.link().and_then(|l| l.mac()).expect("container veth");
    GoAttachment {
        port,
        host_mac,
        container_mac,
    }
}

/// The cache file ovs-cni's ADD writes for `conf` (its NetConf as Go encodes it once loaded),
/// in the current directory or the old `/tmp/ovscache`.
pub fn write_cache(node: &OvsNode, container_id: &str, conf: &Value, old: bool) {
    let netconf = json!({
        "cniVersion": conf["cniVersion"],
        "name": conf["name"],
        "type": "ovs",
        "ipam": {},
        "dns": {},
        "bridge": conf["bridge"],
        "vlan": conf.get("vlan").cloned().unwrap_or(Value::Null),
        "mtu": 0,
        "deviceID": "",
        "ofport_request": 0,
        "interface_type": "",
        "configuration_path": "",
        "socket_file": conf["socket_file"],
        "link_state_check_retries": 5,
        "link_state_check_interval": 600,
    });
    let entry = json!({"Netconf": netconf, "OrigIfName": "", "UserspaceMode": false,
                       "VdpaType": ""});
    let path = node.cache_file(container_id, old);
    let dir = path.parent().expect("cache dir");
    std::fs::create_dir_all(dir).expect("create ovs-cni's cache dir");
    std::fs::write(&path, entry.to_string()).expect("write ovs-cni's cache file");
}

/// ovs-cni's DEL (IPAM aside) of `container_id`'s `IFNAME` in `netns`: without its cache file,
/// nothing at all. Otherwise the port found by `external_ids` including contNetns, contIface
/// and owner (none found is fine), removed the way its DeletePort does; the container
/// interface deleted, or the host veth when the namespace or the interface is gone; else its
/// cleanup of ports in error; and the cache file removed from both directories.
pub fn del(node: &OvsNode, container_id: &str, netns: &str) -> Result<(), String> {
    let path = node.cache_file(container_id, false);
    let old = node.cache_file(container_id, true);
    let Ok(text) = std::fs::read(&path).or_else(|_| std::fs::read(&old)) else {
        return Ok(());
    };
    let cache: Value = serde_json::from_slice(&text).expect("a cache file is JSON");
    let bridge = cache["Netconf"]["bridge"]
        .as_str()
        .ok_or("no bridge in the cache")?
        .to_string();
    let mut ovs = node.ovsdb();
    if netns.is_empty() {
        clean_ports_with(&mut ovs, &bridge);
    } else {
        let found = select(
            &mut ovs,
            "Port",
            json!([[
                "external_ids",
                "includes",
                [
                    "map",
                    [
                        ["contNetns", netns],
                        ["contIface", IFNAME],
                        ["owner", OWNER]
                    ]
                ]
            ]]),
        )?;
        if found.len() > 1 {
            return Err(format!("{} ports for the interface", found.len()));
        }
        let port = found
            .first()
            .and_then(|r| r["name"].as_str())
            .map(str::to_string);
        if let Some(port) = &port {
            delete_port(&mut ovs, &bridge, port)?;
        }
        let gone = !Path::new(netns).exists()
            || !std::process::Command::new("ip")
                .args(["-n", &ns_name(netns), "link", "del", IFNAME])
                .output()
                .is_ok_and(|o| o.status.success());
        if gone {
            if let Some(port) = &port {
                node.host.netns().exec("ip", &["link", "del", port]);
            }
        } else {
            clean_ports_with(&mut ovs, &bridge);
        }
    }
    for file in [path, old] {
        let _ = std::fs::remove_file(file);
    }
    Ok(())
}

/// ovs-cni's CleanPorts: every Interface OVS reports in error loses its port, through
/// DeletePort (which refuses ports of other owners).
pub fn clean_ports(node: &OvsNode) {
    clean_ports_with(&mut node.ovsdb(), BRIDGE);
}

fn clean_ports_with(ovs: &mut Client, bridge: &str) {
    let ifaces = select(ovs, "Interface", json!([])).expect("select Interface");
    for iface in ifaces {
        let in_error = iface["error"].as_str().is_some_and(|e| !e.is_empty());
        if let (true, Some(name)) = (in_error, iface["name"].as_str()) {
            let _ = delete_port(ovs, bridge, name);
        }
    }
}

/// ovs-cni's DeletePort: the Port named `name` (exactly one), only if its owner is ovs-cni's;
/// then delete the Interface and the Port by name and take the Port off the bridge.
fn delete_port(ovs: &mut Client, bridge: &str, name: &str) -> Result<(), String> {
    let rows = select(ovs, "Port", json!([["name", "==", name]]))?;
    let [row] = rows.as_slice() else {
        return Err("failed to find object from table Port".to_string());
    };
    let ids = ovsdb::map_items(&row["external_ids"]);
    if ids.get("owner").map(String::as_str) != Some(OWNER) {
        return Err("port not created by ovs-cni".to_string());
    }
    let uuid = ovsdb::uuid_of(&row["_uuid"]).ok_or("no _uuid")?;
    let ops = [
        json!({"op": "delete", "table": "Interface", "where": [["name", "==", name]]}),
        json!({"op": "delete", "table": "Port", "where": [["name", "==", name]]}),
        json!({"op": "mutate", "table": "Bridge", "where": [["name", "==", bridge]],
               "mutations": [["ports", "delete", ["set", [["uuid", uuid]]]]]}),
    ];
    transact(ovs, &ops)
}

fn select(ovs: &mut Client, table: &str, r#where: Value) -> Result<Vec<Value>, String> {
    let ops = [json!({"op": "select", "table": table, "where": r#where})];
    let results = ovs
        .transact(&ops, Duration::ZERO)
        .and_then(|r| r.into_results("select"))
        .map_err(|e| e.report())?;
    Ok(ovsdb::rows(&results[0]).to_vec())
}

fn transact(ovs: &mut Client, ops: &[Value]) -> Result<(), String> {
    ovs.transact(ops, Duration::ZERO)
        .and_then(|r| r.into_results("transact"))
        .map(drop)
        .map_err(|e| e.report())
}

/// The name of a namespace under /var/run/netns (tests' namespaces are all there).
fn ns_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `veth` and 8 hex digits, as the CNI library names a random host veth.
fn random_veth_name() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mix = nanos ^ std::process::id().rotate_left(16) ^ N.fetch_add(1, Ordering::Relaxed) << 8;
    format!("veth{mix:08x}")
}

/// ovs-cni's CHECK (veth path) of `IFNAME` in `pod` for `conf`, whose `prevResult` is the ADD's
/// result: its cache file must exist and agree with `conf` on the bridge, `socket_file`, the
/// IPAM type and `deviceID`; every prevResult interface but `IFNAME` must be a host veth with
/// its MAC; `IFNAME` in the pod a veth with its MAC, holding the prevResult's addresses; OVS
/// must have the bridge, no error on the host interface, and the port's `vlan_mode`, `tag` and
/// `trunks` as ovs-cni would make them for `conf`.
pub fn check(node: &OvsNode, pod: &Pod, conf: &Value) -> Result<(), String> {
    let text = std::fs::read(node.cache_file(&pod.container_id, false))
        .map_err(|e| format!("error reading cached NetConf: {e}"))?;
    let cache: Value = serde_json::from_slice(&text).expect("a cache file is JSON");
    let cached = &cache["Netconf"];
    let text_of = |v: &Value| v.as_str().unwrap_or_default().to_string();
    for (key, want) in [
        ("bridge", text_of(&conf["bridge"])),
        ("socket_file", text_of(&conf["socket_file"])),
        ("deviceID", text_of(&conf["deviceID"])),
    ] {
        if text_of(&cached[key]) != want {
            return Err(format!(
                "{key} mismatch: cache {}, netconf {want}",
                cached[key]
            ));
        }
    }
    if text_of(&cached["ipam"]["type"]) != text_of(&conf["ipam"]["type"]) {
        return Err("IPAM mismatch".to_string());
    }

    let prev = &conf["prevResult"];
    let mut host = None;
    for iface in prev["interfaces"]
        .as_array()
        .ok_or("no interfaces in prevResult")?
    {
        let name = text_of(&iface["name"]);
        let (link, is_container) = if name == IFNAME {
            if iface["sandbox"] != json!(pod.ns.path_str()) {
                continue;
            }
            (pod.ns.link(&name), true)
        } else {
            (node.host.link(&name), false)
        };
        let link = link.ok_or(format!("interface {name} not found"))?;
        if link.kind() != Some("veth") {
            return Err(format!("interface {name} is not a veth"));
        }
        let mac = text_of(&iface["mac"]);
        if !mac.is_empty() && link.mac().as_deref() != Some(mac.as_str()) {
            return Err(format!(
                "interface {name} has mac {:?}, not {mac}",
                link.mac()
            ));
        }
        if !is_container {
            host = Some(name);
        }
    }
    let addresses = pod.ns.addresses(IFNAME);
    for ip in prev["ips"].as_array().into_iter().flatten() {
        let address = text_of(&ip["address"]);
        if !addresses.contains(&address) {
            return Err(format!("{IFNAME} lacks {address}: {addresses:?}"));
        }
    }

    let host = host.ok_or("no host interface in prevResult")?;
    let mut ovs = node.ovsdb();
    let bridge = text_of(&conf["bridge"]);
    if select(&mut ovs, "Bridge", json!([["name", "==", bridge]]))?.len() != 1 {
        return Err(format!("bridge {bridge} is not found"));
    }
    let iface = select(&mut ovs, "Interface", json!([["name", "==", host]]))?;
    let error = iface
        .first()
        .map(|i| i["error"].clone())
        .unwrap_or(Value::Null);
    if error.as_str().is_some_and(|e| !e.is_empty()) {
        return Err(format!("interface {host} is in error state"));
    }
    let port = select(&mut ovs, "Port", json!([["name", "==", host]]))?;
    let port = port.first().ok_or(format!("no port {host}"))?;
    let ints = |v: &Value| -> Vec<u64> {
        ovsdb::set_items(v)
            .into_iter()
            .filter_map(Value::as_u64)
            .collect()
    };
    let mode = ovsdb::set_items(&port["vlan_mode"])
        .first()
        .and_then(|m| m.as_str())
        .unwrap_or_default()
        .to_string();
    let tag = ints(&port["tag"]);
    let mut trunks = ints(&port["trunks"]);
    trunks.sort_unstable();
    match conf["vlan"].as_u64() {
        None if !tag.is_empty() => {
            return Err(format!("vlan tag mismatch. ovs={tag:?},netconf=nil"))
        }
        None => {}
        Some(v) if tag != [v] => return Err(format!("vlan tag mismatch. ovs={tag:?},netconf={v}")),
        Some(_) if mode != "access" => return Err(format!("vlan mode mismatch: {mode}")),
        Some(_) => {}
    }
    let mut want: Vec<u64> = Vec::new();
    for t in conf["trunk"].as_array().into_iter().flatten() {
        if let (Some(min), Some(max)) = (t["minID"].as_u64(), t["maxID"].as_u64()) {
            want.extend(min..=max);
        }
        if let Some(id) = t["id"].as_u64() {
            want.push(id);
        }
    }
    want.sort_unstable();
    want.dedup();
    if trunks != want {
        return Err(format!("trunk mismatch. ovs={trunks:?},netconf={want:?}"));
    }
    if !want.is_empty() && mode != "trunk" {
        return Err(format!("vlan mode mismatch: {mode}"));
    }
    Ok(())
}
